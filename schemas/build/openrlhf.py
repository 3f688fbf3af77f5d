"""Build schemas/openrlhf/openrlhf.json and clis/<cli>.json: OpenRLHF CLI flags per release.

The flag rows of a release are read statically off the argparse calls of ``openrlhf/cli/*.py`` in the wheel or sdist
pip serves (``extract_flags``: the ``add_argument`` calls, helper functions that add flags under an f-string prefix
expanded at their call sites). A refresh starts from the committed tables (rows of the older tags were read off
every git tag of OpenRLHF/OpenRLHF, their sources kept) and extends them with each release newer than the newest
tag they cover: a row present in the new release is carried on, one absent is closed at the previous tag, a new flag
or spec opens a row.
Run:  python -m rlhf_lint.schemas.build --only openrlhf   (writes schemas/openrlhf/openrlhf.json and clis/)

The hand-written tables below (entry modules, earlier renames, runtime checks) carry the source of each fact.
"""
from __future__ import annotations

import json
import os

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


# -- static argparse extraction ---------------------------------------------------------------------------------------
CLI_DIR = "openrlhf/cli/"
NOT_CLIS = {"__init__"}
UNKNOWN = object()  # a default the extractor cannot evaluate statically (a call, a name)
TYPE_NAMES = {"int": "int", "float": "float", "str": "str", "bool": "bool"}


def _literal(node, env: dict):
    """The value of an expression made of literals and the helper's string parameters; UNKNOWN otherwise."""
    import ast

    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id in env:
                parts.append(str(env[v.value.id]))
            else:
                return UNKNOWN
        return "".join(parts)
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.IfExp):  # `1e-6 if prefix == "actor" else 9e-6` with prefix known
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
            left, right = _literal(test.left, env), _literal(test.comparators[0], env)
            if left is not UNKNOWN and right is not UNKNOWN:
                chosen = (left == right) == isinstance(test.ops[0], ast.Eq)
                return _literal(node.body if chosen else node.orelse, env)
        return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "float") \
            and len(node.args) == 1 and not node.keywords:
        inner = _literal(node.args[0], env)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return int(inner) if node.func.id == "int" else float(inner)
        return UNKNOWN
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, env), _literal(node.right, env)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return UNKNOWN
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN
    return list(value) if isinstance(value, tuple) else value


def _flag_rows(call, env: dict) -> list[list]:
    """Rows (flag, dest, action, type, default, choices, nargs) of one ``add_argument`` call, one per long option."""
    import ast

    options = [_literal(a, env) for a in call.args]
    if not options or any(not isinstance(o, str) for o in options) or not options[0].startswith("-"):
        return []
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    action = _literal(kw["action"], env) if "action" in kw else "store"
    longs = [o for o in options if o.startswith("--")]
    dest = _literal(kw["dest"], env) if "dest" in kw else (longs or options)[0].lstrip("-").replace("-", "_")
    if action in ("store_true", "store_false"):
        kind, default, nargs = "bool", action == "store_false", 0
        if "default" in kw:
            default = _literal(kw["default"], env)
    else:
        t = kw.get("type")
        kind = TYPE_NAMES.get(t.id, t.id) if isinstance(t, ast.Name) else ("str" if t is None else "any")
        default = _literal(kw["default"], env) if "default" in kw else None
        nargs = _literal(kw["nargs"], env) if "nargs" in kw else None
    choices = _literal(kw["choices"], env) if "choices" in kw else None
    if choices is not None and choices is not UNKNOWN:
        choices = [str(c) for c in choices]
    return [[flag, dest, action, kind, default, choices, nargs] for flag in longs]


