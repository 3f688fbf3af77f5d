"""accelerate's DeepSpeed plugin keys (schemas/accelerate/deepspeed_keys.json): the keys ``accelerate config``
writes into an accelerate config's ``deepspeed_config`` section (``deepspeed_config["..."] = ...`` in
accelerate/commands/config/cluster.py, read with ``ast`` from the wheel pip serves), which are the keys
``accelerate launch`` reads back. The other facts of the table (keys refused with deepspeed_config_file, plugin
defaults) keep their sources. Run:  python -m rlhf_lint.schemas.build --only accelerate
"""
from __future__ import annotations

import ast
import json
import os

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "accelerate")
TABLE = os.path.join(HERE, "deepspeed_keys.json")
CLUSTER = "accelerate/commands/config/cluster.py"


def plugin_keys(text: str) -> list[str]:
    keys = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id == "deepspeed_config" and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            keys.add(node.slice.value)
    return sorted(keys)


def refresh(cache, versions: list[str] | None = None, log=print) -> dict:
    from packaging.version import Version

    from rlhf_lint.schemas.build.upstream import index_versions

    with open(TABLE, encoding="utf-8") as fh:
        data = json.load(fh)
    if versions is None:
        listed = cache.cached_versions("accelerate") if cache.offline else index_versions("accelerate")
        versions = [max(listed, key=Version)] if listed else []
    summary = {"table": "accelerate/deepspeed_keys.json", "added": 0, "closed": 0, "releases": []}
    for v in sorted(versions, key=Version):
        release = cache.release("accelerate", v, "wheel")
        if CLUSTER not in release.names():
            log(f"  accelerate {v}: no {CLUSTER}; skipped")
            continue
        keys = plugin_keys(release.read(CLUSTER))
        if set(keys) != set(data["keys"]):  # the table holds one key list: older releases only widen its cover
            log(f"  accelerate {v}: keys differ from the table's ({sorted(set(keys) ^ set(data['keys']))}); "
                "the newest release read wins")
        if v not in data.get("releases", []):
            summary["releases"].append(v)
        summary["added"] += len(set(keys) - set(data["keys"]))
        summary["closed"] += len(set(data["keys"]) - set(keys))
        data["keys"] = keys
        data["release"] = v
        data["releases"] = sorted(set(data.get("releases", [])) | {v}, key=Version)
        data["source"] = f"https://github.com/huggingface/accelerate/blob/v{v}/src/{CLUSTER}"
        data["artifact"] = release.url + " (" + os.path.basename(release.path) + ")"
    with open(TABLE, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    summary["newest"] = data.get("release", "?")
    return summary
