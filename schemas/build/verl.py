"""verl trainer config keys per release (schemas/verl/ppo_trainer_defaults.json), read from the wheel pip serves:
``verl/trainer/config/_generated_ppo_trainer.yaml`` (FSDP workers) and ``_generated_ppo_megatron_trainer.yaml``
(Megatron workers), the resolved configs verl generates from its Hydra defaults (0.5.0 on; before, ppo_trainer.yaml
itself). Each is flattened to ``dotted.key: default`` with ``{}`` marking a section, as verl.py reads it.

A refresh adds every release newer than the table's newest (or the given versions); older releases keep their rows
and sources. A "main" snapshot older than a release now read is dropped (the release supersedes it).
Each release row also lists its ``model_engine`` choices (the files of ``verl/trainer/config/model_engine/``, 0.7.1
on): ``model_engine=megatron`` composes the Megatron trainer config, the others configs without a table here.

Run:  python -m rlhf_lint.schemas.build --only verl
"""
from __future__ import annotations

import json
import os

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "verl")
TABLE = os.path.join(HERE, "ppo_trainer_defaults.json")
FSDP = "verl/trainer/config/_generated_ppo_trainer.yaml"
MEGATRON = "verl/trainer/config/_generated_ppo_megatron_trainer.yaml"
MODEL_ENGINES = "verl/trainer/config/model_engine/"
LEGACY_FSDP = "verl/trainer/config/ppo_trainer.yaml"
# the version file of the "main" snapshot's commit (verl/version/version at b178a3cd): 0.8.0.dev
MAIN_VERSIONS = {"b178a3cd56f58b2d502255daba591e92833930a7": "0.8.0.dev"}
BLOB = "https://github.com/volcengine/verl/blob/v{version}/{path}"


def flatten(node: dict, prefix: str = "", out: dict | None = None) -> dict:
    out = {} if out is None else out
    for key, value in node.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            out[dotted] = {}
            flatten(value, dotted, out)
        else:
            out[dotted] = value
    return out


def release_keys(release) -> dict[str, dict]:
    """{"fsdp": {...}, "megatron": {...}} flattened keys of one release (a config it lacks is left out)."""
    import yaml

    out = {}
    names = release.names()
    # before 0.5 verl had no generated config: the FSDP trainer's Hydra file is the whole config (the Megatron
    # table starts where generated files do: an older release would answer for the releases between)
    for kind, path, before_05 in (("fsdp", FSDP, LEGACY_FSDP), ("megatron", MEGATRON, None)):
        if path not in names and before_05 in names:
            path = before_05
        if path in names:
            tree = yaml.safe_load(release.read(path))
            if isinstance(tree, dict):
                out[kind] = {"source": BLOB.format(version=release.version, path=path),
                             "artifact": release.url + " (" + os.path.basename(release.path) + ")",
                             "keys": flatten(tree)}
    engines = sorted(os.path.basename(n)[:-len(".yaml")] for n in names
                     if n.startswith(MODEL_ENGINES) and n.endswith(".yaml"))
    if engines and "fsdp" in out:
        out["fsdp"]["model_engines"] = engines
        out["fsdp"]["model_engines_source"] = BLOB.format(version=release.version, path=MODEL_ENGINES)
    return out


def _diff(old: dict, new: dict) -> tuple[int, int]:
    return sum(1 for k in new if k not in old), sum(1 for k in old if k not in new)


def refresh(cache, versions: list[str] | None = None, log=print) -> dict:
    from packaging.version import InvalidVersion, Version

    from rlhf_lint.schemas.build.upstream import index_versions

    with open(TABLE, encoding="utf-8") as fh:
        data = json.load(fh)

    def parsed(v):
        try:
            return Version(v)
        except InvalidVersion:
            return None

    known = [v for v in data["releases"] if parsed(v)]
    newest = max(known, key=Version)
    if versions is None:
        listed = cache.cached_versions("verl") if cache.offline else index_versions("verl")
        versions = [v for v in listed if parsed(v) and Version(v) > Version(newest)]
    summary = {"table": "verl/ppo_trainer_defaults.json", "added": 0, "closed": 0, "releases": []}
    for v in sorted(versions, key=Version):
        found = release_keys(cache.release("verl", v, "wheel"))
        if "fsdp" not in found:
            log(f"  verl {v}: no {FSDP}; skipped")
            continue
        prev = max((r for r in data["releases"] if parsed(r) and Version(r) < Version(v)), key=Version, default=None)
        added, closed = _diff(data["releases"][prev]["keys"] if prev else {}, found["fsdp"]["keys"])
        summary["added"] += added
        summary["closed"] += closed
        data["releases"][v] = found["fsdp"]
        if "megatron" in found:
            mprev = max((r for r in data["megatron"] if parsed(r) and Version(r) < Version(v)), key=Version,
                        default=None)
            a, c = _diff(data["megatron"][mprev]["keys"] if mprev else {}, found["megatron"]["keys"])
            summary["added"] += a
            summary["closed"] += c
            data["megatron"][v] = found["megatron"]
        summary["releases"].append(v)
    newest = max((r for r in data["releases"] if parsed(r)), key=Version)
    main = data["releases"].get("main")
    if main and MAIN_VERSIONS.get(main.get("commit", "")):
        main["version"] = MAIN_VERSIONS[main["commit"]]
    if main and main.get("version") and Version(main["version"]) <= Version(newest):
        del data["releases"]["main"]  # a development snapshot a release now supersedes
        log(f"  verl: dropped the main snapshot ({main['version']}): {newest} supersedes it")
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda kv: (parsed(kv[0]) is None, parsed(kv[0]))))
    # verl.py reads the first Megatron entry: the newest release goes first
    data["megatron"] = dict(sorted(data["megatron"].items(), key=lambda kv: parsed(kv[0]), reverse=True))
    data["versions"] = [r for r in data["releases"] if parsed(r)]
    with open(TABLE, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(data, fh, indent=0, ensure_ascii=False)
        fh.write("\n")
    summary["newest"] = newest
    return summary
