"""Generate ds_config.schema.json (JSON Schema 2020-12, for editors) and ds_config_keys.json (what the linter reads)
from ds_config_keys.tsv (DeepSpeed 0.19.6, read by hand) plus the curated facts below, then fold in the facts of
later releases that ``python -m rlhf_lint.schemas.build --only deepspeed`` read off their sdists
(schemas/deepspeed/releases.json).

Run:  python -m rlhf_lint.schemas.build.ds_config
The outputs are committed; tests check they are up to date. Every fact carries the URL or file@commit it comes from.
"""
from __future__ import annotations

import csv
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # schemas/
TSV = os.path.join(HERE, "ds_config_keys.tsv")
SCHEMA_OUT = os.path.join(HERE, "ds_config.schema.json")
KEYS_OUT = os.path.join(HERE, "ds_config_keys.json")
FACTS_OUT = os.path.join(HERE, "deepspeed", "releases.json")  # per-release facts read off the sdists (deepspeed.py)

DS_COMMIT = "edaa7221267243c7be7fb49c5d5f5c4fb97b4641"
DS_VERSION = "0.19.6"
DS_BLOB = f"https://github.com/deepspeedai/DeepSpeed/blob/{DS_COMMIT}/"
HF_DS = "https://github.com/huggingface/transformers/blob/main/src/transformers/integrations/deepspeed.py"
ACC_DC = "https://github.com/huggingface/accelerate/blob/16cb6eb80dd9aa8b4df1a63ef57863e455d53b83/src/accelerate/utils/dataclasses.py"
ACC_ACC = "https://github.com/huggingface/accelerate/blob/16cb6eb80dd9aa8b4df1a63ef57863e455d53b83/src/accelerate/accelerator.py"

# Sections whose members are passed on unchecked (constructor kwargs, dict merges, free-form feature blocks):
# their children are never reported as unknown.
OPEN_SECTIONS = {
    "amp": "kwargs to apex amp.initialize (" + DS_BLOB + "deepspeed/runtime/config.py)",
    "optimizer.params": "kwargs to the optimizer constructor (" + DS_BLOB + "deepspeed/runtime/engine.py)",
    "scheduler.params": "kwargs to the LR scheduler constructor (" + DS_BLOB + "deepspeed/runtime/lr_schedules.py)",
    "pipeline": "dict merge, any key accepted (" + DS_BLOB + "deepspeed/runtime/config.py)",
    "sparse_attention": "sub-keys depend on mode (" + DS_BLOB + "deepspeed/runtime/config.py)",
    "compression_training": DS_BLOB + "deepspeed/compression/config.py",
    "curriculum_learning": DS_BLOB + "deepspeed/runtime/data_pipeline/config.py",
    "data_efficiency": DS_BLOB + "deepspeed/runtime/data_pipeline/config.py",
    "expert_parallel": DS_BLOB + "deepspeed/module_inject/auto_ep_config.py",
    "quantize_training": DS_BLOB + "deepspeed/runtime/config.py",
    "datastates_ckpt": DS_BLOB + "deepspeed/datastates/config.py",
    "autotuning.model_info": DS_BLOB + "deepspeed/autotuning/config.py",
    "autotuning.arg_mappings": DS_BLOB + "deepspeed/autotuning/config.py",
    "checkpoint.parallel_write": DS_BLOB + "deepspeed/runtime/config.py",
}

# Sections DeepSpeed parses with pydantic only from a given release on (before: dict.get, typos ignored).
STRICT_SINCE = {
    "fp16": ("0.17.1", "https://github.com/deepspeedai/DeepSpeed/pull/6976"),
    "bf16": ("0.17.1", "https://github.com/deepspeedai/DeepSpeed/pull/6976"),
    "bfloat16": ("0.17.1", "https://github.com/deepspeedai/DeepSpeed/pull/6976"),
}

