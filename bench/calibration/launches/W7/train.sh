#!/usr/bin/env bash
# Calibration row W7 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/7b709960f24895212b7df92976d42b7baa633fa0/examples/train/liger/sft.sh
# The note's run without use_liger_kernel: the example's launch less --use_liger_kernel true.
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=4 nodes=1
NPROC_PER_NODE=4 \
CUDA_VISIBLE_DEVICES=0,1,2,3 \
swift sft \
    --model Qwen/Qwen2.5-7B \
    --train_type full \
    --dataset 'liucong/Chinese-DeepSeek-R1-Distill-data-110k-SFT#10000' \
    --torch_dtype bfloat16 \
    --per_device_train_batch_size 1 \
    --per_device_eval_batch_size 1 \
    --learning_rate 1e-5 \
    --num_train_epochs 5 \
    --gradient_accumulation_steps 2 \
    --max_length 8192 \
    --dataloader_num_workers 8 \
    --dataset_num_proc 8 \
    --save_only_model true \
    --output_dir output/Qwen2.5-7B \
    --deepspeed zero3 \
    --attn_impl flash_attn \
    --packing true
