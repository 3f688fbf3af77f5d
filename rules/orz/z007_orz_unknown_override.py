"""Z007 orz-unknown-override: a launch command overrides `exp.<field>` for a field the ORZ config does not have."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule


@rule("Z007", "orz-unknown-override", Severity.ERROR, kinds=(), scope="job", frameworks=("orz",))
def orz_unknown_override(ctx):
    """A launch command overrides `exp.<field>` for a field the ORZ config does not have.

    ## What it does
    Checks the `exp.<field>=value` words after `python -m playground.<config>` against the fields of the config
    class (its own and inherited ones).

    ## Why it matters
    ORZ's `BaseExp.set_cfg` raises `ValueError("Attribute ... is not found")` for an override of a missing field,
    after the Ray cluster has started.

    ## Example
    ```bash
    python -m playground.orz_7b_ppo exp.gpu_memory_utilisation=0.6
    ```

    ## Fix
    Correct the field name (the message suggests the closest field).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/exps/base_exp.py#L31
    """
    job = ctx.job
    if job is None or job.framework != "orz":
        return
    unknown = getattr(job, "unknown_overrides", ())
    if not unknown:
        return
    from rlhf_lint.frameworks.edge import edge_note, past_edge

    edge = past_edge(ctx.project, "orz")  # inherited fields come from a table: a newer ORZ may have the field
    for override, message in unknown:
        if edge is not None:
            yield Finding(override.key_span or override.span,
                          f"{message}; but {edge_note('orz', edge.version, edge.origin)}: that release may have it",
                          path=override.path, severity=Severity.WARNING)
            continue
        yield Finding(override.key_span or override.span, message, path=override.path)