# Deprecated keys. fix: how the linter rewrites them ("rename" to replacement, "offload_device" turns
# `true` into {"device": "cpu"}, "delete" removes a key that has no effect) and whether that keeps the meaning.
DEPRECATED = {
    "zero_optimization.cpu_offload": {
        "replacement": "zero_optimization.offload_optimizer", "fix": "offload_device", "applicability": "safe",
        "message": "deprecated: use \"offload_optimizer\": {\"device\": \"cpu\"}",
        "source": DS_BLOB + "deepspeed/runtime/zero/config.py"},
    "zero_optimization.cpu_offload_param": {
        "replacement": "zero_optimization.offload_param", "fix": "offload_device", "applicability": "safe",
        "message": "deprecated: use \"offload_param\": {\"device\": \"cpu\"}",
        "source": DS_BLOB + "deepspeed/runtime/zero/config.py"},
    "zero_optimization.cpu_offload_use_pin_memory": {
        "replacement": None, "fix": "delete", "applicability": "safe",
        "message": "deprecated and has no effect: DeepSpeed does not forward its value; set \"pin_memory\" inside "
                   "offload_optimizer / offload_param instead",
        "source": DS_BLOB + "deepspeed/runtime/zero/config.py"},
    "zero_optimization.stage3_gather_fp16_weights_on_model_save": {
        "replacement": "zero_optimization.stage3_gather_16bit_weights_on_model_save", "fix": "rename",
        "applicability": "safe", "message": "deprecated name of stage3_gather_16bit_weights_on_model_save",
        "source": DS_BLOB + "deepspeed/runtime/zero/config.py"},
    "bfloat16": {
        "replacement": "bf16", "fix": "rename", "applicability": "safe",
        "message": "legacy name of \"bf16\" (read only when \"bf16\" is absent)",
        "source": DS_BLOB + "deepspeed/runtime/precision_config.py"},
    "aio.thread_count": {
        "replacement": "aio.intra_op_parallelism", "fix": "rename", "applicability": "unsafe",
        "since": "0.16.4",
        "message": "renamed to intra_op_parallelism in DeepSpeed 0.16.4; the old key is silently ignored",
        "source": "https://github.com/deepspeedai/DeepSpeed/pull/7056"},
    "allgather_size": {
        "replacement": "zero_optimization.allgather_bucket_size", "fix": None, "applicability": None,
        "message": "read only with the deprecated boolean form of zero_optimization; use "
                   "zero_optimization.allgather_bucket_size",
        "source": DS_BLOB + "deepspeed/runtime/zero/config.py"},
    "zero_optimization.legacy_stage1": {
        "replacement": None, "fix": None, "applicability": None, "error_if_true": True,
        "message": "the legacy ZeRO-1 implementation was removed in DeepSpeed 0.5.9: true raises at initialize()",
        "source": DS_BLOB + "deepspeed/runtime/engine.py"},
}

# Keys people write (from docs or old configs) that the code rejects, with what to write instead.
REJECTED = {
    "zero_optimization.grad_hooks": {
        "suggest": None,
        "message": "listed in DeepSpeed's docs but not a field since the pydantic ZeRO config (v0.7.0): "
                   "ValidationError at start-up; delete it",
        "source": "https://github.com/deepspeedai/DeepSpeed/issues/1302"},
    "bf16.check_overflow": {
        "suggest": "check_grad_overflow",
        "message": "shown in DeepSpeed's BFLOAT16_FORMAT string but the field is check_grad_overflow",
        "source": DS_BLOB + "deepspeed/runtime/constants.py"},
}

# Keys HF Trainer (HfTrainerDeepSpeedConfig) and accelerate fill when their value is "auto".
AUTO_FILL = {
    "hf_trainer": {
        "source": HF_DS,
        "keys": ["train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size",
                 "gradient_clipping", "optimizer.params.lr", "optimizer.params.betas", "optimizer.params.eps",
                 "optimizer.params.weight_decay", "scheduler.params.warmup_min_lr", "scheduler.params.warmup_max_lr",
                 "scheduler.params.warmup_num_steps", "scheduler.params.total_num_steps", "fp16.enabled",
                 "bf16.enabled", "amp.enabled", "amp.opt_level", "zero_optimization.reduce_bucket_size",
                 "zero_optimization.stage3_prefetch_bucket_size",
                 "zero_optimization.stage3_param_persistence_threshold"],
    },
    "accelerate": {
        "source": ACC_DC + " ; " + ACC_ACC,
        "keys": ["train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size",
                 "gradient_clipping", "fp16.enabled", "bf16.enabled", "zero_optimization.stage",
                 "zero_optimization.offload_optimizer.device", "zero_optimization.offload_param.device",
                 "zero_optimization.offload_optimizer.nvme_path", "zero_optimization.offload_param.nvme_path",
                 "zero_optimization.stage3_gather_16bit_weights_on_model_save",
                 "zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
                 "zero_optimization.stage3_param_persistence_threshold", "optimizer.params.lr",
                 "optimizer.params.weight_decay", "scheduler.params.warmup_min_lr",
                 "scheduler.params.warmup_max_lr", "scheduler.params.warmup_num_steps",
                 "scheduler.params.total_num_steps"],
    },
}

