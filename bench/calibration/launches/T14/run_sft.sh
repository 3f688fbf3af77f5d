#!/usr/bin/env bash
# Calibration row T14: huggingface/open-r1 issue 446 (Feb 2025): the same run as T13 with the per-device batch
# lowered to 4 on the command line, as the README shows: it ran. Written for bench/calibrate.py.
# rlhf-lint: hardware gpu=H100-80GB gpus-per-node=8 nodes=1
accelerate launch --config_file recipes/accelerate_configs/zero3.yaml src/open_r1/sft.py \
    --config recipes/Qwen2.5-1.5B-Instruct/sft/config_demo.yaml \
    --per_device_train_batch_size=4
