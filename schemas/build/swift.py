"""ms-swift's launch defaults, per release: the defaults of the argument fields that size memory for `swift sft` /
`swift pt` (TrainArguments in 3.x, SftArguments from 4.0) and `swift rlhf` (RLHFArguments), resolved through the
dataclasses' bases in Python's method resolution order, and the facts of the DeepSpeed / FSDP presets `--deepspeed
zero3` and `--fsdp fsdp2` name (swift/llm/ds_config/*.json in 3.x, swift/config/*.json from 4.0). Read with ``ast``
and ``json`` from a git mirror of modelscope/ms-swift (``git show TAG:path``: nothing is imported or run).
`megatron sft` / `megatron rlhf` (MegatronTrainArguments or MegatronSftArguments, MegatronRLHFArguments) get
their own rows: tensor / pipeline / expert parallel sizes, recompute, distributed optimizer, batch sizes.
Output: schemas/swift/releases.json.

    python -m rlhf_lint.schemas.build --only swift --swift-source /path/to/ms-swift.git [--releases 3.2.2,4.5.2]

Without --releases: the newest patch of every minor series from 3.0 on among the mirror's tags.
"""
from __future__ import annotations

import ast
import json
import os
import re

from rlhf_lint.schemas.build.upstream import git

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(HERE, "swift", "releases.json")
BLOB = "https://github.com/modelscope/ms-swift/blob/v{version}/{path}"
OLDEST = (3, 0)

# the fields read (the launch reader maps them to settings: schemas/swift/arguments.json)
FIELDS = ("train_type", "tuner_type", "lora_rank", "target_modules", "per_device_train_batch_size",
          "gradient_accumulation_steps", "gradient_checkpointing", "max_length", "packing", "padding_free",
          "torch_dtype", "attn_impl", "use_liger_kernel", "sequence_parallel_size", "quant_method", "quant_bits",
          "use_galore", "bf16", "fp16", "rlhf_type", "beta", "max_completion_length", "num_generations",
          "use_vllm", "vllm_mode", "vllm_gpu_memory_utilization", "freeze_vit")
# the argument class of each command (3.x name first)
COMMANDS = {"sft": ("TrainArguments", "SftArguments"), "rlhf": ("RLHFArguments",)}
# `megatron sft|pt|rlhf`: the Megatron-Core path's fields that size memory (layout, recompute, optimizer, batch)
MEGATRON_FIELDS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                   "expert_model_parallel_size", "expert_tensor_parallel_size", "sequence_parallel",
                   "virtual_pipeline_model_parallel_size", "use_distributed_optimizer", "recompute_granularity",
                   "recompute_method", "recompute_num_layers", "micro_batch_size", "global_batch_size",
                   "optimizer_cpu_offload", "optimizer_offload_fraction", "main_grads_dtype", "padding_free",
                   "packing", "max_length", "train_type", "tuner_type", "lora_rank", "target_modules", "torch_dtype",
                   "bf16", "fp16", "rlhf_type", "optimizer", "mtp_num_layers", "freeze_vit", "task_type",
                   "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers")
# the HF path's tuner defaults (BaseArguments: train_type 'lora') say nothing of Megatron-SWIFT, which trained every
# parameter until its own MegatronTunerMixin (3.7)
HF_ONLY_TUNER = ("train_type", "tuner_type", "lora_rank", "target_modules")
MEGATRON_COMMANDS = {"sft": ("MegatronTrainArguments", "MegatronSftArguments"), "rlhf": ("MegatronRLHFArguments",)}
PRESET_DIRS = ("swift/llm/ds_config", "swift/config")
# the ZeRO sizes of a preset the memory estimate reads (a number, or "auto" for accelerate to fill)
PRESET_SIZES = ("reduce_bucket_size", "stage3_prefetch_bucket_size", "sub_group_size", "stage3_max_live_parameters")


