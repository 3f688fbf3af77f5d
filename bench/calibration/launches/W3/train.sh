#!/usr/bin/env bash
# Calibration row W3 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/8ae0ade71ab22e29ddde29053b3092ccece5785a/examples/train/rlhf/dpo/full.sh
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=4 nodes=1
NPROC_PER_NODE=4 \
CUDA_VISIBLE_DEVICES=0,1,2,3 \
swift rlhf \
    --rlhf_type dpo \
    --model Qwen/Qwen2.5-7B-Instruct \
    --train_type full \
    --dataset hjh0119/shareAI-Llama3-DPO-zh-en-emoji \
    --split_dataset_ratio 0.01 \
    --torch_dtype bfloat16 \
    --num_train_epochs 1 \
    --per_device_train_batch_size 4 \
    --per_device_eval_batch_size 4 \
    --learning_rate 1e-5 \
    --gradient_accumulation_steps 1 \
    --max_length 8192 \
    --output_dir output \
    --save_only_model true \
    --dataloader_num_workers 4 \
    --dataset_num_proc 4 \
    --deepspeed zero3 \
    --attn_impl flash_attn \
    --rpo_alpha 0.1 \
    --padding_free true
