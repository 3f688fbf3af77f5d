"""V: verl launches: Hydra overrides of launch scripts and trainer YAML, checked the way verl checks them at start-up.

Each rule reads a verl Job (lint/frameworks/verl.py): the release defaults, the repository's YAML and the overrides of
the launch command, with the exact token each value was written in.

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity


ACTOR = "actor_rollout_ref.actor"
ROLLOUT = "actor_rollout_ref.rollout"


def _cfg(ctx):
    job = ctx.job
    return getattr(job, "verl", None) if job is not None and job.framework == "verl" else None


def _where(ctx, cfg, key):
    """(path, span) of the token that sets ``key``: the override, the YAML value, or the launch command."""
    from rlhf_lint.fixers.yaml import node_span
    from rlhf_lint.frameworks.verl import Override, YamlEntry

    found = cfg.where(key)
    if isinstance(found, Override):
        return found.path, found.value_span or found.span
    if isinstance(found, YamlEntry):
        return found.path, node_span(found.node)
    return ctx.job.path, ctx.job.span


def _value_fix(cfg, key, value, message, applicability=Applicability.UNSAFE):
    """Rewrite the value of ``key`` where it is written (override token or YAML scalar); None for a default."""
    import yaml

    from rlhf_lint.fixers.yaml import replace_scalar, yaml_scalar
    from rlhf_lint.frameworks.verl import Override, YamlEntry

    found = cfg.where(key)
    if isinstance(found, Override) and found.value_span is not None:
        return Fix(message, (Edit.replace(found.value_span, yaml_scalar(value)),), applicability)
    if isinstance(found, YamlEntry) and isinstance(found.node, yaml.ScalarNode):
        return Fix(message, (replace_scalar(found.node, value),), applicability)
    return None


def _finding(ctx, cfg, key, message, fix=None, severity=None):
    """A finding at the token that sets ``key`` (the launch command when nothing does). Past the newest table a
    check verl makes at start-up may differ in the targeted release: an error becomes a warning saying so, unfixed."""
    path, span = _where(ctx, cfg, key)
    if cfg.past_edge and severity in (None, Severity.ERROR):
        from rlhf_lint.frameworks.edge import edge_note

        message += f", but {edge_note('verl', cfg.target.version, cfg.target.origin)}: that release may differ"
        fix, severity = None, Severity.WARNING
    return Finding(span, message, fix=fix, path=path, severity=severity)


def _startup_finding(ctx, cfg, key, message, fix=None, severity=None):
    """A finding of verl's start-up validation (validate_config, RayPPOTrainer._validate_config): a warning, saying
    so, when the launch is a recipe that does not run it (or may not: its code or release is not known)."""
    recipe = cfg.recipe
    if recipe is not None and not recipe.validates:
        message += (f"; but {recipe.entry} {'does not run' if recipe.validates is False else 'may not run'} verl's "
                    "start-up validation, so this may fail later in the run instead, or not at all")
        severity = Severity.WARNING
    return _finding(ctx, cfg, key, message, fix=fix, severity=severity)


def _ints(cfg, *keys):
    values = [cfg.known_int(k) for k in keys]
    return None if any(v is None for v in values) else values


def _gpus(cfg, nodes, per_node) -> str:
    """How the GPU count was known, naming defaults the reader may not have meant."""
    defaults = [k for k in ("trainer.nnodes", "trainer.n_gpus_per_node") if cfg.where(k) is None]
    note = f" ({', '.join(defaults)} at verl's default)" if defaults else ""
    return f"{nodes * per_node} GPUs ({nodes} node{'s' if nodes != 1 else ''} x {per_node}){note}"


def _fsdp(cfg) -> bool:
    return cfg.get(f"{ACTOR}.strategy") in ("fsdp", "fsdp2")


def _asserts_of(cfg, check: str):
    """The row of schemas/verl/startup_asserts.json for ``check`` at the job's release (the newest when unknown)."""
    from rlhf_lint.schemas import load

    releases = load("verl/startup_asserts.json")[check]["releases"]
    return releases.get(cfg.release) if cfg.exact else releases.get("main")
