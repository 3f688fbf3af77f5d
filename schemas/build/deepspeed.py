"""DeepSpeed ds_config keys per release, read statically from the sdist pip serves: the fields of its pydantic
config models (``class X(DeepSpeedConfigModel)``: annotated class attributes, ``Field(alias=...)``, inherited
fields) and the keys ``runtime/config.py`` refuses at start-up because a release removed their feature
(``_REMOVED_*_CONFIG_KEYS``, raised as DeepSpeedConfigError by ``_reject_removed_config_keys`` even when the block
is disabled; DeepSpeed 0.19.7 on, deepspeedai/DeepSpeed#8489).

The refresh extends ``schemas/ds_config_keys.json`` (built by ``ds_config.py`` from the hand-read 0.19.6 TSV) with
every newer release: a field new in a model becomes a key with ``since``, a field a model dropped gets
``removed_in``, and each refused key a ``removed`` row; ``deepspeed.releases`` lists the releases covered and
``deepspeed.version`` the newest. Run:  python -m rlhf_lint.schemas.build --only deepspeed
"""
from __future__ import annotations

import ast
import json
import os

from rlhf_lint.schemas.build.ds_config import (
    KEYS_OUT, diff_keys, extend, load_facts, main as write_tables, read_tsv_version, save_facts,
)
from rlhf_lint.schemas.build.upstream import top_level_classes

# Where each strict (pydantic) section's model is: the section path -> class name. The class is looked up in the
# release (its file is found by the extractor), so a renamed or removed model is reported, not guessed.
# Source: deepspeed/runtime/config.py (DeepSpeedConfig._initialize_params) of each release.
MODEL_OF_SECTION = {
    "zero_optimization": "DeepSpeedZeroConfig",
    "zero_optimization.offload_optimizer": "DeepSpeedZeroOffloadOptimizerConfig",
    "zero_optimization.offload_param": "DeepSpeedZeroOffloadParamConfig",
    "zero_optimization.leaf_module": "DeepSpeedZeroLeafModuleConfig",
    "zero_optimization.zenflow": "ZenFlowConfig",
    "bf16": "DeepSpeedBF16Config",
    "fp16": "DeepSpeedFP16Config",
    "comet": "CometConfig",
    "comms_logger": "CommsLoggerConfig",
    "compile": "CompileConfig",
    "csv_monitor": "CSVConfig",
    "hybrid_engine": "HybridEngineConfig",
    "tensor_parallel": "TPTrainingConfig",
    "tensor_parallel.tp": "TPConfig",
    "tensorboard": "TensorBoardConfig",
    "timers.throughput": "DeepSpeedThroughputTimerConfig",
    "wandb": "WandbConfig",
    "weight_quantization": "WeightQuantConfig",
}
ROOT_MODEL = "DeepSpeedConfigModel"


def _const(node, env: dict):
    """A literal, a module-level string constant, or an f-string of those; None when not static."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            value = _const(v.value if isinstance(v, ast.FormattedValue) else v, env)
            if value is None:
                return None
            parts.append(str(value))
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _const(node.left, env), _const(node.right, env)
        return a + b if isinstance(a, str) and isinstance(b, str) else None
    return None


def _kind(annotation: str) -> dict:
    """The table's type of a field from its annotation text: bool/int/float/str/dict/list, else any."""
    text = annotation.replace("typing.", "")
    nullable = "Optional[" in text or "None" in text
    inner = text[len("Optional["):-1] if text.startswith("Optional[") else text.replace("| None", "").strip()
    kind = {"bool": "bool", "int": "int", "float": "float", "str": "str"}.get(inner)
    if kind is None:
        head = inner.split("[")[0].lower()
        kind = "dict" if head == "dict" else "list" if head == "list" else "any"
    return {"type": kind, "nullable": nullable or kind == "any"}


