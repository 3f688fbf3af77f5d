#!/usr/bin/env bash
# rlhf-lint: hardware gpu=V100-32GB gpus-per-node=1
# Calibration row F4: FastChat issue 2681 (LLaMA-7B full fine-tune, HF Trainer FSDP on one V100-PCIE 32GB, fp32:
# CUDA OOM), the reporter's command. Written for bench/calibrate.py.
torchrun --nproc_per_node=1 --master_port=20001 fastchat/train/train_xformers.py \
    --model_name_or_path huggyllama/llama-7b \
    --data_path data/sharegpt_clean.json \
    --bf16 False \
    --output_dir output_vicuna_7b \
    --num_train_epochs 1 \
    --per_device_train_batch_size 1 \
    --per_device_eval_batch_size 1 \
    --gradient_accumulation_steps 2 \
    --evaluation_strategy "no" \
    --save_strategy "no" \
    --learning_rate 2e-5 \
    --weight_decay 0. \
    --warmup_ratio 0.04 \
    --lr_scheduler_type "cosine" \
    --logging_steps 1 \
    --fsdp "full_shard auto_wrap" \
    --fsdp_transformer_layer_cls_to_wrap 'LlamaDecoderLayer' \
    --tf32 False \
    --model_max_length 2048 \
    --gradient_checkpointing True \
    --lazy_preprocess True
