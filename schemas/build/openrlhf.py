"""Build schemas/openrlhf/openrlhf.json and clis/<cli>.json from the flag tables read off every OpenRLHF tag.

Inputs (TSV, one row per CLI flag and spec over a run of consecutive tags; see the research notes):
    openrlhf_tags.txt, openrlhf_flag_spans.tsv, openrlhf_rename_v0.10.2.tsv
Run:  python -m rlhf_lint.schemas.build.openrlhf KNOWLEDGE_DIR  (writes schemas/openrlhf/openrlhf.json and clis/)

The hand-written tables below (entry modules, earlier renames, runtime checks) carry the source of each fact.
"""
from __future__ import annotations

import csv
import json
import os
import sys

REPO = "https://github.com/OpenRLHF/OpenRLHF"
RENAME_COMMIT = f"{REPO}/commit/ed62d0e2"


def compare(a: str, b: str) -> str:
    return f"{REPO}/compare/{a}...{b}"


# -- entry points: module (or example script before v0.3.6) -> cli, lifetime, job type ------------------------------
# Lifetimes: `git ls-tree` of openrlhf/cli/ and examples/ at every tag.
MODULES = [
    # (entry, kind, cli, first, last, job_type, source)
    ("examples/train_sft.py", "script", "train_sft", "v0.0.1", "v0.3.5", "sft", f"{REPO}/tree/v0.3.5/examples"),
    ("examples/train_rm.py", "script", "train_rm", "v0.0.1", "v0.3.5", "rm", f"{REPO}/tree/v0.3.5/examples"),
    ("examples/train_dpo.py", "script", "train_dpo", "v0.0.1", "v0.3.5", "dpo", f"{REPO}/tree/v0.3.5/examples"),
    ("examples/train_ppo.py", "script", "train_ppo", "v0.0.1", "v0.3.5", "ppo", f"{REPO}/tree/v0.3.5/examples"),
    ("examples/train_ppo_ray.py", "script", "train_ppo_ray", "v0.0.1", "v0.3.5", "ppo", f"{REPO}/tree/v0.3.5/examples"),
    ("examples/batch_inference.py", "script", "batch_inference", "v0.0.1", "v0.3.5", "inference",
     f"{REPO}/tree/v0.3.5/examples"),
    ("examples/interactive_chat.py", "script", "interactive_chat", "v0.0.1", "v0.3.5", "inference",
     f"{REPO}/tree/v0.3.5/examples"),
    ("examples/train_pt.py", "script", None, "v0.0.1", "v0.1.0", "pt", f"{REPO}/tree/v0.1.0/examples"),
    ("examples/train_kto.py", "script", "train_kto", "v0.1.9", "v0.3.5", "kto", f"{REPO}/tree/v0.3.5/examples"),
    ("examples/train_kd.py", "script", "train_kd", "v0.2.5", "v0.3.5", "kd", f"{REPO}/tree/v0.3.5/examples"),
    ("openrlhf.cli.train_sft", "module", "train_sft", "v0.3.6", "HEAD", "sft", f"{REPO}/tree/v0.3.6/openrlhf/cli"),
    ("openrlhf.cli.train_rm", "module", "train_rm", "v0.3.6", "HEAD", "rm", f"{REPO}/tree/v0.3.6/openrlhf/cli"),
    ("openrlhf.cli.train_dpo", "module", "train_dpo", "v0.3.6", "HEAD", "dpo", f"{REPO}/tree/v0.3.6/openrlhf/cli"),
    ("openrlhf.cli.train_ppo_ray", "module", "train_ppo_ray", "v0.3.6", "HEAD", "ppo",
     f"{REPO}/tree/v0.3.6/openrlhf/cli"),
    # removed by "remove ppo trainer.py (#882)"
    ("openrlhf.cli.train_ppo", "module", "train_ppo", "v0.3.6", "v0.6.1.post1", "ppo", f"{REPO}/pull/882"),
    # removed by 6a981c8c "refactor: remove KTO, PRM, KD, batch_inference, and interactive_chat modules"
    ("openrlhf.cli.train_kto", "module", "train_kto", "v0.3.6", "v0.9.5", "kto", f"{REPO}/commit/6a981c8c"),
    ("openrlhf.cli.train_kd", "module", "train_kd", "v0.3.6", "v0.9.5", "kd", f"{REPO}/commit/6a981c8c"),
    ("openrlhf.cli.batch_inference", "module", "batch_inference", "v0.3.6", "v0.9.5", "inference",
     f"{REPO}/commit/6a981c8c"),
    ("openrlhf.cli.interactive_chat", "module", "interactive_chat", "v0.3.6", "v0.9.5", "inference",
     f"{REPO}/commit/6a981c8c"),
    ("openrlhf.cli.train_prm", "module", "train_prm", "v0.4.5", "v0.9.5", "prm", f"{REPO}/commit/6a981c8c"),
    ("openrlhf.cli.serve_rm", "module", "serve_rm", "v0.4.0", "HEAD", "serve", f"{REPO}/tree/v0.4.0/openrlhf/cli"),
    ("openrlhf.cli.lora_combiner", "module", "lora_combiner", "v0.5.6", "HEAD", "lora_merge",
     f"{REPO}/tree/v0.5.6/openrlhf/cli"),
]