def model_classes(files: dict[str, str]) -> dict[str, dict]:
    """class name -> {"file", "bases", "fields": {json key: {"field", "default"?, "deprecated"?}}} of every class
    in ``files`` (path -> source); fields of a base class in the same set are inherited."""
    classes: dict[str, dict] = {}
    for path, text in files.items():
        for node in top_level_classes(text):
            fields = {}
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                        and stmt.targets[0].id not in ("model_config", "Config"):
                    # pydantic v1 (DeepSpeed < 0.15) takes an un-annotated attribute with a default as a field
                    stmt = ast.AnnAssign(target=stmt.targets[0], annotation=ast.Name("Any"), value=stmt.value, simple=1)
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                name = stmt.target.id
                if name.startswith("_") or "ClassVar" in ast.unparse(stmt.annotation):
                    continue
                info: dict = {"field": name, **_kind(ast.unparse(stmt.annotation))}
                key = name
                value = stmt.value
                if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "Field":
                    kw = {k.arg: k.value for k in value.keywords if k.arg}
                    alias = _const(kw["alias"], {}) if "alias" in kw else None
                    if isinstance(alias, str):
                        key = alias
                    extra = kw.get("json_schema_extra")
                    if "deprecated" in kw or (isinstance(extra, ast.Dict) and any(
                            _const(k, {}) == "deprecated" for k in extra.keys)):
                        info["deprecated"] = True
                    value = value.args[0] if value.args else kw.get("default")
                if value is not None:
                    try:
                        info["default"] = ast.literal_eval(value)
                    except (ValueError, TypeError, SyntaxError):
                        pass
                fields[key] = info
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
            classes.setdefault(node.name, {"file": path, "bases": bases, "fields": fields})
    for name in list(classes):
        seen, todo, merged = set(), list(classes[name]["bases"]), {}
        while todo:
            base = todo.pop()
            if base in seen or base not in classes:
                continue
            seen.add(base)
            merged = {**classes[base]["fields"], **merged}
            todo.extend(classes[base]["bases"])
        classes[name]["all_fields"] = {**merged, **classes[name]["fields"]}
    return classes


def removed_keys(text: str) -> dict[str, dict]:
    """Keys ``runtime/config.py`` refuses as removed: path -> {"message"}. The section of each ``_REMOVED_*`` dict
    is read off ``_reject_removed_config_keys``: a loop testing ``key in param_dict`` is the top level, one testing
    ``key in x`` where ``x = param_dict.get("section")`` is that section."""
    tree = ast.parse(text)
    env: dict = {}
    tables: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            value = _const(node.value, env)
            if isinstance(value, str):
                env[name] = value
            elif isinstance(node.value, ast.Dict) and name.startswith("_REMOVED"):
                tables[name] = {k: _const(v, env) or "" for k, v in
                                ((_const(k, env), v) for k, v in zip(node.value.keys, node.value.values))
                                if isinstance(k, str)}
    sections: dict[str, str] = {}
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("_reject")):
        local: dict[str, str] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and len(n.targets) == 1 \
                    and isinstance(n.targets[0], ast.Name) and getattr(n.value.func, "attr", "") == "get" \
                    and n.value.args and isinstance(_const(n.value.args[0], env), str):
                local[n.targets[0].id] = _const(n.value.args[0], env)
        for n in ast.walk(fn):
            if isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and isinstance(n.iter.func, ast.Attribute) \
                    and isinstance(n.iter.func.value, ast.Name) and n.iter.func.value.id in tables:
                for test in ast.walk(n):
                    if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.In) \
                            and isinstance(test.comparators[0], ast.Name):
                        holder = test.comparators[0].id
                        sections[n.iter.func.value.id] = local.get(holder, "") if holder != fn.args.args[0].arg \
                            else ""
    out = {}
    for table, keys in tables.items():
        if table not in sections:
            continue  # a table the reject function does not read is not refused
        for key, message in keys.items():
            out[f"{sections[table]}.{key}" if sections[table] else key] = {"message": message}
    return out


READERS = ("get_scalar_param", "get_dict_param", "get_list_param")


def _module_file(current: str, module: str | None, level: int) -> str:
    """The file of ``from <level dots><module> import *`` in ``current`` (a path inside the sdist)."""
    parts = current.split("/")[:-1]
    if level:
        parts = parts[: len(parts) - (level - 1)]
    else:
        parts = []
    return "/".join(parts + (module.split(".") if module else [])) + ".py"


def _string_env(files: dict[str, str], name: str = "deepspeed/runtime/config.py", depth: int = 0) -> dict[str, str]:
    """The module-level string constants ``name`` sees, as Python binds them: its ``from X import *`` in order (a
    later one overrides), then its own assignments (the last one counts)."""
    env: dict[str, str] = {}
    try:
        tree = ast.parse(files.get(name, ""))
    except SyntaxError:
        return env
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) and depth < 3:
            target = _module_file(name, node.module, node.level)
            if target in files:
                env.update(_string_env(files, target, depth + 1))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _const(node.value, env)
            if isinstance(value, str):
                env[node.targets[0].id] = value
    return env


