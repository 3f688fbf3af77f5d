#!/usr/bin/env bash
# Calibration row W21 (bench/calibration/heldout_swift.json): written for bench/calibrate.py from the
# ms-swift source below (its memory note "Megatron-LM: 9.6s/it; 16 * 60GiB"), not a copy of the ms-swift file.
# Source: https://github.com/modelscope/ms-swift/blob/ad907793e9d3450bf1b28ac0e1eebb5f4890265b/examples/train/megatron/qwen3_moe.sh
# The source loads the converted checkpoint (--load Qwen3-30B-A3B-Base-mcore); its model is named here. Launched
# there by Alibaba Cloud DLC over two nodes (NNODES=$WORLD_SIZE): two nodes of 8 GPUs written out.
# rlhf-lint: hardware gpu=A800 gpus-per-node=8 nodes=2
NNODES=2 \
NPROC_PER_NODE=8 \
megatron sft \
    --model Qwen/Qwen3-30B-A3B-Base \
    --dataset 'liucong/Chinese-DeepSeek-R1-Distill-data-110k-SFT' \
    --tensor_model_parallel_size 2 \
    --expert_model_parallel_size 8 \
    --moe_grouped_gemm true \
    --moe_shared_expert_overlap true \
    --micro_batch_size 1 \
    --global_batch_size 16 \
    --packing true \
    --recompute_granularity full \
    --recompute_method uniform \
    --recompute_num_layers 1 \
    --finetune true \
    --cross_entropy_loss_fusion true \
    --max_length 8192 \
    --sequence_parallel true \
    --use_flash_attn true
