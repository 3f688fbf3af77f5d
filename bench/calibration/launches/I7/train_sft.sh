#!/usr/bin/env bash
# Calibration row I7: OpenRLHF issue 597 (Meta-Llama-3-8B SFT on one RTX 3090 24GB, ZeRO-2, max_len 2048): out of
# GPU memory. Written for bench/calibrate.py, not the reporter's file.
# rlhf-lint: hardware gpu=RTX-3090 gpus-per-node=1 nodes=1
deepspeed --module openrlhf.cli.train_sft \
   --max_len 2048 \
   --dataset Open-Orca/OpenOrca \
   --input_key question \
   --output_key response \
   --train_batch_size 1 \
   --micro_train_batch_size 1 \
   --pretrain meta-llama/Meta-Llama-3-8B \
   --save_path ./checkpoint/llama3-8b-sft \
   --zero_stage 2 \
   --max_epochs 1 \
   --bf16 \
   --flash_attn \
   --learning_rate 5e-6 \
   --gradient_checkpointing