def top_level_keys(text: str, env: dict[str, str]) -> list[str]:
    """Top-level ds_config keys ``runtime/config.py`` reads without a model: ``get_scalar_param(param_dict, K, ..)``
    (and get_dict_param / get_list_param), ``param_dict.get(K)``, ``param_dict[K]``, ``K in param_dict``, in the
    functions that get the whole config: the config class's methods, and the functions they (or those) pass
    ``param_dict`` to."""
    tree = ast.parse(text)
    found: set[str] = set()
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    methods = [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, ast.FunctionDef)]

    def is_whole(node) -> bool:
        return (isinstance(node, ast.Name) and node.id == "param_dict") or \
            (isinstance(node, ast.Attribute) and node.attr == "_param_dict")

    whole, todo = set(), list(methods)
    while todo:
        fn = todo.pop()
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions \
                    and node.func.id not in whole and node.args and is_whole(node.args[0]):
                whole.add(node.func.id)
                todo.append(functions[node.func.id])
    for fn in methods + [functions[n] for n in sorted(whole)]:
        local = dict(env)
        args = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
        for arg, default in zip(args, fn.args.defaults):  # get_communication_data_type(param_dict, comm_type=K)
            value = _const(default, env)
            if isinstance(value, str):
                local[arg.arg] = value
        for node in ast.walk(fn):
            key = None
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if name in READERS and len(node.args) >= 2 and is_whole(node.args[0]):
                    key = node.args[1]
                elif name == "get" and isinstance(node.func, ast.Attribute) and is_whole(node.func.value) and node.args:
                    key = node.args[0]
            elif isinstance(node, ast.Subscript) and is_whole(node.value):
                key = node.slice
            elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
                holder = node.comparators[0]
                if isinstance(holder, ast.Call) and getattr(holder.func, "attr", "") == "keys":
                    holder = holder.func.value
                if is_whole(holder):
                    key = node.left
            value = _const(key, local) if key is not None else None
            if isinstance(value, str) and value:
                found.add(value)
    return sorted(found)


def release_facts(release) -> dict:
    """{"sections": path -> {"fields": {...}, "file"}, "removed": path -> {...}, "missing_models": [...]}."""
    files = {n: release.read(n) for n in release.names()
             if n.startswith("deepspeed/") and n.endswith(".py") and ("config" in n or "monitor" in n or n.endswith("constants.py"))}
    classes = model_classes(files)
    sections, missing = {}, []
    for path, cls in MODEL_OF_SECTION.items():
        if cls not in classes:
            missing.append(f"{path} ({cls})")
            continue
        sections[path] = {"fields": classes[cls]["all_fields"], "file": classes[cls]["file"]}
    config = "deepspeed/runtime/config.py"
    removed = removed_keys(files[config]) if config in files else {}
    top = top_level_keys(files[config], _string_env(files, config)) if config in files else []
    return {"sections": sections, "removed": removed, "top_level": top, "missing_models": missing}


def refresh(cache, versions: list[str] | None = None, log=print) -> dict:
    """Read the table's own release and every newer one (or ``versions``) into schemas/deepspeed/releases.json,
    then rebuild ds_config_keys.json and the schema from the TSV plus those facts (``ds_config.build``)."""
    from packaging.version import Version

    from rlhf_lint.schemas.build.upstream import index_versions

    base = read_tsv_version()
    try:
        stored = load_facts()
    except OSError:
        stored = {"base": base, "releases": {}}
    if versions is None:
        listed = cache.cached_versions("deepspeed") if cache.offline else index_versions("deepspeed")
        versions = [v for v in listed if Version(v) >= Version(base)]
    already = set(stored["releases"])
    with open(KEYS_OUT, encoding="utf-8") as fh:
        before = json.load(fh)
    for v in sorted(set(versions), key=Version):
        release = cache.release("deepspeed", v, "sdist")
        facts = release_facts(release)
        for missing in facts.pop("missing_models"):
            log(f"  deepspeed {v}: no model for section {missing}; its keys are left as they were")
        facts["source"] = release.url + " (" + os.path.basename(release.path) + ")"
        stored["releases"][v] = facts
    stored["releases"] = dict(sorted(stored["releases"].items(), key=lambda kv: Version(kv[0])))
    save_facts(stored)
    write_tables()
    with open(KEYS_OUT, encoding="utf-8") as fh:
        summary = diff_keys(before, json.load(fh))  # what this run changed, row by row
    summary.pop("rows")
    return summary
