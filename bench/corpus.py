"""A generated corpus of realistic post-training repositories for the throughput and fuzzing benchmarks.

    python bench/corpus.py OUT_DIR [--files 5000] [--seed 0]

Each repository holds what a training team commits: launch scripts (OpenRLHF Ray PPO/GRPO, DeepSpeed SFT/DPO,
verl Hydra overrides, torchrun, accelerate), DeepSpeed configs, verl / accelerate YAML, Open-Reasoner-Zero style
Python experiment configs, plain Python helpers, and requirements pins. Values vary with the seed, including some of
the mistakes the rules look for (a stage-3 config with an optimizer offload to nvme, renamed flags, stale pins).
The texts are written for this benchmark; none is copied from a public repository.
"""
from __future__ import annotations

import argparse
import json
import os
import random

MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-1.5B", "Qwen/Qwen2.5-32B",
          "meta-llama/Llama-3.2-1B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "mistralai/Mistral-7B-v0.1"]
OPENRLHF_VERSIONS = ["0.5.7", "0.6.1.post1", "0.7.3", "0.8.5", "0.9.5", "0.10.2"]


def launch_script(seed: int) -> str:
    """An OpenRLHF Ray PPO launch, the file pre-commit checks most often."""
    r = random.Random(seed)
    model = r.choice(MODELS)
    stage = r.choice([2, 3])
    lines = [
        "#!/bin/bash",
        "set -x",
        "",
        f"# PPO run {seed}: actor and critic on one node",
        f'MODEL_PATH="${{MODEL_PATH:-{model}}}"',
        f"SAVE_DIR=./checkpoint/ppo-{seed}",
        "",
        "ray job submit --address=\"http://127.0.0.1:8265\" \\",
        "   --runtime-env-json='{\"working_dir\": \"/openrlhf\"}' \\",
        "   -- python3 -m openrlhf.cli.train_ppo_ray \\",
        f"   --ref_num_nodes 1 --ref_num_gpus_per_node {r.choice([2, 4, 8])} \\",
        f"   --reward_num_nodes 1 --reward_num_gpus_per_node {r.choice([2, 4, 8])} \\",
        f"   --critic_num_nodes 1 --critic_num_gpus_per_node {r.choice([2, 4, 8])} \\",
        f"   --actor_num_nodes 1 --actor_num_gpus_per_node {r.choice([2, 4, 8])} \\",
        f"   --vllm_num_engines {r.choice([1, 2, 4])} --vllm_tensor_parallel_size {r.choice([1, 2])} \\",
        f"   --vllm_gpu_memory_utilization {r.choice(['0.5', '0.6', '0.9'])} \\",
        "   --colocate_all_models \\" if r.random() < 0.5 else "   --colocate_actor_ref \\",
        '   --pretrain "$MODEL_PATH" \\',
        "   --reward_pretrain OpenRLHF/Llama-3-8b-rm-mixture \\",
        '   --save_path "$SAVE_DIR" \\',
        f"   --micro_train_batch_size {r.choice([1, 2, 4])} --train_batch_size {r.choice([64, 128, 256])} \\",
        f"   --micro_rollout_batch_size {r.choice([4, 8, 16])} --rollout_batch_size {r.choice([512, 1024])} \\",
        f"   --max_epochs 1 --prompt_max_len {r.choice([1024, 2048])} --generate_max_len {r.choice([1024, 4096])} \\",
        f"   --zero_stage {stage} --bf16 \\",
        f"   --actor_learning_rate {r.choice(['5e-7', '1e-6'])} --critic_learning_rate 9e-6 \\",
        "   --init_kl_coef 0.01 \\",
        "   --prompt_data OpenRLHF/prompt-collection-v0.1 --input_key context_messages --apply_chat_template \\",
        "   --normalize_reward --adam_offload --flash_attn --gradient_checkpointing \\" if r.random() < 0.5
        else "   --normalize_reward --flash_attn --gradient_checkpointing --packing_samples \\",
        "   --use_wandb \"$WANDB_TOKEN\"",
        "",
    ]
    return "\n".join(lines)


