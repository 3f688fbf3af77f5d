"""TRL's trainer configs, per release: the defaults of the fields that size memory (batch, lengths, gradient
checkpointing, bf16, generation) for every config class, read from the release's wheel with ``ast`` (nothing is
imported or run). A config inherits TRL's own base classes (``_BaseConfig`` from 1.x) and, for what no TRL class
sets, TrainingArguments' defaults (TRAINING_ARGUMENTS below). Output: schemas/hf/trl_config_defaults.json.

    python -m rlhf_lint.schemas.build --only trl [--releases 0.16.1,1.9.0]

Without --releases: the newest patch of every minor series from 0.7 on, as the package index lists them.
"""
from __future__ import annotations

import ast
import json
import os

from rlhf_lint.schemas.build.upstream import newest_patches, top_level_classes

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(HERE, "hf", "trl_config_defaults.json")
FIELDS = os.path.join(HERE, "hf", "training_args.json")
BLOB = "https://github.com/huggingface/trl/blob/v{version}/{path}"
OLDEST = (0, 7)

# TrainingArguments' own defaults of the fields read here: the same in every transformers release since 4.0
TRAINING_ARGUMENTS = {
    "source": "https://github.com/huggingface/transformers/blob/v4.46.0/src/transformers/training_args.py "
              "(per_device_train_batch_size 8, gradient_checkpointing False, bf16 False, fp16 False)",
    "defaults": {"per_device_train_batch_size": 8, "gradient_checkpointing": False, "bf16": False, "fp16": False},
}
# TRL's __post_init__ turns bf16=None into "not fp16" (trl/trainer/sft_config.py at v0.20.0, base_config.py in 1.x)
BF16_UNLESS_FP16 = "unless fp16"


def _default(value: ast.AST):
    """A field's default: ``= 8`` or ``= field(default=8, ...)``; a default_factory or an expression is skipped."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "field":
        value = next((kw.value for kw in value.keywords if kw.arg == "default"), None)
        if value is None:
            return ...
    if isinstance(value, ast.Constant) and isinstance(value.value, (str, int, float, bool, type(None))):
        return value.value
    return ...


def release_classes(release, wanted: set[str]) -> dict[str, dict]:
    """{class: {"bases": [...], "fields": {name: default}, "path": file}} of every config class in trl/trainer/."""
    classes = {}
    for name in release.glob(r"trl/trainer/[a-z_]*config\.py"):
        for node in top_level_classes(release.read(name)):
            fields = {}
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None \
                        and stmt.target.id in wanted:
                    value = _default(stmt.value)
                    if value is not ...:
                        fields[stmt.target.id] = value
            bases = [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]
            classes[node.name] = {"bases": bases, "fields": fields, "path": name}
    return classes


def resolve(classes: dict, name: str, seen=()) -> dict | None:
    """The defaults of ``name``: its own fields over its TRL bases' over TrainingArguments'; None when it does not
    derive from TrainingArguments."""
    cls = classes.get(name)
    if cls is None or name in seen:
        return None
    merged: dict | None = None
    for base in cls["bases"]:
        if base in ("TrainingArguments", "Seq2SeqTrainingArguments"):
            merged = dict(TRAINING_ARGUMENTS["defaults"])
        else:
            inherited = resolve(classes, base, seen + (name,))
            if inherited is not None:
                merged = inherited
        if merged is not None:
            break
    if merged is None:
        return None
    merged.update(cls["fields"])
    if merged.get("bf16", False) is None:
        merged["bf16"] = BF16_UNLESS_FP16
    return merged


def release_defaults(release, wanted: set[str]) -> dict:
    classes = release_classes(release, wanted)
    out = {}
    for name, cls in sorted(classes.items()):
        if not name.endswith("Config") or name.startswith("_"):
            continue
        defaults = resolve(classes, name)
        if defaults is not None:
            out[name] = {"source": BLOB.format(version=release.version, path=cls["path"]), "defaults": defaults}
    return out


def refresh(cache, versions: list[str] | None = None, log=print) -> dict:
    from packaging.version import Version
    from rlhf_lint.schemas.build.upstream import index_versions

    with open(FIELDS, encoding="utf-8") as fh:
        wanted = set(json.load(fh)["fields"]) | set(TRAINING_ARGUMENTS["defaults"])
    data = {"note": "TRL config defaults per release, of the fields training_args.json maps (a field a release "
                    "lacks is absent); 'unless fp16' is bf16=None, which TRL's __post_init__ turns into not fp16",
            "training_arguments": TRAINING_ARGUMENTS, "releases": {}}
    if os.path.exists(TABLE):
        with open(TABLE, encoding="utf-8") as fh:
            data = json.load(fh)
    if versions is None:
        listed = cache.cached_versions("trl") if cache.offline else index_versions("trl")
        versions = newest_patches(listed, OLDEST)
    summary = {"table": "hf/trl_config_defaults.json", "added": 0, "closed": 0, "releases": []}
    for v in sorted(versions, key=Version):
        release = cache.release("trl", v, "wheel")
        found = release_defaults(release, wanted)
        if not found:
            log(f"  trl {v}: no TrainingArguments config class; skipped")
            continue
        summary["added"] += sum(len(c["defaults"]) for c in found.values())
        data["releases"][v] = {"artifact": release.url + " (" + os.path.basename(release.path) + ")",
                               "classes": found}
        summary["releases"].append(v)
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda kv: Version(kv[0])))
    with open(TABLE, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(data, fh, indent=0, ensure_ascii=False)
        fh.write("\n")
    summary["newest"] = max(data["releases"], key=Version) if data["releases"] else None
    return summary
