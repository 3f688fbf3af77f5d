"""The defaults a TRL trainer config (or TrainingArguments) gives what a launch leaves unset, for the release the
repository targets: the batch (8 per device), the lengths, gradient checkpointing (on from TRL 0.23), bf16 (on unless
fp16 from TRL 0.20). Data: schemas/hf/trl_config_defaults.json, read from each release by schemas/build/trl.py.
"""
from __future__ import annotations

import functools

from rlhf_lint.model import Settings

UNLESS_FP16 = "unless fp16"
# fields whose unset value the memory estimate resolves itself, per TRL release and on the safe side when the
# release is unknown (no reference model for beta, server-mode vLLM off the training GPUs)
ESTIMATE_DECIDES = frozenset({"beta", "use_vllm", "vllm_mode", "vllm_gpu_memory_utilization", "vllm_enable_sleep_mode",
                              "vllm_tensor_parallel_size", "steps_per_generation", "generation_batch_size"})


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    from rlhf_lint.schemas import load

    return load("hf/trl_config_defaults.json")


@functools.lru_cache(maxsize=1)
def config_of_type() -> dict:
    """{job type: the config class its trainer takes}: the first class schemas/hf/script_calls.json lists for it."""
    from rlhf_lint.frameworks.hf_script import calls

    out: dict = {}
    for cls, job_type in calls()["configs"]["classes"].items():
        if job_type is not None:
            out.setdefault(job_type, cls)
    return out


@functools.lru_cache(maxsize=64)
def release_of(version: str | None) -> tuple[str, bool]:
    """(release label in the table, exact): edge.table_release of ``version``; no version, or one older than the
    table: the newest (not exact)."""
    from packaging.version import Version

    from rlhf_lint.frameworks.edge import table_release

    releases = list(_table()["releases"])
    found = table_release(releases, version) if version else None
    if found is None:
        return max(releases, key=Version), False
    return found, Version(found).release[:2] == Version(version).release[:2]


LENGTH_FIELDS = ("max_length", "max_seq_length", "max_prompt_length", "max_completion_length")


def defaults_for(kind: str, job_type: str | None, version: str | None) -> tuple[dict, str, str, bool]:
    """({field: default}, what they are, release label, exact) for a TRL job of ``job_type`` or a plain Trainer."""
    table = _table()
    plain = table["training_arguments"]
    if kind != "trl":
        return dict(plain["defaults"]), "TrainingArguments default", "", True
    label, exact = release_of(version)
    classes = table["releases"][label]["classes"]
    cls = config_of_type().get(job_type or "")
    if cls is None:  # an untyped TRL launch: what every config class of the release that declares a field agrees on
        seen: dict[str, list] = {}
        for row in classes.values():
            for name, value in row["defaults"].items():
                seen.setdefault(name, []).append(value)
        agreed = {name: values[0] for name, values in seen.items()
                  if all(v == values[0] and type(v) is type(values[0]) for v in values)}
        # a length the classes disagree on: the longest any of them truncates to bounds the recipe's (closer than
        # the estimate's own 2048-token fallback, which exceeds every TRL default: SFT and DPO 1024, online 512)
        for name in LENGTH_FIELDS:
            lengths = [v for v in seen.get(name, ()) if type(v) is int and v > 0]
            if name not in agreed and lengths:
                agreed[name] = max(lengths)
        return {**plain["defaults"], **agreed}, f"TRL {label} default of every config (the longest of their " \
                                                f"lengths)", label, exact
    row = classes.get(cls)
    if row is None:
        return dict(plain["defaults"]), f"TRL {label}: TrainingArguments default", label, exact
    return dict(row["defaults"]), f"TRL {label} {cls} default", label, exact


def targeted_version(project) -> str | None:
    """The TRL release the repository targets (configured or pinned), or None."""
    if project is None:
        return None
    from rlhf_lint.frameworks.edge import target_version

    target = target_version(project, "trl")
    return target.version if target is not None else None


def unset_defaults(settings: Settings, project, kind: str) -> tuple[list, str, str | None]:
    """([(field, value)] a TRL config (or TrainingArguments) gives the fields a launch leaves unset, where they come
    from, the assumption to state or None): the TRL release is the one the repository pins; an unpinned one, or one
    the table lacks, takes the nearest release's defaults and says so."""
    from rlhf_lint.schemas import load

    version = targeted_version(project) if kind == "trl" else None
    defaults, what, label, exact = defaults_for(kind, settings.value("job.type"), version)
    fields = load("hf/training_args.json")["fields"]
    filled = []
    for name, value in defaults.items():
        row = fields.get(name)
        if row is None or value is None or name == "fp16" or name in ESTIMATE_DECIDES \
                or settings.get(row["key"]) is not None:
            continue
        filled.append((name, True if value == UNLESS_FP16 else value))  # a given fp16 has set the precision
    note = None
    if filled and not exact:
        why = "not pinned" if version is None else f"{version} not in the table"
        note = f"TRL release {why}: TRL {label}'s config defaults used for {', '.join(n for n, _ in filled)}"
    return filled, what, note