# DeepSpeed's own optimizer names (case-insensitive) that ZeRO-Offload accepts from the config.
DS_OPTIMIZERS = {
    "names": ["adagrad", "adam", "adamw", "lamb", "onebitadam", "zerooneadam", "onebitlamb", "muadam", "muadamw",
              "musgd", "lion", "muon"],
    "offload_capable": ["adam", "adamw", "adagrad", "lion"],
    "source": DS_BLOB + "deepspeed/runtime/engine.py (_configure_basic_optimizer)",
}

VERSION_FACTS = [
    {"key": "gradient_clipping", "what": "default 0.0 -> 1.0", "since": "0.19.3",
     "source": "https://github.com/deepspeedai/DeepSpeed/pull/8068"},
    {"key": "bf16.check_grad_overflow", "what": "default False -> True", "since": "0.19.3",
     "source": "https://github.com/deepspeedai/DeepSpeed/pull/8035"},
    {"key": "zero_optimization.offload_optimizer.pin_memory", "what": "default False -> True", "since": "0.19.5",
     "source": "https://github.com/deepspeedai/DeepSpeed/pull/8207"},
    {"key": "zero_optimization.offload_param.pin_memory", "what": "default False -> True", "since": "0.19.5",
     "source": "https://github.com/deepspeedai/DeepSpeed/pull/8207"},
    {"key": "fp16", "what": "dict.get -> pydantic extra=forbid (typos error, \"auto\" dropped)", "since": "0.17.1",
     "source": "https://github.com/deepspeedai/DeepSpeed/pull/6976"},
    {"key": "bf16", "what": "dict.get -> pydantic extra=forbid (typos error, \"auto\" dropped)", "since": "0.17.1",
     "source": "https://github.com/deepspeedai/DeepSpeed/pull/6976"},
    {"key": "*int", "what": "pydantic v2: a float with a fractional part is an error for int fields", "since": "0.15.0",
     "source": "https://github.com/deepspeedai/DeepSpeed/pull/5167"},
    {"key": "steps_per_print", "what": "default 10 -> None", "since": "0.15.2",
     "source": "https://github.com/deepspeedai/DeepSpeed/pull/6602"},
]


def _default(text: str):
    text = text.strip()
    if text in ("", "-", "(absent)"):
        return "__absent__"
    text = re.sub(r"\s*\(.*\)$", "", text).strip()
    if text == "sys.maxsize":
        return sys.maxsize
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    if text[:1] in "'\"" and text[-1:] == text[:1]:
        return text[1:-1]
    for conv in (int, float):
        try:
            value = conv(text)
            return int(value) if isinstance(value, float) and value.is_integer() and "e" in text else value
        except ValueError:
            pass
    try:
        return json.loads(text)
    except ValueError:
        return text


def _type(tsv_type: str, allowed: str) -> dict:
    t = tsv_type.strip()
    nullable = "None" in t or t.startswith("Optional")
    enum = None
    m = re.search(r"enum\{([^}]*)\}", allowed) or re.fullmatch(r"\{([^}]*)\}(?: case-insensitive)?", allowed.strip())
    if m:
        enum = [v.strip() for v in m.group(1).split(",")]
    base = re.sub(r"Optional\[(.*)\]", r"\1", t).replace("|None", "")
    if base.startswith("enum"):
        kind = "enum"
    elif base == "bool":
        kind = "bool"
    elif base == "int":
        kind = "int"
    elif base == "float":
        kind = "float"
    elif base in ("str", "Path"):
        kind = "enum" if enum else "str"
    elif base.lower().startswith(("list", "list[")) or base.startswith("List"):
        kind = "list"
    elif base in ("dict", "Dict", "Dict[str, Any]") or base.startswith(("Deep", "TPConfig", "ZenFlow")):
        kind = "dict"
    else:
        kind = "any"
    out = {"type": kind, "nullable": nullable}
    if enum and kind in ("enum", "str"):
        out["enum"] = [int(v) if v.isdigit() else v for v in enum]
        out["type"] = "enum"
    if "case-insensitive" in allowed:
        out["case_insensitive"] = True
    for op, name in ((">=", "minimum"), ("<=", "maximum")):
        mm = re.search(re.escape(op) + r"(-?[0-9.]+)", allowed)
        if mm:
            out[name] = float(mm.group(1)) if "." in mm.group(1) else int(mm.group(1))
    if re.fullmatch(r">0", allowed.strip()):
        out["exclusive_minimum"] = 0
    return out


