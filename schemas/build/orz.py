"""Open-Reasoner-Zero's BasePPOExpConfig defaults (schemas/orz/base_defaults.json), read with ``ast`` from a git
checkout (ORZ is not on the package index): the dataclass fields of ``BasePPOExpConfig``
(orz/exps/examples/ppo/ppo_base_exp.py) after those of its base ``BaseConfig`` (orz/exps/base_exp.py), in dataclass
order (an overridden field keeps its base position). A field whose default is not a literal has no ``default``.
Run:  python -m rlhf_lint.schemas.build --only orz --orz-source PATH[@COMMIT]
"""
from __future__ import annotations

import ast
import json
import os
import subprocess

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "orz")
TABLE = os.path.join(HERE, "base_defaults.json")
REPO = "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero"
EXP = "orz/exps/examples/ppo/ppo_base_exp.py"
BASE = "orz/exps/base_exp.py"


def class_fields(text: str, name: str) -> dict[str, dict]:
    """field -> {"line", "default"?} of one dataclass in ``text``."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            out = {}
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    row: dict = {"line": stmt.lineno}
                    if stmt.value is not None:
                        try:
                            row["default"] = ast.literal_eval(stmt.value)
                        except (ValueError, TypeError, SyntaxError):
                            pass
                    out[stmt.target.id] = row
            return out
    raise ValueError(f"no class {name}")


def _commit(path: str) -> str:
    out = subprocess.run(["git", "-C", path, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True,
                         check=False)
    return out.stdout.strip() if out.returncode == 0 else ""


def extract(path: str, commit: str) -> dict:
    with open(os.path.join(path, BASE), encoding="utf-8") as fh:
        base = class_fields(fh.read(), "BaseConfig")
    with open(os.path.join(path, EXP), encoding="utf-8") as fh:
        exp = class_fields(fh.read(), "BasePPOExpConfig")
    fields = {name: dict(row) for name, row in base.items()}
    fields.update(exp)
    base_rows = {name: {"default": row.get("default"), "source": f"{REPO}/blob/{commit}/{BASE}"}
                 for name, row in base.items()}
    return {"release": commit, "releases": [commit], "class": "BasePPOExpConfig",
            "source": f"{REPO}/blob/{commit}/{EXP}",
            "note": f"Defaults of BasePPOExpConfig (and BaseConfig.seed, {BASE}) at commit {commit}; a field without "
                    "'default' is not a plain value (ListConfig([]))",
            "fields": fields, "base_config_fields": base_rows}


def refresh(source: str, log=print) -> dict:
    path, _, commit = source.partition("@")
    commit = commit or _commit(path)
    if not commit:
        raise ValueError(f"{path} is not a git checkout: name its commit as {path}@COMMIT")
    with open(TABLE, encoding="utf-8") as fh:
        old = json.load(fh)
    data = extract(path, commit[:7])
    added = sum(1 for f in data["fields"] if f not in old["fields"])
    closed = sum(1 for f in old["fields"] if f not in data["fields"])
    with open(TABLE, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    return {"table": "orz/base_defaults.json", "added": added, "closed": closed,
            "releases": [] if old.get("release") == data["release"] else [data["release"]], "newest": data["release"]}