def extract_flags(text: str) -> list[list]:
    """Flag rows of one CLI module's source, read with ``ast`` (never imported). ``add_argument`` calls inside a
    helper function whose option strings are f-strings of its parameters are expanded at each call site of that
    helper in the module (OpenRLHF adds ``--actor.adam.lr`` and ``--critic.adam.lr`` through one helper)."""
    import ast

    tree = ast.parse(text)
    helpers: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
                for n in ast.walk(node)) and node.name != "main":
            helpers[node.name] = node

    rows: list[list] = []

    def visit(node, env: dict, depth: int) -> None:
        if isinstance(node, ast.FunctionDef) and node.name in helpers and depth == 0:
            return  # read at its call sites, with its parameters known
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            values = _literal(node.iter, env)
            if isinstance(values, list):  # `for prefix in ("actor", "critic"):` adds the flags once per value
                for value in values:
                    for stmt in node.body:
                        visit(stmt, {**env, node.target.id: value}, depth)
                return
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                rows.extend(_flag_rows(node, env))
                return
            if depth < 3 and isinstance(node.func, ast.Name) and node.func.id in helpers:
                fn = helpers[node.func.id]
                params = [a.arg for a in fn.args.args]
                inner = dict(zip(params, (_literal(a, env) for a in node.args)))
                inner.update({k.arg: _literal(k.value, env) for k in node.keywords if k.arg})
                defaults = fn.args.defaults
                for name, d in zip(params[len(params) - len(defaults):], defaults):
                    inner.setdefault(name, _literal(d, {}))
                for stmt in fn.body:
                    visit(stmt, inner, depth + 1)
                return
        for child in ast.iter_child_nodes(node):
            visit(child, env, depth)

    visit(tree, {}, 0)
    seen: dict[str, list] = {}
    for row in rows:  # a flag added twice would make argparse fail; keep the first
        seen.setdefault(row[0], row)
    return sorted(seen.values())


def release_flags(release) -> dict[str, list[list]]:
    """CLI name -> flag rows of one release (a wheel, an sdist or a checkout folder)."""
    out = {}
    for name in release.names():
        if name.startswith(CLI_DIR) and name.endswith(".py") and name.count("/") == 2:
            cli = name[len(CLI_DIR):-3]
            if cli in NOT_CLIS:
                continue
            rows = extract_flags(release.read(name))
            if rows:
                out[cli] = rows
    return out


# -- the committed tables and their refresh ----------------------------------------------------------------------
def load_tables(here: str) -> dict:
    """The committed tables joined back into one dict (the inverse of ``split``)."""
    with open(os.path.join(here, "openrlhf.json"), encoding="utf-8") as fh:
        core = json.load(fh)
    data = {k: v for k, v in core.items() if k != "cli_names"}
    data["clis"] = {}
    renames: dict[tuple, dict] = {}
    for row in core["renames"]:
        renames[(tuple(row["cli"]), row["old"], tuple(row["new"]), row["last_old"])] = row
    for cli in core["cli_names"]:
        with open(os.path.join(here, "clis", f"{cli}.json"), encoding="utf-8") as fh:
            part = json.load(fh)
        data["clis"][cli] = part["flags"]
        for row in part["renames"]:
            renames.setdefault((tuple(row["cli"]), row["old"], tuple(row["new"]), row["last_old"]), row)
    data["renames"] = list(renames.values())
    return data


def _same_spec(row: list, new: list) -> bool:
    """Does a new release's row carry on an old row? An unevaluated default matches whatever the old one was."""
    return row[1:4] == new[1:4] and row[5:7] == new[5:7] and (new[4] is UNKNOWN or row[4] == new[4])


