#!/usr/bin/env bash
# rlhf-lint: hardware gpu=H100-80GB gpus-per-node=8
# Calibration row F8: dingxianzhong/play-verl, PPO (actor + critic) of Qwen2.5-0.5B-Instruct on GSM8K on 8 x H100
# 80GB (its examples/tuning/run_demo_qwen2.5b_ppo_8gpu.sh and logs/verl_ppo_qwen2.5b_8gpu.log).
# Written for bench/calibrate.py.
export VLLM_ATTENTION_BACKEND=XFORMERS
PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo \
    data.train_files=data/gsm8k/train.parquet \
    data.val_files=data/gsm8k/test.parquet \
    data.train_batch_size=2048 \
    data.max_prompt_length=512 \
    data.max_response_length=256 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=512 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    critic.optim.lr=1e-5 \
    critic.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    critic.ppo_micro_batch_size_per_gpu=4 \
    algorithm.kl_ctrl.kl_coef=0.001 \
    trainer.logger="[console]" \
    trainer.val_before_train=False \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=10 \
    trainer.test_freq=10 \
    trainer.total_epochs=15
