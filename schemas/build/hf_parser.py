"""The arguments HfArgumentParser accepts, per release: the fields of transformers' TrainingArguments and of every
TRL dataclass (configs, ScriptArguments, ModelConfig), the dataclasses each of TRL's own training scripts parses,
and LLaMA-Factory's hparams dataclasses with the list `llamafactory-cli train` parses (_TRAIN_ARGS). Read from the release wheels with ``ast`` (nothing is imported or run). Output: schemas/hf/parser_fields.json.

    python -m rlhf_lint.schemas.build --only hf_parser [--releases trl:1.16.0,transformers:5.23.0]

Without --releases: the newest patch of every minor series (TRL from 0.7, transformers from 4.30); every
LLaMA-Factory release from 0.7.
A field is stored with the ranges of releases (indices into the package's release list) that have it.
"""
from __future__ import annotations

import ast
import json
import os
import re

from rlhf_lint.schemas.build.dataclass_parsers import class_bases, dataclass_fields, is_dataclass, script_parser
from rlhf_lint.schemas.build.upstream import newest_patches

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(HERE, "hf", "parser_fields.json")
OLDEST = {"trl": (0, 7), "transformers": (4, 30), "llamafactory": (0, 7)}
BLOB = {"trl": "https://github.com/huggingface/trl/blob/v{version}/{path}",
        "transformers": "https://github.com/huggingface/transformers/blob/v{version}/src/{path}",
        "llamafactory": "https://github.com/hiyouga/LLaMA-Factory/blob/v{version}/src/{path}"}
# where a package's public dataclasses live, most authoritative first: a name defined twice (TRL's vllm_serve.py
# has its own ScriptArguments) keeps the first module's class
MODULES = {
    "trl": (r"trl/trainer/[a-z_0-9]+\.py", r"trl/utils\.py", r"trl/scripts/utils\.py", r"trl/commands/cli_utils\.py",
            r"trl/[a-z_0-9]+\.py", r"trl/experimental/.+\.py"),
    "transformers": (r"transformers/training_args\.py", r"transformers/training_args_seq2seq\.py"),
    "llamafactory": (r"llamafactory/hparams/[a-z_0-9]+\.py",),
}
LF_PARSER = "llamafactory/hparams/parser.py"  # its _TRAIN_ARGS list: the dataclasses `llamafactory-cli train` parses
SCRIPTS = r"trl/(?:scripts|commands/scripts)/(?!utils\.py)([a-z_0-9]+)\.py"  # utils.py holds the parser itself


def release_classes(release, package: str) -> dict[str, dict]:
    """{name: {"fields": [...], "bases": [...], "path": file}} of the release's public dataclasses. A base that
    names transformers' class (imported, or a module-level alias of it: LLaMA-Factory's BaseTrainingArguments) is
    written ``transformers:Name``."""
    out: dict[str, dict] = {}
    for pattern in MODULES[package]:
        for name in release.glob(pattern):
            if re.fullmatch(SCRIPTS, name):
                continue
            tree = _parse(release.read(name))
            imported = _transformers_names(tree) if package == "llamafactory" and tree is not None else {}
            for node in tree.body if tree is not None else []:
                if isinstance(node, ast.ClassDef) and is_dataclass(node) and node.name not in out:
                    bases = [f"transformers:{imported[b]}" if b in imported else b for b in class_bases(node)]
                    out[node.name] = {"fields": dataclass_fields(node), "bases": bases, "path": name}
    return out