def extend(data: dict, releases: list[tuple[str, dict]]) -> dict:
    """Add releases (tag, cli -> rows), oldest first, newer than the newest tag of ``data``. "HEAD" is the last tag
    and means "the newest release read, and later": rows alive there are carried into each new release or closed.
    Returns what changed: rows added and closed, and the tags added."""
    tags = [t for t in data["tags"] if t != "HEAD"]
    old_head = data["tags"].index("HEAD") if "HEAD" in data["tags"] else None
    counts = {"added": 0, "closed": 0, "releases": []}
    alive: dict[str, list[list]] = {}
    for cli, rows in data["clis"].items():
        for r in rows:
            if old_head is not None and r[7] == old_head:
                r[7] = len(tags) - 1  # a HEAD-only row: from the newest tag read on
            if r[8] == old_head:
                alive.setdefault(cli, []).append(r)
    for tag, clis in releases:
        if tag in tags:
            continue
        index = len(tags)
        tags.append(tag)
        counts["releases"].append(tag)
        for cli in sorted(set(data["clis"]) | set(clis)):
            rows = data["clis"].setdefault(cli, [])
            new = {r[0]: r for r in clis.get(cli, [])}
            still = []
            for r in alive.get(cli, []):
                n = new.get(r[0])
                if n is not None and _same_spec(r, n):
                    del new[r[0]]
                    still.append(r)
                else:
                    r[8] = index - 1
                    counts["closed"] += 1
            for flag, n in sorted(new.items()):
                default = n[4]
                if default is UNKNOWN:  # an unevaluated default: the previous row's value if any, else null
                    prev = sorted((r for r in rows if r[0] == flag), key=lambda r: r[8])
                    default = prev[-1][4] if prev else None
                row = [flag, n[1], n[2], n[3], default, n[5], n[6], index, None]
                rows.append(row)
                still.append(row)
                counts["added"] += 1
            alive[cli] = still
    head = len(tags)
    data["tags"] = tags + ["HEAD"]
    for rows in alive.values():
        for r in rows:
            r[8] = head
    for rows in data["clis"].values():
        rows.sort(key=lambda r: (r[0], r[7]))
    return counts

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


HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "openrlhf")


def _hand_tables(data: dict) -> None:
    """The facts that are not argparse rows, from the tables above (each with its source)."""
    data["about"] = ("OpenRLHF CLI flags of every release, read off argparse at each tag; tags index 'tags'; "
                     "'HEAD' is the newest release read, and later.")
    data["flag_columns"] = ["flag", "dest", "action", "type", "default", "choices", "nargs", "first", "last"]
    data["modules"] = [{"entry": e, "kind": k, "cli": c, "first": f, "last": l, "job_type": j, "source": s}
                       for e, k, c, f, l, j, s in MODULES]
    data["checks"] = {name: [{"first": f, "last": l, "params": p, "source": s} for f, l, p, s in ranges]
                      for name, ranges in CHECKS.items()}
    data["vocabulary"] = VOCABULARY
    data["required"] = REQUIRED
    data["rename_fallback"] = RENAME_FALLBACK
    renames = [r for r in data["renames"] if r["dotted"]]  # the v0.10.2 namespace rows were read off its diff
    for clis_of, old, new, last_old, applicability, note, source in EARLY_RENAMES:
        renames.append({"cli": clis_of if isinstance(clis_of, list) else ["*"], "old": old, "new": new,
                        "last_old": last_old, "applicability": applicability, "note": note, "dotted": False,
                        "source": source})
    data["renames"] = renames


def refresh(cache, versions: list[str] | None = None, log=print) -> tuple[dict, dict]:
    """The committed tables extended with every release on the index newer than their newest tag (or the given
    ``versions``): (data, summary)."""
    from packaging.version import Version

    from rlhf_lint.schemas.build.upstream import index_versions

    data = load_tables(HERE)
    _hand_tables(data)
    known = [t for t in data["tags"] if t != "HEAD"]
    newest = max(Version(t[1:]) for t in known)
    if versions is None:
        versions = [v for v in (cache.cached_versions("openrlhf") if cache.offline else index_versions("openrlhf"))
                    if Version(v) > newest]
    releases = []
    sources = data.setdefault("tag_sources", {})
    for v in sorted(versions, key=Version):
        release = cache.release("openrlhf", v)
        releases.append(("v" + v, release_flags(release)))
        sources["v" + v] = release.url + " (" + os.path.basename(release.path) + ")"
    counts = extend(data, releases)
    counts["table"] = "openrlhf/clis/*.json"
    counts["newest"] = data["tags"][-2]
    return data, counts


def write(data: dict) -> None:
    os.makedirs(os.path.join(HERE, "clis"), exist_ok=True)
    for name, contents in split(data).items():
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as fh:
            json.dump(contents, fh, separators=(",", ":"), sort_keys=False)
            fh.write("\n")

