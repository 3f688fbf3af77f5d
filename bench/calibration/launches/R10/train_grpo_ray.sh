#!/usr/bin/env bash
# rlhf-lint: hardware gpu=H800 gpus-per-node=8 nodes=1
# Calibration row R10 (bench/calibration/heldout_rl.json), written for bench/calibrate.py from the reporter's
# command (Qwen3-8B GRPO, 4k prompt + 8k generation, H800: OOM throughout). Source:
# https://github.com/OpenRLHF/OpenRLHF/issues/1066
# The flags after --adam_offload are not in the part of the report read: --flash_attn is added here (assumed),
# nothing else; no colocation flag is assumed (1 reference + 4 actor + 2 vLLM GPUs on one 8-GPU node).
python3 -m openrlhf.cli.train_ppo_ray \
    --ref_num_nodes 1 \
    --ref_num_gpus_per_node 1 \
    --actor_num_nodes 1 \
    --actor_num_gpus_per_node 4 \
    --vllm_num_engines 1 \
    --vllm_tensor_parallel_size 2 \
    --vllm_gpu_memory_utilization 0.6 \
    --init_kl_coef 1e-3 \
    --kl_target 0.01 \
    --entropy_loss_coef 1e-4 \
    --gamma 1.0 \
    --use_kl_loss \
    --kl_estimator k3 \
    --advantage_estimator group_norm \
    --pretrain Qwen/Qwen3-8B \
    --agent_func_path ./agent_func.py \
    --save_path ./checkpoint/agentic_test \
    --ckpt_path ./checkpoint/agentic_test \
    --save_hf_ckpt \
    --micro_train_batch_size 1 \
    --train_batch_size 4 \
    --micro_rollout_batch_size 32 \
    --rollout_batch_size 128 \
    --n_samples_per_prompt 2 \
    --max_epochs 2 \
    --prompt_max_len 4096 \
    --max_samples 1000000 \
    --generate_max_len 8192 \
    --zero_stage 3 \
    --bf16 \
    --actor_learning_rate 1e-6 \
    --critic_learning_rate 9e-6 \
    --prompt_data ./data.jsonl \
    --input_key instruction \
    --label_key label \
    --apply_chat_template \
    --normalize_reward \
    --gradient_checkpointing \
    --vllm_sync_backend nccl \
    --enforce_eager \
    --vllm_enable_sleep \
    --use_liger_kernel \
    --adam_offload \
    --flash_attn
