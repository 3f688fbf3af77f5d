#!/usr/bin/env bash
# Calibration row W14 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/ac21d51705d3bbfd01a7aeda55c53014c1cfd31f/examples/train/qlora/bnb.sh
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=1 nodes=1
CUDA_VISIBLE_DEVICES=0 \
swift sft \
    --model Qwen/Qwen2.5-7B-Instruct \
    --train_type lora \
    --dataset 'AI-ModelScope/alpaca-gpt4-data-zh#500' \
              'AI-ModelScope/alpaca-gpt4-data-en#500' \
              'swift/self-cognition#500' \
    --torch_dtype bfloat16 \
    --bnb_4bit_compute_dtype bfloat16 \
    --bnb_4bit_quant_type nf4 \
    --bnb_4bit_use_double_quant true \
    --quant_method bnb \
    --quant_bits 4 \
    --num_train_epochs 1 \
    --per_device_train_batch_size 1 \
    --per_device_eval_batch_size 1 \
    --learning_rate 1e-4 \
    --lora_rank 8 \
    --lora_alpha 32 \
    --target_modules all-linear \
    --gradient_accumulation_steps 16 \
    --max_length 2048 \
    --output_dir output \
    --system 'You are a helpful assistant.' \
    --dataloader_num_workers 4 \
    --model_author swift \
    --model_name swift-robot
