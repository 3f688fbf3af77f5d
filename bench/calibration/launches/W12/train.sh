#!/usr/bin/env bash
# Calibration row W12 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/223378d6dd9986ff8952f009d7b169473c55a9a8/examples/train/sequence_parallel/sequence_parallel.sh
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 nodes=1
NPROC_PER_NODE=8 \
CELOSS_PARALLEL_SIZE=2048 \
swift sft \
    --model Qwen/Qwen2.5-3B-Instruct \
    --dataset 'AI-ModelScope/LongAlpaca-12k' \
    --train_type lora \
    --torch_dtype bfloat16 \
    --per_device_train_batch_size 4 \
    --target_modules all-linear \
    --gradient_accumulation_steps 8 \
    --save_only_model true \
    --max_length 65536 \
    --attn_impl flash_attn \
    --sequence_parallel_size 8 \
    --use_logits_to_keep false \
    --padding_free true
