#!/usr/bin/env bash
# Calibration row T13: huggingface/open-r1 issue 446 (Feb 2025): the README's YAML-config SFT of
# Qwen2.5-1.5B-Instruct (config_demo.yaml @ 8782fa6, per-device batch 16, use_liger off) with ZeRO-3 on 8 x H100:
# CUDA OOM. Written for bench/calibrate.py, not the reporter's file.
# rlhf-lint: hardware gpu=H100-80GB gpus-per-node=8 nodes=1
accelerate launch --config_file recipes/accelerate_configs/zero3.yaml src/open_r1/sft.py \
    --config recipes/Qwen2.5-1.5B-Instruct/sft/config_demo.yaml