# -- renames before v0.10.2 (flat era) -------------------------------------------------------------------------------
# new: the replacement words; applicability: safe (same meaning), unsafe (close but not the same), display.
EARLY_RENAMES = [
    # (clis or "*", old, new words, last tag of old, applicability, note, source)
    ("*", "--flash_attn", ["--attn_implementation", "flash_attention_2"], "v0.8.9.post1", "safe",
     "--flash_attn became --attn_implementation (default flash_attention_2)", compare("v0.8.9.post1", "v0.8.10")),
    ("*", "--bf16", ["--param_dtype", "bf16"], "v0.9.1.post1", "safe",
     "--bf16 became --param_dtype {bf16,fp16} (default bf16)", compare("v0.9.1.post1", "v0.9.2")),
    ("*", "--generate_max_len", ["--max_new_tokens"], "v0.9.7", "safe",
     "--generate_max_len became --max_new_tokens", compare("v0.9.7", "v0.9.8")),
    ("*", "--prompt_max_len", ["--max_len"], "v0.9.7", "display",
     "--prompt_max_len was replaced by --max_len, which counts prompt plus response", compare("v0.9.7", "v0.9.8")),
    ("*", "--head_prefix", ["--value_head_prefix"], "v0.3.5", "safe", "--head_prefix became --value_head_prefix",
     compare("v0.3.5", "v0.3.6")),
    ("*", "--use_kl_estimator_k3", ["--kl_estimator", "k3"], "v0.6.0", "safe",
     "--use_kl_estimator_k3 became --kl_estimator k3", compare("v0.6.0", "v0.6.0.post1")),
    ("*", "--universal_ckpt", ["--use_ds_universal_ckpt"], "v0.6.3.post2", "safe",
     "--universal_ckpt became --use_ds_universal_ckpt", compare("v0.6.3.post2", "v0.6.4")),
    ("*", "--torch_compile", ["--deepcompile"], "v0.7.0.post1", "unsafe",
     "--torch_compile was replaced by DeepSpeed's --deepcompile", compare("v0.7.0.post1", "v0.7.1")),
    ("*", "--balancing_loss_coef", ["--aux_loss_coef"], "v0.1.5", "safe",
     "--balancing_loss_coef became --aux_loss_coef", compare("v0.1.5", "v0.1.6")),
    ("*", "--use_icepop", ["--vllm_is_correction_type", "icepop"], "v0.9.2", "unsafe",
     "--use_icepop became --vllm_is_correction_type icepop", compare("v0.9.2", "v0.9.3")),
    ("*", "--colocate_actor_critic", ["--colocate_actor_ref"], "v0.2.5", "display",
     "v0.2.6 regrouped colocation as actor+ref and critic+reward", compare("v0.2.5", "v0.2.6")),
    ("*", "--colocate_ref_reward", ["--colocate_critic_reward"], "v0.2.5", "display",
     "v0.2.6 regrouped colocation as actor+ref and critic+reward", compare("v0.2.5", "v0.2.6")),
    ("*", "--disable_trace_cache", [], "v0.5.4", "display", "--disable_trace_cache was removed in v0.5.5",
     compare("v0.5.4", "v0.5.5")),
    ("*", "--pretrain_data", [], "v0.7.0.post1", "display", "PTX pretraining data was removed in v0.7.1",
     compare("v0.7.0.post1", "v0.7.1")),
]