def _mode(parse_mode: str) -> str:
    if parse_mode.startswith("pydantic"):
        return "strict"
    if parse_mode.startswith("kwargs") or parse_mode.startswith("dict-merge"):
        return "open"
    return "lenient"


def read_rows() -> list[dict]:
    with open(TSV, encoding="utf-8") as fh:
        lines = [line for line in fh if not line.startswith("#")]
    return [row for row in csv.DictReader(lines, delimiter="\t") if row.get("path")]


def build() -> tuple[dict, dict]:
    rows = read_rows()
    keys: dict[str, dict] = {}
    aliases: dict[str, str] = {}  # bare field name path -> canonical path
    for row in rows:
        path = row["path"].strip()
        if path.endswith(".*") or " " in path:
            continue  # "amp.*" and "zero_optimization (bool form)": described in sections/deprecated instead
        entry = _type(row["type"], row["allowed_or_constraints"])
        default = _default(row["default"])
        if default != "__absent__":
            entry["default"] = default
        entry["mode"] = _mode(row["parse_mode"])
        if "validated" in row["parse_mode"]:
            entry["validated"] = True  # dict.get, but DeepSpeed checks the value at start-up
        entry["source"] = DS_BLOB + row["source_file"].split(" ")[0].split(";")[0]
        for col in ("version_notes", "notes"):
            if row.get(col, "").strip():
                entry[col] = row[col].strip()
        keys[path] = entry
        m = re.search(r"alias: '([^']+)' \(canonical JSON key\) and field name '([^']+)'", row["deprecated_or_alias"])
        if m:
            section = path.rsplit(".", 1)[0]
            aliases[f"{section}.{m.group(2)}"] = path
    for path in DEPRECATED:
        keys.setdefault(path, {"type": "any", "nullable": True, "mode": "lenient",
                               "source": DEPRECATED[path]["source"]})
        keys[path]["deprecated"] = True
    for path, entry in keys.items():
        if path in DEPRECATED or "DEPRECATED" in next((r["deprecated_or_alias"] for r in rows if r["path"] == path), ""):
            entry["deprecated"] = True

    # sections: every path that has children, plus the top level ""
    sections: dict[str, dict] = {"": {"mode": "lenient", "source": DS_BLOB + "deepspeed/runtime/config.py"}}
    for path in list(keys):
        parts = path.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            child_mode = keys[path]["mode"] if i == len(parts) - 1 else None
            sec = sections.setdefault(parent, {"mode": None, "source": keys[path]["source"]})
            if child_mode == "strict":
                sec["mode"] = "strict"
            elif sec["mode"] is None and child_mode is not None:
                sec["mode"] = "lenient"
    for parent, sec in sections.items():
        if sec["mode"] is None:
            sec["mode"] = "lenient"
    for parent, why in OPEN_SECTIONS.items():
        sections[parent] = {"mode": "open", "source": why}
    for parent, (since, src) in STRICT_SINCE.items():
        sections.setdefault(parent, {"mode": "strict", "source": src})
        sections[parent].update({"strict_since": since, "strict_since_source": src})
    sections["bfloat16"]["same_as"] = "bf16"
    for path in list(keys):
        if path in sections:
            keys[path]["type"] = "dict"  # a section is an object even when the TSV types it as Optional[Model]

    data = {
        "$comment": "Generated by `python -m rlhf_lint.schemas.build.ds_config` from schemas/ds_config_keys.tsv "
                    "(0.19.6) and schemas/deepspeed/releases.json (later releases); do not edit.",
        "deepspeed": {"commit": DS_COMMIT, "version": DS_VERSION,
                      "source": f"https://github.com/deepspeedai/DeepSpeed/tree/{DS_COMMIT}"},
        "sections": dict(sorted(sections.items())),
        "keys": dict(sorted(keys.items())),
        "aliases": dict(sorted(aliases.items())),
        "deprecated": DEPRECATED,
        "rejected": REJECTED,
        "auto_fill": AUTO_FILL,
        "optimizers": DS_OPTIMIZERS,
        "version_facts": VERSION_FACTS,
    }
    fold_releases(data)
    return build_schema(data), data