def _transformers_names(tree: ast.Module) -> dict[str, str]:
    """{local name: transformers class} a module imports from transformers, and its module-level aliases of them
    (``BaseTrainingArguments = Seq2SeqTrainingArguments``, also inside an if/else at module level)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "transformers":
            out.update({a.asname or a.name: a.name for a in node.names})
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Name) and node.value.id in out:
            out.setdefault(node.targets[0].id, out[node.value.id])
    return out


def train_parser(release) -> list[str] | None:
    """The dataclasses of LLaMA-Factory's ``_TRAIN_ARGS`` list (parser.py): their names, ``transformers:Name``
    for one imported from transformers."""
    if LF_PARSER not in release.names():
        return None
    tree = _parse(release.read(LF_PARSER))
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and getattr(node.targets[0], "id", "") == \
                "_TRAIN_ARGS" and isinstance(node.value, ast.List):
            names = [getattr(e, "id", None) for e in node.value.elts]
            if not all(names):
                return None
            imported = _transformers_names(tree)
            return [f"transformers:{imported[n]}" if n in imported else n for n in names]
    return None


def _minor(version: str) -> tuple[int, int]:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).release[:2]
    except InvalidVersion:
        return (0, 0)


def _parse(text: str):
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _ranges(indices: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in sorted(indices):
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def _package_table(cache, package: str, versions: list[str], log) -> dict:
    from packaging.version import Version

    versions = sorted(versions, key=Version)
    fields: dict[str, dict[str, list[int]]] = {}
    bases: dict[str, dict[str, list[int]]] = {}
    present: dict[str, list[int]] = {}
    paths: dict[str, tuple[str, str]] = {}
    scripts: dict[str, dict[str, list[int]]] = {}
    artifacts = []
    for i, v in enumerate(versions):
        release = cache.release(package, v, "wheel")
        artifacts.append(release.url + " (" + os.path.basename(release.path) + ")")
        classes = release_classes(release, package)
        log(f"  {package} {v}: {len(classes)} dataclasses")
        for name, cls in classes.items():
            present.setdefault(name, []).append(i)
            paths[name] = (v, cls["path"])
            for f in cls["fields"]:
                fields.setdefault(name, {}).setdefault(f, []).append(i)
            bases.setdefault(name, {}).setdefault(",".join(cls["bases"]), []).append(i)
        if package == "llamafactory":
            names = train_parser(release)
            if names is not None:
                scripts.setdefault("train", {}).setdefault(json.dumps(names), []).append(i)
        if package == "trl":
            for path in release.names():
                m = re.fullmatch(SCRIPTS, path)
                tree = _parse(release.read(path)) if m is not None else None
                spec = script_parser(tree) if tree is not None else None
                if spec is not None:
                    key = json.dumps(spec, sort_keys=True)
                    scripts.setdefault(m.group(1), {}).setdefault(key, []).append(i)
    table = {"releases": versions, "artifacts": artifacts, "classes": {}}
    for name in sorted(present):
        version, path = paths[name]
        table["classes"][name] = {
            "source": BLOB[package].format(version=version, path=path),
            "in": _ranges(present[name]),
            "bases": {b: _ranges(ix) for b, ix in bases[name].items()},
            "fields": {f: _ranges(ix) for f, ix in sorted(fields.get(name, {}).items())},
        }
    if package == "trl":
        table["scripts"] = {name: [{"spec": json.loads(k), "in": _ranges(ix)} for k, ix in specs.items()]
                            for name, specs in sorted(scripts.items())}
    if package == "llamafactory":  # the train command's dataclasses (_TRAIN_ARGS), per release
        table["parsers"] = {name: [{"classes": json.loads(k), "in": _ranges(ix)} for k, ix in specs.items()]
                            for name, specs in sorted(scripts.items())}
    return table


def refresh(cache, versions: list[str] | None = None, log=print) -> dict:
    """``versions``: ["trl:1.16.0", "transformers:5.23.0", ...] to limit the releases read."""
    from rlhf_lint.schemas.build.upstream import index_versions

    data = {"note": "Arguments HfArgumentParser accepts: the dataclass fields of transformers' TrainingArguments "
                    "and of TRL's dataclasses per release, and the dataclasses TRL's own scripts parse. Ranges are "
                    "[first, last] indices into the package's releases (newest patch of each minor series).",
            "source": "https://github.com/huggingface/transformers/blob/v4.46.0/src/transformers/hf_argparser.py "
                      "(one flag per dataclass field with init=True; 'Some specified arguments are not used by the "
                      "HfArgumentParser' for the rest)"}
    summary = {"table": "hf/parser_fields.json", "added": 0, "closed": 0, "releases": []}
    for package in ("transformers", "trl", "llamafactory"):
        wanted = [v.split(":", 1)[1] for v in versions or [] if v.startswith(package + ":")]
        if not wanted:
            listed = cache.cached_versions(package) if cache.offline else index_versions(package)
            # LLaMA-Factory adds arguments in patch releases (0.9.0 .. 0.9.5): every release is read
            wanted = newest_patches(listed, OLDEST[package]) if package != "llamafactory" else \
                [v for v in listed if _minor(v) >= OLDEST[package]]
        data[package] = _package_table(cache, package, wanted, log)
        summary["added"] += sum(len(c["fields"]) for c in data[package]["classes"].values())
        summary["releases"] += [f"{package} {v}" for v in wanted]
    with open(TABLE, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(data, fh, indent=0, ensure_ascii=False, separators=(",", ":"))
        fh.write("\n")
    summary["newest"] = ", ".join(f"{p} {data[p]['releases'][-1]}" for p in ("transformers", "trl", "llamafactory"))
    return summary
