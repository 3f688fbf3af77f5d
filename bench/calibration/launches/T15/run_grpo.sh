#!/usr/bin/env bash
# Calibration row T15: open-r1 README at 571661a (Feb 2025): the SimpleRL-style GRPO recipe (Qwen2.5-Math-7B,
# vLLM on the eighth GPU) with ZeRO-2 on 7 training processes, "Running this on 8 H100 80G GPU takes about 3 hours":
# it ran. Written for bench/calibrate.py from the README's command and the recipe at that commit.
# rlhf-lint: hardware gpu=H100-80GB gpus-per-node=8 nodes=1
ACCELERATE_LOG_LEVEL=info accelerate launch --config_file recipes/accelerate_configs/zero2.yaml --num_processes=7 \
    src/open_r1/grpo.py --config recipes/deepseek/DeepSeek-R1-Distill-Qwen-7B/grpo/config_base_math_smalllr.yaml
