#!/usr/bin/env bash
# Calibration row T5: huggingface/alignment-handbook issue 22 (Nov 2023): the zephyr-7b-beta full DPO recipe with
# the handbook's ZeRO-3 accelerate config on 8 of a node's 10 A40 GPUs, per-device train batch lowered to 1:
# CUDA OOM. Written for bench/calibrate.py from the handbook's files at a1afb2b, not the reporter's file.
# rlhf-lint: hardware gpu=A40 gpus-per-node=10 nodes=1
CUDA_VISIBLE_DEVICES=2,3,4,5,6,7,8,9 ACCELERATE_LOG_LEVEL=info accelerate launch \
    --config_file recipes/accelerate_configs/deepspeed_zero3.yaml --main_process_port 6000 \
    scripts/run_dpo.py recipes/zephyr-7b-beta/dpo/config_full.yaml