def newest_patches(tags: list[str]) -> list[str]:
    """The newest patch of each minor series from OLDEST on, among tags like v3.2.2 (post releases left out)."""
    from rlhf_lint.schemas.build.upstream import newest_patches as newest

    return newest([t[1:] for t in tags if re.fullmatch(r"v\d+\.\d+\.\d+", t)], OLDEST)


def _default(value: ast.AST):
    """``= 8``, ``= field(default=8)``, ``= field(default_factory=lambda: ['all-linear'])``; ... when not literal."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "field":
        kw = {k.arg: k.value for k in value.keywords}
        if "default" in kw:
            value = kw["default"]
        elif isinstance(kw.get("default_factory"), ast.Lambda):
            value = kw["default_factory"].body
        else:
            return ...
    try:
        out = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError):
        return ...
    return out if isinstance(out, (str, int, float, bool, list, type(None))) else ...


def classes_of(text: str, path: str) -> dict[str, dict]:
    """{class: {"bases", "fields": {name: (default, line)}, "path"}} of the top-level classes of one file."""
    out = {}
    tree = ast.parse(text)
    # a base imported from outside ms-swift (transformers' Seq2SeqTrainingArguments) is not ms-swift's class of
    # the same name
    external = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 0
                and not (n.module or "").startswith("swift") for a in n.names}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields = {}
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                fields[stmt.target.id] = (_default(stmt.value), stmt.lineno)
        bases = [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]
        bases = [f"{b} (external)" if b in external else b for b in bases]
        out[node.name] = {"bases": bases, "fields": fields, "path": path}
    return out


def mro(classes: dict, name: str) -> list[str]:
    """C3 linearisation over the classes the release defines (a base it does not define ends the chain there)."""
    cls = classes.get(name)
    if cls is None:
        return [name]
    seqs = [mro(classes, b) for b in cls["bases"]] + [list(cls["bases"])]
    out = [name]
    while any(seqs):
        seqs = [s for s in seqs if s]
        for s in seqs:
            head = s[0]
            if not any(head in t[1:] for t in seqs):
                break
        else:
            raise ValueError(f"no C3 order for {name}")
        out.append(head)
        seqs = [t[1:] if t and t[0] == head else t for t in seqs]
    return out


def _argument_files(gitdir: str, tag: str, megatron: bool = False) -> list[str]:
    """The argument files of the HF Trainer path, or with ``megatron`` those of swift/megatron/argument(s)/ first
    (their classes derive from the HF path's BaseArguments, read after them)."""
    names = git(gitdir, "ls-tree", "-r", "--name-only", tag, "swift").splitlines()
    plain = [n for n in names if n.endswith(".py") and "megatron" not in n and (
        "/argument/" in n or n.startswith("swift/arguments/") or re.search(r"/(rlhf_)?arguments\.py$|args_mixin\.py$", n))]
    if not megatron:
        return plain
    return [n for n in names if n.endswith(".py") and re.match(r"swift/megatron/arguments?/", n)] + plain


def _command_rows(gitdir: str, version: str, commands: dict, wanted: tuple, megatron: bool = False) -> dict:
    tag = f"v{version}"
    classes: dict[str, dict] = {}
    for path in _argument_files(gitdir, tag, megatron):
        for name, cls in classes_of(git(gitdir, "show", f"{tag}:{path}"), path).items():
            classes.setdefault(name, cls)  # the first definition (argument folders sort before trainers)
    out = {}
    for command, names in commands.items():
        name = next((n for n in names if n in classes), None)
        if name is None:
            continue
        fields = {}
        for cls_name in mro(classes, name):
            cls = classes.get(cls_name)
            for field_name, (default, line) in (cls["fields"].items() if cls else ()):
                if field_name in wanted and field_name not in fields and default is not ... and \
                        not (megatron and field_name in HF_ONLY_TUNER and not cls_name.startswith("Megatron")):
                    fields[field_name] = {"default": default, "class": cls_name,
                                          "source": BLOB.format(version=version, path=cls["path"]) + f"#L{line}"}
        out[command] = {"class": name, "fields": dict(sorted(fields.items()))}
    return out


def extract(gitdir: str, version: str) -> dict:
    row: dict = {"tag": f"v{version}", "commands": _command_rows(gitdir, version, COMMANDS, FIELDS)}
    megatron = _command_rows(gitdir, version, MEGATRON_COMMANDS, MEGATRON_FIELDS, megatron=True)
    if megatron:
        row["megatron_commands"] = megatron
    row["deepspeed_presets"], row["fsdp_presets"] = presets(gitdir, version)
    return row


def presets(gitdir: str, version: str) -> tuple[dict, dict]:
    """The ZeRO stage, offload devices and their pin_memory of each shipped ds_config, and the FSDP options of each
    FSDP preset."""
    tag = f"v{version}"
    names = git(gitdir, "ls-tree", "-r", "--name-only", tag, "swift").splitlines()
    ds, fsdp = {}, {}
    for path in sorted(n for n in names if os.path.dirname(n) in PRESET_DIRS and n.endswith(".json")):
        try:
            data = json.loads(git(gitdir, "show", f"{tag}:{path}"))
        except ValueError:
            continue
        source = BLOB.format(version=version, path=path)
        preset = os.path.splitext(os.path.basename(path))[0]
        zero = data.get("zero_optimization")
        if isinstance(zero, dict):
            ds[preset] = {"stage": zero.get("stage", 0),
                          "offload_optimizer": (zero.get("offload_optimizer") or {}).get("device", "none"),
                          "offload_param": (zero.get("offload_param") or {}).get("device", "none"),
                          "overlap_comm": zero.get("overlap_comm"),
                          **{k: zero[k] for k in PRESET_SIZES if isinstance(zero.get(k), (int, float, str))},
                          **{f"offload_{part}_pin_memory": zero[f"offload_{part}"]["pin_memory"]
                             for part in ("optimizer", "param") if isinstance(zero.get(f"offload_{part}"), dict)
                             and isinstance(zero[f"offload_{part}"].get("pin_memory"), bool)},
                          "source": source}
        elif "fsdp" in data:
            cfg = data.get("fsdp_config") or {}
            fsdp[preset] = {"fsdp": data["fsdp"], "fsdp_version": cfg.get("fsdp_version", 2),
                            "activation_checkpointing": cfg.get("activation_checkpointing"),
                            "reshard_after_forward": cfg.get("reshard_after_forward"), "source": source}
    return ds, fsdp


def refresh(gitdir: str, releases: list[str] | None, log) -> dict:
    if not gitdir:
        raise ValueError("no --swift-source git directory")
    wanted = releases or newest_patches(git(gitdir, "tag").split())
    try:
        with open(TABLE, encoding="utf-8") as fh:
            table = json.load(fh)
    except FileNotFoundError:
        table = {}
    rows = table.get("releases", {})
    added = [v for v in wanted if v not in rows]
    for version in wanted:
        log(f"  ms-swift {version}")
        rows[version] = extract(gitdir, version)
    order = sorted(rows, key=lambda v: tuple(int(p) for p in v.split(".")))
    table = {
        "note": "ms-swift argument defaults per release (schemas/build/swift.py: the dataclass fields of the `swift "
                "sft`/`pt` argument class (TrainArguments in 3.x, SftArguments from 4.0) and of RLHFArguments, "
                "through their bases in MRO order; for `megatron sft`/`rlhf` those of the Megatron argument "
                "classes), and the DeepSpeed / FSDP presets the releases ship. Read by rlhf_lint.frameworks.swift for what a launch leaves unset. A field with a non-literal default is "
                "left out.",
        "repository": "https://github.com/modelscope/ms-swift",
        "releases": {v: rows[v] for v in order},
    }
    os.makedirs(os.path.dirname(TABLE), exist_ok=True)
    with open(TABLE, "w", encoding="utf-8") as fh:
        json.dump(table, fh, indent=1)
        fh.write("\n")
    return {"table": "swift/releases.json", "releases": added, "added": len(added), "newest": order[-1]}
