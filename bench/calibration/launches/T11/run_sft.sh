#!/usr/bin/env bash
# Calibration row T11: huggingface/open-r1 issue 446 (Feb 2025): the OpenR1-Qwen-7B SFT recipe (open-r1 @ 8782fa6)
# with use_liger_kernel turned off, ZeRO-3 on 8 x H100: CUDA OOM. Written for bench/calibrate.py.
# rlhf-lint: hardware gpu=H100-80GB gpus-per-node=8 nodes=1
accelerate launch --config_file recipes/accelerate_configs/zero3.yaml src/open_r1/sft.py \
    --config recipes/OpenR1-Qwen-7B/sft/config.yaml