def deepspeed_script(seed: int, config_name: str) -> str:
    r = random.Random(seed)
    task = r.choice(["sft", "dpo", "rm"])
    return "\n".join([
        "#!/usr/bin/env bash",
        "set -euo pipefail",
        f"NUM_GPUS={r.choice([4, 8])}",
        f"deepspeed --num_gpus $NUM_GPUS --module openrlhf.cli.train_{task} \\",
        f"    --pretrain {r.choice(MODELS)} \\",
        f"    --dataset {r.choice(['Open-Orca/OpenOrca', 'Anthropic/hh-rlhf', 'OpenRLHF/preference_dataset_mixture2_and_safe_pku'])} \\",
        f"    --max_len {r.choice([2048, 4096, 8192])} --train_batch_size {r.choice([128, 256])} \\",
        f"    --micro_train_batch_size {r.choice([1, 2, 8])} --max_epochs {r.choice([1, 2, 3])} \\",
        f"    --zero_stage {r.choice([2, 3])} --bf16 --learning_rate {r.choice(['5e-6', '9e-6', '2e-5'])} \\",
        f"    --deepspeed_config configs/{config_name} \\" if r.random() < 0.3 else "    --gradient_checkpointing \\",
        f"    --save_path ./ckpt/{task}-{seed}",
        "",
    ])


def verl_script(seed: int) -> str:
    r = random.Random(seed)
    return "\n".join([
        "#!/bin/bash",
        "set -x",
        "export VLLM_ATTENTION_BACKEND=XFORMERS",
        "python3 -m verl.trainer.main_ppo \\",
        f"    algorithm.adv_estimator={r.choice(['grpo', 'gae', 'reinforce_plus_plus'])} \\",
        "    data.train_files=$HOME/data/gsm8k/train.parquet \\",
        "    data.val_files=$HOME/data/gsm8k/test.parquet \\",
        f"    data.train_batch_size={r.choice([256, 512, 1024])} \\",
        f"    data.max_prompt_length={r.choice([512, 1024])} data.max_response_length={r.choice([1024, 2048])} \\",
        f"    actor_rollout_ref.model.path={r.choice(MODELS)} \\",
        "    actor_rollout_ref.actor.optim.lr=1e-6 \\",
        f"    actor_rollout_ref.actor.ppo_mini_batch_size={r.choice([64, 128, 256])} \\",
        f"    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={r.choice([2, 4, 16])} \\",
        f"    actor_rollout_ref.actor.fsdp_config.param_offload={r.choice(['True', 'False'])} \\",
        f"    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.tensor_model_parallel_size={r.choice([1, 2])} \\",
        f"    actor_rollout_ref.rollout.gpu_memory_utilization={r.choice(['0.4', '0.6'])} \\",
        f"    actor_rollout_ref.rollout.n={r.choice([1, 5, 8])} \\",
        f"    trainer.n_gpus_per_node={r.choice([4, 8])} trainer.nnodes=1 \\",
        # half forward the script's arguments, which may override any key (the V rules then say less)
        "    trainer.logger=['console','wandb'] trainer.total_epochs=15" + (" $@" if seed % 2 else ""),
        "",
    ])


def ds_config(seed: int) -> str:
    r = random.Random(seed)
    stage = r.choice([1, 2, 3])
    zero = {"stage": stage, "overlap_comm": True, "contiguous_gradients": True,
            "reduce_bucket_size": r.choice(["auto", 5e8, 200000000])}
    if stage == 3:
        zero.update({"stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto",
                     "stage3_max_live_parameters": 1e9, "stage3_gather_16bit_weights_on_model_save": True})
    if r.random() < 0.4:
        zero["offload_optimizer"] = {"device": r.choice(["cpu", "nvme"]), "pin_memory": True}
    if stage == 3 and r.random() < 0.3:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    cfg = {
        "train_batch_size": r.choice(["auto", 128, 256]),
        "train_micro_batch_size_per_gpu": r.choice(["auto", 1, 2, 4]),
        "gradient_accumulation_steps": r.choice(["auto", 1, 8]),
        "gradient_clipping": 1.0,
        "steps_per_print": 10,
        "zero_optimization": zero,
        "bf16": {"enabled": r.random() < 0.8},
        "wall_clock_breakdown": False,
    }
    if r.random() < 0.3:
        cfg["fp16"] = {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 16}
    if r.random() < 0.3:
        cfg["optimizer"] = {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "weight_decay": 0.0}}
    return json.dumps(cfg, indent=r.choice([2, 4])) + "\n"


