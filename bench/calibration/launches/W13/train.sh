#!/usr/bin/env bash
# Calibration row W13 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/376640797e1309935f5cccddb9fa2a68e0e575f8/examples/train/multi-gpu/fsdp2_lora/train.sh
# The example's --config_file path ./examples/train/multi-gpu/fsdp2_lora/fsdp2.json points at the copy in this
# folder.
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=2 nodes=1
nproc_per_node=2

CUDA_VISIBLE_DEVICES=0,1 \
accelerate launch --config_file fsdp2.json \
    swift/cli/sft.py \
    --model Qwen/Qwen2.5-7B-Instruct \
    --train_type lora \
    --dataset 'swift/self-cognition#1000' \
    --torch_dtype bfloat16 \
    --num_train_epochs 1 \
    --per_device_train_batch_size 1 \
    --per_device_eval_batch_size 1 \
    --learning_rate 1e-4 \
    --lora_rank 8 \
    --lora_alpha 32 \
    --gradient_checkpointing false \
    --weight_decay 0.1 \
    --target_modules all-linear \
    --gradient_accumulation_steps $(expr 16 / $nproc_per_node) \
    --max_length 2048 \
    --output_dir output \
    --system 'You are a helpful assistant.' \
    --dataloader_num_workers 4 \
    --model_author swift \
    --model_name swift-robot
