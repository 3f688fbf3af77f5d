#!/usr/bin/env bash
# Calibration row I3: OpenRLHF issue 384 (glm-4-9b-chat DPO, 8 x A100-80GB, OpenRLHF 6a13d95), the reporter's flags
# without --flash_attn: OOM after some dozens of steps. Written for bench/calibrate.py, not the reporter's file.
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 nodes=1
deepspeed --module openrlhf.cli.train_dpo \
   --pretrain THUDM/glm-4-9b \
   --save_path ckpt/glm-dpo \
   --train_batch_size 128 \
   --micro_train_batch_size 1 \
   --bf16 \
   --max_epochs 1 \
   --max_len 2048 \
   --zero_stage 3 \
   --learning_rate 5e-7 \
   --beta 0.1 \
   --dataset OpenRLHF/preference_dataset_mixture2_and_safe_pku \
   --apply_chat_template \
   --chosen_key chosen \
   --rejected_key rejected \
   --gradient_checkpointing