def verl_yaml(seed: int) -> str:
    r = random.Random(seed)
    return f"""# experiment {seed}
data:
  train_batch_size: {r.choice([256, 512])}
  max_prompt_length: {r.choice([512, 1024])}
  max_response_length: {r.choice([1024, 2048, 4096])}
actor_rollout_ref:
  model:
    path: {r.choice(MODELS)}
    enable_gradient_checkpointing: true
  actor:
    strategy: fsdp
    ppo_mini_batch_size: {r.choice([64, 128])}
    ppo_micro_batch_size_per_gpu: {r.choice([2, 4, 8])}
    use_kl_loss: {r.choice(['true', 'false'])}
    fsdp_config:
      param_offload: {r.choice(['true', 'false'])}
      optimizer_offload: {r.choice(['true', 'false'])}
  rollout:
    name: vllm
    gpu_memory_utilization: {r.choice([0.4, 0.5, 0.7])}
    tensor_model_parallel_size: {r.choice([1, 2, 4])}
    n: {r.choice([4, 8, 16])}
trainer:
  nnodes: 1
  n_gpus_per_node: {r.choice([4, 8])}
  total_epochs: {r.choice([1, 15, 30])}
  logger: [console, wandb]
"""


def accelerate_yaml(seed: int) -> str:
    r = random.Random(seed)
    return f"""compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  deepspeed_multinode_launcher: standard
  offload_optimizer_device: {r.choice(['none', 'cpu'])}
  offload_param_device: {r.choice(['none', 'cpu'])}
  zero3_init_flag: {r.choice(['true', 'false'])}
  zero_stage: {r.choice([2, 3])}
machine_rank: 0
main_training_function: main
mixed_precision: {r.choice(['bf16', 'fp16', 'no'])}
num_machines: 1
num_processes: {r.choice([2, 4, 8])}
rdzv_backend: static
same_network: true
use_cpu: false
"""


def orz_config(seed: int) -> str:
    r = random.Random(seed)
    return f'''"""Open-Reasoner-Zero style experiment {seed}."""
from dataclasses import dataclass

from orz.ppo import RayPPOTrainer
from orz.exps.examples.ppo.ppo_base_exp import BasePPOExp, BasePPOExpConfig


@dataclass
class PPOExpConfig(BasePPOExpConfig):
    use_compute_reward_fn: bool = True
    use_orm_score: bool = False
    total_num_nodes: int = {r.choice([8, 16, 32])}
    ref_num_nodes: int = total_num_nodes
    actor_num_nodes: int = total_num_nodes
    critic_num_nodes: int = total_num_nodes
    colocate_all: bool = True
    vllm_num_engines: int = total_num_nodes
    vllm_tensor_parallel_size: int = {r.choice([1, 2])}
    gpu_memory_utilization: float = {r.choice([0.3, 0.5, 0.75])}
    pretrain: str = "{r.choice(MODELS)}"
    zero_stage: int = {r.choice([2, 3])}
    prompt_max_len: int = {r.choice([2048, 8000])}
    generate_max_len: int = {r.choice([8000, 16000])}
    micro_train_batch_size: int = {r.choice([1, 2])}
    micro_forward_batch_size: int = {r.choice([2, 4])}
    rollout_batch_size: int = {r.choice([128, 256])}
    n_samples_per_prompt: int = {r.choice([16, 32, 64])}
    policy_update_steps: int = 1
    critic_update_steps: int = {r.choice([1, 12])}
    actor_learning_rate: float = 1e-6
    critic_learning_rate: float = 5e-6
    gradient_checkpointing: bool = True


if __name__ == "__main__":
    exp = BasePPOExp().set_cfg(PPOExpConfig())
    exp.run()
'''


