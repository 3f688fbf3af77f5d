#!/usr/bin/env bash
# Calibration row W10 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note), not a copy of the ms-swift file. Source:
# https://github.com/modelscope/ms-swift/blob/b40f31df7c09dad4d625a1dfae426f19de309546/examples/train/tuners/lisa/train.sh
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=1 nodes=1
CUDA_VISIBLE_DEVICES=0 \
swift sft \
    --model Qwen/Qwen2-7B-Instruct \
    --train_type full \
    --dataset swift/self-cognition#1000 \
    --lisa_activated_layers 2 \
    --num_train_epochs 1 \
    --per_device_train_batch_size 1 \
    --learning_rate 1e-4 \
    --gradient_accumulation_steps 16 \
    --model_author swift \
    --model_name swift-robot