_RELEASE_FILE = "https://github.com/deepspeedai/DeepSpeed/blob/v{version}/{path}"


def read_tsv_version() -> str:
    return DS_VERSION


def extend(data: dict, version: str, facts: dict, base: bool = False) -> dict:
    """Fold one release's facts into the keys table; returns rows added and closed. ``base``: the release the
    table was read from (a field found there that the table lacks gets no ``since``: it may be older)."""
    added = closed = 0
    keys = data["keys"]
    aliases = data.get("aliases", {})
    for section, info in facts["sections"].items():
        source = _RELEASE_FILE.format(version=version, path=info["file"])
        names = set(info["fields"]) | {f"{v['field']}" for v in info["fields"].values()}
        for key, field in info["fields"].items():
            path = f"{section}.{key}"
            if path in keys:
                if keys[path].get("removed_in"):  # back again
                    keys[path].pop("removed_in")
                    added += 1
                continue
            if f"{section}.{field['field']}" in aliases or path in data["sections"]:
                continue
            row = {"type": field["type"], "nullable": field["nullable"], "mode": "strict", "source": source}
            if not base:
                row["since"] = version
            if "default" in field:
                row["default"] = field["default"]
            if field.get("deprecated"):
                row["deprecated"] = True
            keys[path] = row
            added += 1
        for path, row in list(keys.items()):
            parent, _, name = path.rpartition(".")
            if parent != section or row.get("mode") != "strict" or row.get("removed_in") or path in data["sections"]:
                continue
            if name not in names and not row.get("deprecated"):
                row["removed_in"] = version
                row["removed_source"] = source
                closed += 1
    removed = data.setdefault("removed", {})
    for path, info in facts["removed"].items():
        if path in removed:
            continue
        removed[path] = {"since": version, "raises": "DeepSpeedConfigError", "message": info["message"],
                         "source": _RELEASE_FILE.format(version=version, path="deepspeed/runtime/config.py")}
        added += 1
        if path in keys and not keys[path].get("removed_in"):
            keys[path]["removed_in"] = version
            keys[path]["removed_source"] = removed[path]["source"]
            closed += 1
    return {"added": added, "closed": closed}


def _version_key(version: str):
    from packaging.version import Version

    return Version(version)


def _older(version: str) -> bool:
    from packaging.version import Version

    return Version(version) < Version(DS_VERSION)


