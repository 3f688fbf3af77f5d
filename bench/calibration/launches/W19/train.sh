#!/usr/bin/env bash
# Calibration row W19 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/fa05a1e9fd627da125bce9df3e950404f61b097b/examples/models/qwen3_next/transformers.sh
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=4 nodes=1
CUDA_VISIBLE_DEVICES=0,1,2,3 \
swift sft \
    --model Qwen/Qwen3-Next-80B-A3B-Instruct \
    --train_type lora \
    --dataset 'swift/self-cognition#1000' \
    --torch_dtype bfloat16 \
    --num_train_epochs 1 \
    --per_device_train_batch_size 1 \
    --per_device_eval_batch_size 1 \
    --learning_rate 1e-4 \
    --lora_rank 8 \
    --lora_alpha 32 \
    --target_modules all-linear \
    --router_aux_loss_coef 1e-3 \
    --gradient_accumulation_steps 2 \
    --max_length 2048 \
    --output_dir output \
    --dataloader_num_workers 4 \
    --model_author swift \
    --model_name swift-robot
