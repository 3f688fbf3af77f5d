#!/usr/bin/env bash
# Calibration row T1: huggingface/trl issue 1376, TRL's examples/scripts/sft.py (Feb 2024) launched with TRL's
# ZeRO-3 accelerate config (8 processes), full fine-tuning (no PEFT). The flags are the ones the script's docstring
# gave; --max_seq_length 512 is the script's own default, written out. Written for bench/calibrate.py, not the
# reporter's file.
accelerate launch --config_file configs/deepspeed_zero3.yaml examples/scripts/sft.py \
    --model_name_or_path facebook/opt-350m \
    --max_seq_length 512 \
    --report_to wandb \
    --learning_rate 1.41e-5 \
    --per_device_train_batch_size 64 \
    --gradient_accumulation_steps 16 \
    --output_dir sft_openassistant-guanaco \
    --logging_steps 1 \
    --num_train_epochs 3 \
    --max_steps -1 \
    --push_to_hub \
    --gradient_checkpointing