def backfill(data: dict, older: dict[str, dict]) -> dict:
    """Fold releases older than the TSV's (``older``: version -> facts, any order): a strict key gets as ``since``
    the first release of its unbroken run up to the TSV's release when an older release read had the section's
    model without the field; a field only older releases had becomes a row with ``since`` (when not in the oldest
    read) and ``removed_in`` (the first release read without it), each with its source. A release that lacks the
    section's model says nothing about its keys (the section was not validated there): its section gets
    ``model_since``, its keys stay as they are. Returns rows added and closed."""
    from packaging.version import Version

    order = sorted(older, key=Version)
    if not order:
        return {"added": 0, "closed": 0}
    keys, aliases, sections = data["keys"], data.get("aliases", {}), data["sections"]
    fields: dict[str, dict[str, tuple[dict, str]]] = {}  # path -> version -> (field, file)
    models: dict[str, list[str]] = {}  # section -> releases whose model was found
    for v in order:
        for section, info in older[v]["sections"].items():
            models.setdefault(section, []).append(v)
            for key, field in info["fields"].items():
                path = f"{section}.{key}"
                path = aliases.get(f"{section}.{field['field']}", path) if path not in keys else path
                fields.setdefault(path, {})[v] = (field, info["file"])
    added = closed = 0
    with open(os.path.join(HERE, "ds_config_section_eras.json"), encoding="utf-8") as fh:
        with_eras = set(json.load(fh)) - {"$comment"}  # sections whose eras were read by hand, per release
    for section, found in models.items():
        sec = sections.get(section)
        if section in with_eras:
            continue
        if sec is not None and found[0] != order[0] and found != order[order.index(found[0]):]:
            continue  # the model came and went: say nothing
        if sec is not None and found[0] != order[0]:
            sec["model_since"] = found[0]
            sec["model_since_source"] = _RELEASE_FILE.format(version=found[0], path=older[found[0]]["sections"][section]["file"])
    for path, row in keys.items():
        section = path.rpartition(".")[0]
        if section not in models or row.get("mode") != "strict" or path in sections or row.get("deprecated"):
            continue
        had = fields.get(path, {})
        since, certain = DS_VERSION, False
        for v in reversed(order):  # newest first: the run of releases up to the TSV's that had the field
            if v in had:
                since = v
                continue
            certain = v in models[section]  # the model was there without the field: the key is newer
            break
        if certain:
            row["since"] = since
            row["since_source"] = (_RELEASE_FILE.format(version=since, path=had[since][1]) if since in had
                                   else data["deepspeed"]["source"])
            added += 1
    for path, had in fields.items():
        if path in keys or path in sections:
            continue
        section = path.rpartition(".")[0]
        if section not in sections:
            continue  # a section the table does not know (a removed feature): its keys are not judged
        last = max(had, key=Version)
        nxt = [v for v in order if Version(v) > Version(last)]
        if any(v not in models[section] for v in nxt):
            continue  # the model went away: whether the key is refused after is not known
        start = last
        for v in reversed(order[: order.index(last)]):
            if v not in had:
                break
            start = v
        field, file = had[last]
        row = {"type": field["type"], "nullable": field["nullable"], "mode": "strict",
               "source": _RELEASE_FILE.format(version=last, path=file)}
        if start != order[0]:
            row["since"] = start
        if "default" in field:
            row["default"] = field["default"]
        row["removed_in"] = nxt[0] if nxt else DS_VERSION
        row["removed_source"] = (_RELEASE_FILE.format(version=nxt[0], path=older[nxt[0]]["sections"][section]["file"])
                                 if nxt else data["deepspeed"]["source"])
        keys[path] = row
        added += 1
        closed += 1
    return {"added": added, "closed": closed}


def fold_top_level(data: dict, stored: dict[str, dict]) -> dict:
    """Top-level keys ``runtime/config.py`` of some release read reads with dict.get / get_scalar_param that the
    table lacks: a lenient row each, with ``since`` (when not in the oldest release read) and ``removed_in`` (the
    first release read after its last one that does not read it). Returns rows added and closed."""
    from packaging.version import Version

    order = sorted(stored, key=Version)
    known = set(data["keys"]) | set(data["sections"]) | set(data.get("aliases", {})) | set(data.get("deprecated", {}))
    seen: dict[str, list[str]] = {}
    for v in order:
        for key in stored[v].get("top_level", []):
            if key not in known:
                seen.setdefault(key, []).append(v)
    added = closed = 0
    for key, had in sorted(seen.items()):
        last = had[-1]
        start = last
        for v in reversed(order[: order.index(last)]):
            if v not in had:
                break
            start = v
        row = {"type": "any", "nullable": True, "mode": "lenient",
               "source": _RELEASE_FILE.format(version=last, path="deepspeed/runtime/config.py")}
        if start != order[0]:
            row["since"] = start
        later = order[order.index(last) + 1:]
        if later:
            row["removed_in"] = later[0]
            row["removed_source"] = _RELEASE_FILE.format(version=later[0], path="deepspeed/runtime/config.py")
            closed += 1
        data["keys"][key] = row
        added += 1
    return {"added": added, "closed": closed}


def diff_keys(before: dict, after: dict) -> dict:
    """What a refresh changed in ds_config_keys.json: rows added (keys and refused keys), rows closed (a
    ``removed_in`` set), rows bounded (a ``since`` set on a row that had none), releases added."""
    old_keys, new_keys = before.get("keys", {}), after.get("keys", {})
    added = sorted(set(new_keys) - set(old_keys)) + sorted(set(after.get("removed", {})) - set(before.get("removed", {})))
    closed = sorted(k for k, v in new_keys.items() if v.get("removed_in") and not old_keys.get(k, {}).get("removed_in"))
    bounded = sorted(k for k, v in new_keys.items() if k in old_keys and v.get("since") and not old_keys[k].get("since"))
    releases = [v for v in after.get("deepspeed", {}).get("releases", [])
                if v not in before.get("deepspeed", {}).get("releases", [])]
    return {"table": "ds_config_keys.json", "added": len(added), "closed": len(closed), "bounded": len(bounded),
            "releases": releases, "newest": after.get("deepspeed", {}).get("version"),
            "rows": {"added": added, "closed": closed, "bounded": bounded}}


