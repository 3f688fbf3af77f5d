#!/usr/bin/env bash
# rlhf-lint: hardware gpu=H100-80GB gpus-per-node=8 nodes=3
# Calibration row R9 (bench/calibration/heldout_rl.json), written for bench/calibrate.py from the reporter's
# "Training Setup 1" (7B GRPO, 32k+ responses, 3 nodes x 8 H100 80GB: OOM). Source:
# https://github.com/OpenRLHF/OpenRLHF/issues/887
# The flags after --actor_learning_rate are not in the part of the report read: --flash_attn and
# --gradient_checkpointing are added here (assumed), nothing else. The model: Qwen2.5-7B assumed.
python3 -m openrlhf.cli.train_ppo_ray \
    --advantage_estimator group_norm \
    --n_samples_per_prompt 8 \
    --max_epochs 1 \
    --num_episodes 2 \
    --remote_rm_url http://127.0.0.1:5000/query \
    --ref_num_nodes 3 \
    --ref_num_gpus_per_node 6 \
    --actor_num_nodes 3 \
    --actor_num_gpus_per_node 1 \
    --vllm_num_engines 3 \
    --vllm_tensor_parallel_size 1 \
    --max_ckpt_num 1000 \
    --enable_prefix_caching \
    --pretrain Qwen/Qwen2.5-7B \
    --save_path ./checkpoint/grpo-7b \
    --ckpt_path ./ckpt/grpo-7b \
    --save_steps 50 \
    --micro_train_batch_size 1 \
    --train_batch_size 576 \
    --micro_rollout_batch_size 1 \
    --rollout_batch_size 72 \
    --max_samples 18000 \
    --prompt_max_len 1024 \
    --generate_max_len 36864 \
    --zero_stage 3 \
    --bf16 \
    --grad_accum_dtype bf16 \
    --temperature 0.7 \
    --seed 42 \
    --actor_learning_rate 5e-7 \
    --flash_attn \
    --gradient_checkpointing
