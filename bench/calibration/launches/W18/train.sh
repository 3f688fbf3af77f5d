#!/usr/bin/env bash
# Calibration row W18 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/9d297f99a9eb2488293caa09dccbe3ded2534170/examples/train/megatron/benchmark/deepspeed.sh
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 nodes=1
NPROC_PER_NODE=8 \
CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \
swift sft \
    --model Qwen/Qwen2.5-14B \
    --train_type full \
    --dataset 'liucong/Chinese-DeepSeek-R1-Distill-data-110k-SFT' \
    --torch_dtype bfloat16 \
    --max_steps 2000 \
    --per_device_train_batch_size 1 \
    --per_device_eval_batch_size 1 \
    --learning_rate 1e-5 \
    --gradient_accumulation_steps 2 \
    --packing true \
    --max_length 8192 \
    --dataloader_num_workers 8 \
    --dataset_num_proc 8 \
    --save_only_model true \
    --output_dir output/Qwen2.5-14B \
    --deepspeed zero2 \
    --attn_impl flash_attn