# -- runtime checks OpenRLHF performs after parsing: where each applies (tags read with `git grep` per tag) ----------
PPO = f"{REPO}/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py"
CHECKS = {
    "colocate_actor_ref_same_gpus": [("v0.2.6", "HEAD", {"needs_kl": "v0.6.1"}, PPO + "#L41-L46")],
    "colocate_critic_reward_same_gpus": [("v0.2.6", "HEAD", {}, PPO + "#L109-L113")],
    "colocate_all_engines_fill_actor": [("v0.5.9", "HEAD", {}, PPO + "#L55-L64")],
    "sample_batches_cover_actors": [("v0.7.2", "HEAD", {}, PPO + "#L711-L717")],
    "estimator_needs_samples": [
        ("v0.5.3", "v0.5.9.post1", {"estimators": ["rloo"]}, f"{REPO}/blob/v0.5.3/openrlhf/cli/train_ppo_ray.py"),
        ("v0.6.0", "v0.10.4", {"estimators": ["rloo", "reinforce_baseline", "group_norm"]},
         f"{REPO}/blob/v0.6.0/openrlhf/cli/train_ppo_ray.py"),
        ("v0.11.0", "HEAD", {"estimators": ["rloo", "reinforce_baseline", "group_norm", "dr_grpo"]},
         PPO + "#L612-L615"),
    ],
    "packing_needs_vllm": [("v0.4.4", "HEAD", {}, PPO + "#L655-L661")],
    "critic_from_reward": [("v0.3.2", "HEAD", {}, PPO + "#L600-L606")],
    "async_forbids_vllm_sleep": [("v0.8.0", "HEAD", {}, PPO + "#L670-L671")],
    "partial_rollout_needs_async": [("v0.9.7", "HEAD", {}, PPO + "#L673-L674")],
    "generate_batch_over_rollout_needs_async": [("v0.10.0", "HEAD", {}, PPO + "#L694-L698")],
    "eval_needs_remote_reward": [
        ("v0.7.0", "v0.10.3", {"agent_ok": False}, f"{REPO}/blob/v0.10.3/openrlhf/cli/train_ppo_ray.py"),
        ("v0.10.4", "HEAD", {"agent_ok": True}, PPO + "#L676-L681"),
    ],
    "dynamic_filtering": [("v0.8.1", "HEAD", {}, PPO + "#L700-L709")],
    "vlm_restrictions": [("v0.10.0", "HEAD", {}, PPO + "#L618-L627")],
    "vllm_sleep_needs_colocate_all": [("v0.5.8", "HEAD", {}, PPO + "#L663-L665")],
    "packing_forces_flash_attention": [("v0.4.4", "HEAD", {}, PPO + "#L655-L660")],
    "ring_attention_forces_packing": [("v0.8.4", "HEAD", {}, PPO + "#L642-L645")],
    "dynamic_batch_forces_packing": [("v0.8.6", "HEAD", {}, PPO + "#L647-L653")],
    "colocate_all_async_only_deepspeed": [("v0.8.0", "HEAD", {}, PPO + "#L667-L668")],
    "deepspeed_batch_divisible": [
        ("v0.0.1", "HEAD", {}, "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/config.py"),
    ],
    "actor_world_power_of_two": [("v0.0.1", "v0.5.5", {}, f"{REPO}/blob/v0.5.5/openrlhf/cli/train_ppo_ray.py")],
    "actor_world_divisible_by_critic": [("v0.0.1", "v0.7.0.post1", {},
                                         f"{REPO}/blob/v0.7.0.post1/openrlhf/cli/train_ppo_ray.py")],
    "zero3_needs_vllm": [("v0.1.0", "v0.7.0.post1", {}, f"{REPO}/issues/441")],
    "actor_world_at_least_engines": [("v0.4.6", "v0.5.0", {}, f"{REPO}/blob/v0.5.0/openrlhf/cli/train_ppo_ray.py")],
    "rollout_batch_divisible_by_actor_world": [("v0.5.5.post1", "v0.7.0.post1", {}, f"{REPO}/issues/760")],
    "actor_world_divisible_by_engines": [("v0.5.5.post1", "v0.7.0.post1", {}, f"{REPO}/issues/760")],
    "ring_attention_needs_packing": [("v0.5.4", "HEAD", {}, f"{REPO}/blob/v0.11.0/openrlhf/cli/train_sft.py#L321-L322")],
    "multiturn_needs_chat_template": [("v0.5.7", "HEAD", {}, f"{REPO}/blob/v0.11.0/openrlhf/cli/train_sft.py#L308-L309")],
    "dual_clip_above_one": [("v0.8.6", "HEAD", {}, f"{REPO}/blob/v0.11.0/openrlhf/models/loss.py#L147-L148")],
}

