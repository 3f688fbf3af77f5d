"""D029 warmup-steps-not-positive-int."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import assumed_version_note, version_at_least
from rlhf_lint.model import Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _literal, _number, checks


@rule("D029", "warmup-steps-not-positive-int", Severity.ERROR, kinds=KINDS, fixable=True)
def warmup_steps_not_positive_int(ctx):
    """A warmup scheduler's `warmup_num_steps` that is not a positive whole number (DeepSpeed >= 0.19.3).

    ## What it does
    For `WarmupLR`, `WarmupDecayLR` and `WarmupCosineLR`, reports a literal `scheduler.params.warmup_num_steps`
    that is 0 or negative, or written as a float (`1e3`, `100.0`: JSON reads them as floats). Applies when the
    DeepSpeed version in use is 0.19.3 or newer (configured, pinned, or assumed when unknown).

    ## Why it matters
    Since 0.19.3 the schedulers raise `ValueError: warmup_num_steps must be a positive integer` when the engine
    builds them. Older releases accepted floats and clamped small values.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1e3}}}
    ```

    ## Fix
    Writes a whole float such as `1e3` as `1000` (safe: same number). Zero or negative values need a decision.

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/8126
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/lr_schedules.py#L708-L709
    """
    doc = _doc(ctx)
    if doc is None:
        return
    facts = checks()["warmup_schedulers"]
    kind, _ = _literal(doc, "scheduler.type")
    if kind not in facts["names"] or not version_at_least(ctx, facts["positive_int_since"]):
        return
    value, node = _literal(doc, "scheduler.params.warmup_num_steps")
    if _number(value) is None:
        return
    note = assumed_version_note(ctx)
    if value <= 0:
        yield Finding(node.span, f"warmup_num_steps {value} is not positive: {kind} raises ValueError ({note})")
    elif isinstance(value, float):
        fix = None
        if value.is_integer():
            fix = Fix(f"write {int(value)}", (Edit(node.span.start, node.span.end, str(int(value))),))
        yield Finding(node.span, f"warmup_num_steps {ctx.source.text[node.span.start:node.span.end]} is a float: "
                                 f"{kind} raises 'warmup_num_steps must be a positive integer' ({note})", fix=fix)
