"""A: accelerate config YAML (as used by TRL's example configs) with DeepSpeed, checked as accelerate reads it.

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations


def _cfg(ctx):
    from rlhf_lint.frameworks.accelerate import read

    if ctx.source is None or "distributed_type" not in ctx.source.text and "compute_environment" not in ctx.source.text:
        return None
    return read(ctx.source)


def _value_span(entry):
    from rlhf_lint.fixers.yaml import node_span

    return node_span(entry.value_node)


# -- HF Trainer / TRL / LLaMA-Factory launches (A010-A049): jobs built by rlhf_lint.frameworks.hf ----------------------
HF_FRAMEWORKS = ("hf", "trl", "llamafactory")


def package_version(ctx, package: str) -> tuple[tuple[int, ...] | None, str]:
    """(release as a tuple, where it came from) of ``package``: configured, else the pin that governs the job's
    folder (edge.target_version); (None, "not pinned") when neither says."""
    from rlhf_lint.frameworks.deepspeed import version_tuple
    from rlhf_lint.frameworks.edge import target_version

    target = target_version(ctx.project, package, ctx.job.path if ctx.job is not None else None)
    if target is None:
        return None, f"{package} not pinned"
    return version_tuple(target.version), target.phrase


def ds_config_paths(ctx) -> set[str]:
    """The ds_config files a job reads (their settings joined the job's where the launch said nothing)."""
    out = set()
    for s in ctx.job.settings.all("deepspeed.config_path"):
        if isinstance(s.value, str) and s.path is not None:
            target = ctx.project.resolve(s.path, s.value)
            if target is not None:
                out.add(target.path)
    return out


def launch_setting(ctx, key: str):
    """The job's setting ``key`` as the launch or its recipe gives it (not one a ds_config supplied, nor a default
    filled in with no place in a file)."""
    ds = ds_config_paths(ctx)
    for s in reversed(ctx.job.settings.all(key)):
        if s.path is not None and s.path not in ds:
            return s
    return None


def here(ctx, setting) -> tuple:
    """(span, path) of a setting for a Finding: None span when it has no place of its own."""
    if setting is None or setting.span is None:
        return ctx.job.span, ctx.job.path
    return setting.span, setting.path or ctx.job.path


def world_size(ctx):
    """(world size, the setting or None, assumed: bool): the launch's, else the configured one (an assumption)."""
    s = ctx.job.settings.get("topology.world_size")
    if s is not None and type(s.value) is int and s.value > 0:
        return s.value, s, s.filled  # a count the hardware profile filled is the configuration's, not the launch's
    if ctx.config.world_size:
        return int(ctx.config.world_size), None, True
    return None, None, False


def zero_stage(ctx):
    """(stage, setting) the job runs: its ds_config's, else the accelerate config's the launch names."""
    s = ctx.job.settings.get("zero.stage")
    if s is not None and type(s.value) is int:
        return s.value, s
    acc = ctx.job.settings.get("accelerate.config_path")
    if acc is not None and isinstance(acc.value, str) and acc.path is not None:
        from rlhf_lint.frameworks.accelerate import read

        target = ctx.project.resolve(acc.path, acc.value)
        cfg = read(target) if target is not None and target.kind == "yaml" and target.tree is not None else None
        if cfg is not None and cfg.uses_deepspeed:
            stage = cfg.zero_stage()
            entry = cfg.deepspeed.get("zero_stage")
            if type(stage) is int:
                from rlhf_lint.model import Setting

                span = _value_span(entry) if entry is not None else None
                return stage, Setting("zero.stage", stage, target.path, span, "accelerate config")
    return None, None


def ds_config_docs(ctx):
    """(ds_config Source, the launch setting that names it) of each JSON ds_config object the job reads."""
    from rlhf_lint.readers.json import JObject, JSONDocument

    seen = set()
    for s in ctx.job.settings.all("deepspeed.config_path"):
        if not isinstance(s.value, str) or s.path is None:
            continue
        target = ctx.project.resolve(s.path, s.value)
        if target is None or target.path in seen or not isinstance(target.tree, JSONDocument) \
                or not isinstance(target.tree.root, JObject):
            continue
        seen.add(target.path)
        yield target, s