# canonical (v0.10.2+ dotted) name -> common Settings vocabulary key and how the value maps
VOCABULARY = {
    "*": {
        "ds.zero_stage": ["zero.stage", "value"],
        "ds.param_dtype": ["precision.param_dtype", "value"],
        "bf16": ["precision.param_dtype", "bf16_switch"],
        "ds.grad_accum_dtype": ["precision.grad_accum_dtype", "value"],
        "ds.adam_offload": ["offload.optimizer", "cpu_switch"],
        "ref.offload": ["offload.ref", "value"],
        "reward.offload": ["offload.reward", "value"],
        "train.micro_batch_size": ["batch.micro_train", "value"],
        "train.batch_size": ["batch.train", "value"],
        "rollout.micro_batch_size": ["batch.micro_rollout", "value"],
        "rollout.batch_size": ["batch.rollout", "value"],
        "rollout.n_samples_per_prompt": ["batch.n_samples_per_prompt", "value"],
        "data.max_len": ["seq.max_len", "value"],
        "rollout.max_new_tokens": ["seq.generate_max_len", "value"],
        "prompt_max_len": ["seq.prompt_max_len", "value"],
        "generate_max_len": ["seq.generate_max_len", "value"],
        "actor.gradient_checkpointing_enable": ["train.gradient_checkpointing", "value"],
        "model.gradient_checkpointing_enable": ["train.gradient_checkpointing", "value"],
        "flash_attn": ["train.flash_attn", "value"],
        "ds.attn_implementation": ["train.flash_attn", "flash_in"],
        "ds.packing_samples": ["train.packing", "value"],
        "ds.lora.rank": ["train.lora_rank", "value"],
        "ds.ring_attn_size": ["train.ring_attn_size", "value"],
        "ds.tensor_parallel_size": ["train.tensor_parallel_size", "value"],
        "ds.enable_sleep": ["deepspeed.enable_sleep", "value"],
        "actor.model_name_or_path": ["model.actor.path", "value"],
        "model.model_name_or_path": ["model.actor.path", "value"],
        "critic.model_name_or_path": ["model.critic.path", "value"],
        "reward.model_name_or_path": ["model.reward.path", "value"],
        "ref.model_name_or_path": ["model.ref.path", "value"],
        "reward.remote_url": ["reward.remote_url", "value"],
        "train.colocate_actor_ref": ["topology.colocate_actor_ref", "value"],
        "train.colocate_critic_reward": ["topology.colocate_critic_reward", "value"],
        "train.colocate_all": ["topology.colocate_all", "value"],
        "vllm.num_engines": ["vllm.num_engines", "value"],
        "vllm.tensor_parallel_size": ["vllm.tensor_parallel_size", "value"],
        "vllm.gpu_memory_utilization": ["vllm.gpu_memory_utilization", "value"],
        "vllm.enable_sleep": ["vllm.enable_sleep", "value"],
        "vllm.enforce_eager": ["vllm.enforce_eager", "value"],
        "train.dynamic_batch_enable": ["batch.dynamic", "value"],
        "train.max_tokens_per_gpu": ["batch.max_tokens_per_gpu", "value"],
        "rollout.max_tokens_per_gpu": ["batch.forward_max_tokens_per_gpu", "value"],
        "algo.advantage.estimator": ["algo.advantage_estimator", "value"],
        "train.async_enable": ["train.async", "value"],
    },
    "roles": ["actor", "critic", "ref", "reward"],  # <role>.num_nodes / .num_gpus_per_node -> topology.<role>.*
}

# CLIs without their own v0.10.2 rename rows read renames of the CLI they were cut from
RENAME_FALLBACK = {"train_ppo": "train_ppo_ray", "train_kto": "train_dpo", "train_kd": "train_sft",
                   "train_prm": "train_sft", "batch_inference": "train_sft", "interactive_chat": "train_sft"}

# argparse `required=True` flags (the TSV has no required column): lora_combiner since it exists
REQUIRED = {"lora_combiner": ["--model_path", "--lora_path", "--output_path"]}


def read_tsv(path: str) -> list[list[str]]:
    with open(path, encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if r and not r[0].startswith("#")]
    return rows[1:]  # header


def parse_default(kind: str, text: str):
    if text == "" and kind == "str":
        return ""
    if text == "null":
        return None
    if kind in ("str", "list"):
        return text.replace("\\n", "\n")
    try:
        return json.loads(text)
    except ValueError:
        return text