def helper_module(seed: int) -> str:
    r = random.Random(seed)
    return f'''"""Reward helpers {seed}: nothing here configures a launch."""
import re

ANSWER = re.compile(r"\\\\boxed{{([^}}]*)}}")


def extract_answer(text: str) -> str | None:
    match = ANSWER.search(text)
    return match.group(1).strip() if match else None


def reward(prediction: str, reference: str, bonus: float = {r.random():.3f}) -> float:
    answer = extract_answer(prediction)
    if answer is None:
        return 0.0
    return 1.0 + bonus if answer == reference.strip() else 0.0
'''


def requirements(seed: int) -> str:
    r = random.Random(seed)
    lines = ["# training stack", f"openrlhf=={r.choice(OPENRLHF_VERSIONS)}",
             f"deepspeed=={r.choice(['0.14.4', '0.15.0', '0.15.4', '0.16.4', '0.16.8'])}",
             f"vllm=={r.choice(['0.4.2', '0.6.4.post1', '0.7.3', '0.8.5.post1', '0.10.1'])}",
             f"torch=={r.choice(['2.3.1', '2.4.0', '2.5.1', '2.6.0'])}",
             f"transformers>={r.choice(['4.44.0', '4.46.1', '4.51.3'])}", "flash-attn==2.7.0.post2 ; platform_system == 'Linux'",
             "ray[default]>=2.12", "wandb", "datasets"]
    return "\n".join(lines) + "\n"


KINDS = [  # (relative path pattern, generator, weight)
    ("scripts/train_ppo_{i}.sh", lambda s, cfg: launch_script(s), 3),
    ("scripts/train_{i}.sh", lambda s, cfg: deepspeed_script(s, cfg), 2),
    ("examples/run_verl_{i}.sh", lambda s, cfg: verl_script(s), 2),
    ("configs/ds_zero{i}.json", lambda s, cfg: ds_config(s), 3),
    ("configs/exp_{i}.yaml", lambda s, cfg: verl_yaml(s), 2),
    ("configs/accelerate_{i}.yaml", lambda s, cfg: accelerate_yaml(s), 1),
    ("exps/ppo_exp_{i}.py", lambda s, cfg: orz_config(s), 2),
    ("src/rewards_{i}.py", lambda s, cfg: helper_module(s), 2),
]


def generate(out: str, files: int = 5000, seed: int = 0, per_repo: int = 10) -> list[str]:
    """Write ``files`` files into repositories of ``per_repo`` files each; return their paths."""
    rng = random.Random(seed)
    weights = [k[2] for k in KINDS]
    written: list[str] = []
    repo = 0
    while len(written) < files:
        root = os.path.join(out, f"repo_{repo:04d}")
        os.makedirs(os.path.join(root, ".git"), exist_ok=True)  # marks the repository root
        items = [("requirements.txt", requirements(rng.randrange(10**9)))]
        counters: dict[str, int] = {}
        config_names = []
        for _ in range(per_repo - 1):
            pattern, gen, _w = rng.choices(KINDS, weights=weights)[0]
            counters[pattern] = counters.get(pattern, 0) + 1
            rel = pattern.format(i=counters[pattern])
            if rel.endswith(".json"):
                config_names.append(os.path.basename(rel))
            items.append((rel, gen(rng.randrange(10**9), config_names[-1] if config_names else "ds_zero1.json")))
        for rel, text in items[: files - len(written)]:
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            written.append(path)
        repo += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    paths = generate(args.out, args.files, args.seed)
    print(f"wrote {len(paths)} files under {args.out}")


if __name__ == "__main__":
    main()
