#!/usr/bin/env bash
# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=1
# Calibration row T7: the script run on its own on one GPU (trl#3168).
python train_dpo.py