def build(knowledge: str) -> dict:
    with open(os.path.join(knowledge, "openrlhf_tags.txt"), encoding="utf-8") as fh:
        tags = [t.strip() for t in fh if t.strip()]
    index = {t: i for i, t in enumerate(tags)}

    clis: dict[str, list] = {}
    for cli, flag, dest, action, kind, default, choices, nargs, first, last in read_tsv(
            os.path.join(knowledge, "openrlhf_flag_spans.tsv")):
        choice_list = choices.split(",") if choices else None
        nargs_value = {"": None, "0": 0}.get(nargs, nargs if nargs in ("*", "+", "?") else int(nargs) if nargs else None)
        clis.setdefault(cli, []).append(
            [flag, dest, action, kind, parse_default(kind, default), choice_list, nargs_value, index[first], index[last]])
    for rows in clis.values():
        rows.sort(key=lambda r: (r[0], r[7]))

    renames = []
    for cli, old, new in read_tsv(os.path.join(knowledge, "openrlhf_rename_v0.10.2.tsv")):
        words = [] if new == "REMOVED" else new.split("+")
        renames.append({"cli": [cli], "old": old, "new": words, "last_old": "v0.10.1.post2",
                        "applicability": "safe" if words else "display",
                        "note": "v0.10.2 moved every flag into a dotted namespace" if words
                        else "removed in v0.10.2 without a successor",
                        "dotted": True, "source": RENAME_COMMIT})
    for clis_of, old, new, last_old, applicability, note, source in EARLY_RENAMES:
        renames.append({"cli": clis_of if isinstance(clis_of, list) else ["*"], "old": old, "new": new,
                        "last_old": last_old, "applicability": applicability, "note": note, "dotted": False,
                        "source": source})

    modules = [{"entry": e, "kind": k, "cli": c, "first": f, "last": l, "job_type": j, "source": s}
               for e, k, c, f, l, j, s in MODULES]
    checks = {name: [{"first": f, "last": l, "params": p, "source": s} for f, l, p, s in ranges]
              for name, ranges in CHECKS.items()}
    return {
        "about": "OpenRLHF CLI flags of every release, read off argparse at each tag; tags index 'tags'.",
        # the source of a flag row: its argparse block at the row's first tag (examples/ scripts up to v0.3.5)
        "flag_source": {"module": REPO + "/blob/{tag}/openrlhf/cli/{cli}.py",
                        "script": REPO + "/blob/{tag}/examples/{cli}.py", "scripts_until": "v0.3.5"},
        "flag_columns": ["flag", "dest", "action", "type", "default", "choices", "nargs", "first", "last"],
        "tags": tags,
        "clis": clis,
        "renames": renames,
        "rename_fallback": RENAME_FALLBACK,
        "modules": modules,
        "checks": checks,
        "vocabulary": VOCABULARY,
        "required": REQUIRED,
        "version_defaults": [
            {"key": "precision.grad_accum_dtype", "value": "fp32", "last": "v0.5.3",
             "note": "an unset --grad_accum_dtype meant fp32 in the generated ds_config",
             "source": f"{REPO}/commit/47f7cd8f"},
        ],
    }


def split(data: dict) -> dict[str, dict]:
    """File name -> contents: openrlhf.json holds what every run reads; clis/<cli>.json the flag rows and renames of
    one CLI (a launch names one CLI, so a run parses ~90 KB of the 221 KB; renames of every CLI stay in core)."""
    core = {k: v for k, v in data.items() if k not in ("clis", "renames")}
    core["cli_names"] = sorted(data["clis"])
    core["renames"] = [r for r in data["renames"] if r["cli"] == ["*"]]
    files = {"openrlhf.json": core}
    for cli, rows in sorted(data["clis"].items()):
        files[f"clis/{cli}.json"] = {"flags": rows, "renames": [r for r in data["renames"] if cli in r["cli"]]}
    for cli in {c for r in data["renames"] for c in r["cli"] if c != "*"} - set(data["clis"]):
        raise ValueError(f"renames for {cli}, which has no flag rows")
    return files


def main(argv: list[str]) -> int:
    knowledge = argv[1] if len(argv) > 1 else "/work/shared/knowledge"
    data = build(knowledge)
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "openrlhf")
    os.makedirs(os.path.join(here, "clis"), exist_ok=True)
    for name, contents in split(data).items():
        with open(os.path.join(here, name), "w", encoding="utf-8") as fh:
            json.dump(contents, fh, separators=(",", ":"), sort_keys=False)
            fh.write("\n")
    print(f"wrote {here}: {sum(len(v) for v in data['clis'].values())} flag rows, {len(data['renames'])} renames")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
