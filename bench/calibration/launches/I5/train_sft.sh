#!/usr/bin/env bash
# Calibration row I5: OpenRLHF issue 698 (Meta-Llama-3-8B SFT on one A100-80GB, ZeRO-2, OpenRLHF's example flags
# with max_len 128): OOM in the optimizer step. Written for bench/calibrate.py, not the reporter's file.
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=1 nodes=1
deepspeed --num_gpus 1 --module openrlhf.cli.train_sft \
   --max_len 128 \
   --dataset Open-Orca/OpenOrca \
   --input_key question \
   --output_key response \
   --train_batch_size 1 \
   --micro_train_batch_size 1 \
   --pretrain meta-llama/Meta-Llama-3-8B \
   --save_path ./checkpoint/llama3-8b-sft \
   --zero_stage 2 \
   --max_epochs 1 \
   --packing_samples \
   --bf16 \
   --flash_attn \
   --learning_rate 5e-6 \
   --gradient_checkpointing
