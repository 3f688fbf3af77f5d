"""ms-swift's launch defaults, per release: the defaults of the argument fields that size memory for `swift sft` /
`swift pt` (TrainArguments in 3.x, SftArguments from 4.0) and `swift rlhf` (RLHFArguments), resolved through the
dataclasses' bases in Python's method resolution order, and the facts of the DeepSpeed / FSDP presets `--deepspeed
zero3` and `--fsdp fsdp2` name (swift/llm/ds_config/*.json in 3.x, swift/config/*.json from 4.0). Read with ``ast``
and ``json`` from a git mirror of modelscope/ms-swift (``git show TAG:path``), or, for a release the mirror has no
tag of (or without a mirror), from the release wheel pip fetches into the cache: nothing is imported or run.
`megatron sft` / `megatron rlhf` (MegatronTrainArguments or MegatronSftArguments, MegatronRLHFArguments) get
their own rows: tensor / pipeline / expert parallel sizes, recompute, distributed optimizer, batch sizes.
Output: schemas/swift/releases.json.

    python -m rlhf_lint.schemas.build --only swift [--swift-source /path/to/ms-swift.git] [--releases 3.2.2,4.6.0]

Without --releases: the newest patch of every minor series from 3.0 on among the mirror's tags and the releases
on the package index.
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


class GitTag:
    """One release read from a git mirror at its tag."""

    def __init__(self, gitdir: str, version: str):
        self.gitdir, self.version, self.tag = gitdir, version, f"v{version}"

    def names(self) -> list[str]:
        return git(self.gitdir, "ls-tree", "-r", "--name-only", self.tag, "swift").splitlines()

    def read(self, path: str) -> str:
        return git(self.gitdir, "show", f"{self.tag}:{path}")

    def source(self, path: str) -> str:
        return BLOB.format(version=self.version, path=path)


class Wheel:
    """One release read from its wheel (a release the mirror has no tag of)."""

    def __init__(self, release):
        self.release, self.version = release, release.version

    def names(self) -> list[str]:
        return [n for n in self.release.names() if n.startswith("swift/")]

    def read(self, path: str) -> str:
        return self.release.read(path)

    def source(self, path: str) -> str:
        return f"{self.release.url} ({os.path.basename(self.release.path)}) {path}"


def _argument_files(release, megatron: bool = False) -> list[str]:
    """The argument files of the HF Trainer path, or with ``megatron`` those of swift/megatron/argument(s)/ first
    (their classes derive from the HF path's BaseArguments, read after them)."""
    names = release.names()
    plain = [n for n in names if n.endswith(".py") and "megatron" not in n and (
        "/argument/" in n or n.startswith("swift/arguments/") or re.search(r"/(rlhf_)?arguments\.py$|args_mixin\.py$", n))]
    if not megatron:
        return plain
    return [n for n in names if n.endswith(".py") and re.match(r"swift/megatron/arguments?/", n)] + plain


def _command_rows(release, commands: dict, wanted: tuple, megatron: bool = False) -> dict:
    classes: dict[str, dict] = {}
    for path in _argument_files(release, megatron):
        for name, cls in classes_of(release.read(path), path).items():
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
                                          "source": release.source(cls["path"]) + f"#L{line}"}
        out[command] = {"class": name, "fields": dict(sorted(fields.items()))}
    return out


def extract(release) -> dict:
    """The row of one release (a GitTag or a Wheel)."""
    row: dict = {"tag": f"v{release.version}", "commands": _command_rows(release, COMMANDS, FIELDS)}
    megatron = _command_rows(release, MEGATRON_COMMANDS, MEGATRON_FIELDS, megatron=True)
    if megatron:
        row["megatron_commands"] = megatron
    row["deepspeed_presets"], row["fsdp_presets"] = presets(release)
    return row


def presets(release) -> tuple[dict, dict]:
    """The ZeRO stage, offload devices and their pin_memory of each shipped ds_config, and the FSDP options of each
    FSDP preset."""
    ds, fsdp = {}, {}
    for path in sorted(n for n in release.names() if os.path.dirname(n) in PRESET_DIRS and n.endswith(".json")):
        try:
            data = json.loads(release.read(path))
        except ValueError:
            continue
        source = release.source(path)
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


def refresh(gitdir: str | None, releases: list[str] | None, log, cache=None) -> dict:
    """Each release from the mirror's tag when ``gitdir`` has it, else from its wheel (``cache``)."""
    from rlhf_lint.schemas.build.upstream import index_versions

    tags = set(git(gitdir, "tag").split()) if gitdir else set()
    if releases:
        wanted = releases
    else:
        listed = [f"v{v}" for v in (cache.cached_versions("ms-swift") if cache.offline else
                                    index_versions("ms-swift"))] if cache is not None else []
        wanted = newest_patches(sorted(tags | set(listed)))
    if not gitdir and cache is None:
        raise ValueError("neither a --swift-source git directory nor a release cache")
    try:
        with open(TABLE, encoding="utf-8") as fh:
            table = json.load(fh)
    except FileNotFoundError:
        table = {}
    rows = table.get("releases", {})
    added = [v for v in wanted if v not in rows]
    for version in wanted:
        from_tag = f"v{version}" in tags
        log(f"  ms-swift {version}" + ("" if from_tag else " (wheel)"))
        rows[version] = extract(GitTag(gitdir, version) if from_tag else
                                Wheel(cache.release("ms-swift", version, "wheel")))
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
