#!/usr/bin/env bash
# Calibration row W15 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/0b45cce58c7efad427c8755cb826b7b878e812a4/examples/train/rlhf/simpo.sh
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=2 nodes=1
nproc_per_node=2

CUDA_VISIBLE_DEVICES=0,1 \
NPROC_PER_NODE=$nproc_per_node \
swift rlhf \
    --rlhf_type simpo \
    --model Qwen/Qwen2.5-3B-Instruct \
    --train_type full \
    --dataset hjh0119/shareAI-Llama3-DPO-zh-en-emoji \
    --torch_dtype bfloat16 \
    --num_train_epochs 1 \
    --per_device_train_batch_size 1 \
    --per_device_eval_batch_size 1 \
    --learning_rate 1e-5 \
    --gradient_accumulation_steps $(expr 16 / $nproc_per_node) \
    --max_length 2048 \
    --output_dir output \
    --dataloader_num_workers 4 \
    --deepspeed zero2 \
    --dataset_num_proc 4
