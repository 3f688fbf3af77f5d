#!/usr/bin/env bash
# Calibration row I8: OpenRLHF issue 597, the same SFT on 4 x RTX 3090 with train_batch_size 4 and ZeRO-3 (the
# maintainer's suggestion; the reporter: "still the same", out of GPU memory). Written for bench/calibrate.py.
# rlhf-lint: hardware gpu=RTX-3090 gpus-per-node=4 nodes=1
deepspeed --num_gpus 4 --module openrlhf.cli.train_sft \
   --max_len 2048 \
   --dataset Open-Orca/OpenOrca \
   --input_key question \
   --output_key response \
   --train_batch_size 4 \
   --micro_train_batch_size 1 \
   --pretrain meta-llama/Meta-Llama-3-8B \
   --save_path ./checkpoint/llama3-8b-sft \
   --zero_stage 3 \
   --max_epochs 1 \
   --bf16 \
   --flash_attn \
   --learning_rate 5e-6 \
   --gradient_checkpointing
