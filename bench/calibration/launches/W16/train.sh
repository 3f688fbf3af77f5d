#!/usr/bin/env bash
# Calibration row W16 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/918a330b9d40329a517dee03f858e9dd1d7ff3ca/examples/models/gpt_oss/train.sh
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=1 nodes=1
CUDA_VISIBLE_DEVICES=0 \
swift sft \
    --model openai-mirror/gpt-oss-20b \
    --train_type lora \
    --dataset 'AI-ModelScope/alpaca-gpt4-data-zh#500' \
              'AI-ModelScope/alpaca-gpt4-data-en#500' \
              'swift/self-cognition#500' \
    --torch_dtype bfloat16 \
    --num_train_epochs 1 \
    --per_device_train_batch_size 1 \
    --per_device_eval_batch_size 1 \
    --router_aux_loss_coef 1e-3 \
    --learning_rate 1e-4 \
    --lora_rank 8 \
    --lora_alpha 32 \
    --target_modules all-linear \
    --gradient_accumulation_steps 16 \
    --max_length 2048 \
    --output_dir output \
    --dataloader_num_workers 4 \
    --model_author swift \
    --model_name swift-robot