def load_facts() -> dict:
    """schemas/deepspeed/releases.json with each ``{"same_as": V}`` (a section, or the top-level keys, unchanged
    since release V) expanded."""
    with open(FACTS_OUT, encoding="utf-8") as fh:
        stored = json.load(fh)
    releases = stored["releases"]
    for facts in releases.values():
        for name, section in list(facts.get("sections", {}).items()):
            if isinstance(section, dict) and "same_as" in section:
                facts["sections"][name] = releases[section["same_as"]]["sections"][name]
        top = facts.get("top_level")
        if isinstance(top, dict) and "same_as" in top:
            facts["top_level"] = releases[top["same_as"]]["top_level"]
    return stored


def save_facts(stored: dict) -> None:
    """Write the per-release facts compactly: a section (or the top-level key list) equal to the previous
    release's is written as ``{"same_as": V}``, V the release that holds it in full."""
    from packaging.version import Version

    out = {k: v for k, v in stored.items() if k != "releases"}
    out["releases"] = {}
    full: dict = {}  # section -> (release holding it in full, its value)
    for version in sorted(stored["releases"], key=Version):
        facts = dict(stored["releases"][version])
        sections = {}
        for name, section in facts.get("sections", {}).items():
            held = full.get(name)
            if held is not None and held[1] == section:
                sections[name] = {"same_as": held[0]}
            else:
                sections[name] = section
                full[name] = (version, section)
        facts["sections"] = sections
        if "top_level" in facts:
            held = full.get(" top_level")
            if held is not None and held[1] == facts["top_level"]:
                facts["top_level"] = {"same_as": held[0]}
            else:
                full[" top_level"] = (version, facts["top_level"])
        out["releases"][version] = facts
    os.makedirs(os.path.dirname(FACTS_OUT), exist_ok=True)
    with open(FACTS_OUT, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(out, fh, indent=1, ensure_ascii=False)
        fh.write("\n")


def fold_releases(data: dict) -> dict:
    """Fold schemas/deepspeed/releases.json (written by ``python -m rlhf_lint.schemas.build --only deepspeed``) into
    the keys read off the TSV: returns rows added and closed by the releases after the TSV's."""
    total = {"added": 0, "closed": 0}
    releases, sources = [DS_VERSION], {DS_VERSION: data["deepspeed"]["source"]}
    data.setdefault("removed", {})
    if os.path.exists(FACTS_OUT):
        stored = load_facts()["releases"]
        older = {v: f for v, f in stored.items() if _older(v)}
        counts = backfill(data, older)
        total["added"] += counts["added"]
        total["closed"] += counts["closed"]
        releases[:0] = sorted(older, key=_version_key)
        sources.update({v: older[v]["source"] for v in older})
        for version, facts in stored.items():
            if version in older:
                continue
            counts = extend(data, version, facts, base=version == DS_VERSION)
            if version != DS_VERSION:
                total["added"] += counts["added"]
                total["closed"] += counts["closed"]
                releases.append(version)
                sources[version] = facts["source"]
        counts = fold_top_level(data, stored)
        total["added"] += counts["added"]
        total["closed"] += counts["closed"]
    data["deepspeed"].update({"version": releases[-1], "releases": releases, "release_sources": sources})
    data["keys"] = dict(sorted(data["keys"].items()))
    data["removed"] = dict(sorted(data["removed"].items()))
    total["newest"] = releases[-1]
    return total


# -- JSON Schema -----------------------------------------------------------------------------------------------
def _describe(path: str, entry: dict) -> str:
    mode = {"strict": "Validated at start-up: an unknown key or a wrong type is an error.",
            "lenient": "Read with dict.get: DeepSpeed does not check it.",
            "open": "Passed on unchecked."}[entry.get("mode", "lenient")]
    parts = [mode]
    if entry.get("version_notes"):
        parts.append(f"Versions: {entry['version_notes']}.")
    if entry.get("notes"):
        parts.append(f"Note: {entry['notes']}.")
    parts.append(f"Source: {entry['source']}")
    return " ".join(parts)


def _value_schema(path: str, entry: dict, auto_ok: bool) -> dict:
    kind = entry["type"]
    s: dict = {}
    if kind == "bool":
        s["type"] = "boolean"
    elif kind == "int":
        s["type"] = "integer"
    elif kind == "float":
        s["type"] = "number"
    elif kind == "str":
        s["type"] = "string"
    elif kind == "list":
        s["type"] = "array"
    elif kind == "dict":
        s["type"] = "object"
    elif kind == "enum" and entry.get("case_insensitive"):
        s["type"] = "string"
        s["examples"] = list(entry["enum"])
    elif kind == "enum":
        s["enum"] = list(entry["enum"])
    for k in ("minimum", "maximum"):
        if k in entry and kind in ("int", "float"):
            s[k] = entry[k]
    if "exclusive_minimum" in entry and kind in ("int", "float"):
        s["exclusiveMinimum"] = entry["exclusive_minimum"]
    if entry.get("nullable") and s:
        s = {"anyOf": [s, {"type": "null"}]}
    if auto_ok and s:
        s = {"anyOf": [s, {"const": "auto"}]}
    if "default" in entry and entry["default"] is not None and isinstance(entry["default"], (bool, int, float, str, list, dict)):
        s["default"] = entry["default"]
    s["description"] = _describe(path, entry)
    if entry.get("deprecated"):
        s["deprecated"] = True
    return s


def build_schema(data: dict) -> dict:
    auto = set(data["auto_fill"]["hf_trainer"]["keys"]) | set(data["auto_fill"]["accelerate"]["keys"])
    nodes: dict[str, dict] = {}

    def node(path: str) -> dict:
        if path not in nodes:
            sec = data["sections"].get(path, {"mode": "open"})
            n: dict = {"type": "object", "properties": {}}
            if sec["mode"] == "strict" and "strict_since" not in sec:
                n["additionalProperties"] = False
            n["description"] = {"strict": "Validated by DeepSpeed (pydantic, extra=forbid): unknown keys are errors.",
                                "lenient": "Read with dict.get: unknown keys are silently ignored.",
                                "open": "Passed on unchecked."}[sec["mode"]] + f" Source: {sec['source']}"
            nodes[path] = n
            if path:
                parent, _, name = path.rpartition(".")
                node(parent)["properties"][name] = n
        return nodes[path]

    root = node("")
    for path in sorted(data["sections"]):
        node(path)
    for path, entry in data["keys"].items():
        parent, _, name = path.rpartition(".")
        if path in data["sections"]:
            n = node(path)
            if entry.get("deprecated"):
                n["deprecated"] = True
            continue
        node(parent)["properties"][name] = _value_schema(path, entry, path in auto)
    for bare, canonical in data["aliases"].items():
        parent, _, name = bare.rpartition(".")
        target = data["keys"][canonical]
        s = _value_schema(canonical, target, canonical in auto)
        s["description"] = f"Field name of {canonical.rpartition('.')[2]} (same setting; never give both). " + s["description"]
        node(parent)["properties"][name] = s
    # zero_optimization also accepts a deprecated boolean
    zero = root["properties"]["zero_optimization"]
    root["properties"]["zero_optimization"] = {"anyOf": [zero, {"type": "boolean", "deprecated": True,
                                               "description": "Deprecated boolean form: true means stage 1."}]}
    root["properties"]["bfloat16"] = {"$ref": "#/properties/bf16", "deprecated": True,
                                      "description": "Legacy name of bf16, read only when bf16 is absent."}
    root.update({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/rlhf-lint/rlhf-lint/schemas/ds_config.schema.json",
        "title": f"DeepSpeed configuration (ds_config), DeepSpeed {DS_VERSION}",
    })
    ordered = {k: root[k] for k in ("$schema", "$id", "title", "description", "type", "properties")}
    return ordered


def main() -> dict:
    """Write both files; returns what the releases after the TSV's changed (rows added and closed, newest)."""
    schema, data = build()
    for path, obj in ((SCHEMA_OUT, schema), (KEYS_OUT, data)):
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            json.dump(obj, fh, indent=1, sort_keys=False, ensure_ascii=False)
            fh.write("\n")
    return {"added": sum(1 for v in data["keys"].values() if v.get("since"))
            + sum(1 for v in data["removed"].values() if v["since"] != DS_VERSION),
            "closed": sum(1 for v in data["keys"].values() if v.get("removed_in")),
            "newest": data["deepspeed"]["version"]}


if __name__ == "__main__":
    main()
