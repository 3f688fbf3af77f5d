"""M004 zero-stage-too-low: the job does not fit at its ZeRO stage but would with ZeRO-3."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import (
    M001_NOTE, _estimate, _gib, _length_bound_case, _m001_reports, _need, _no_verdict, _span_of, _what_if,
)


@rule("M004", "zero-stage-too-low", Severity.WARNING, scope="job", when="gpu", fixable=True)
def zero_stage_too_low(ctx):
    """The job does not fit at its ZeRO stage but would with ZeRO-3.

    ## What it does
    Re-runs the estimate with `zero.stage = 3` for a GPU group that overflows only when its micro batches reach
    their length bound (M009's case); reports the stage when ZeRO-3 alone makes it fit, with the per-GPU figures
    before and after. A certain or tight overflow is M001's: its one finding names the cheapest change that fits;
    this rule then says only, as an info pointing to it, that ZeRO-3 alone fits, and carries that fix (M001's
    own fix is the cheapest change, usually checkpointing or a smaller batch, so ZeRO-3 is the other road).

    ## Why it matters
    ZeRO-1/2 replicate the 16-bit weights on every GPU; ZeRO-3 partitions them too, which is what large actors
    need (field case: 13B PPO on 8 x A100 killed at ZeRO-2).

    ## Example
    `--zero_stage 2` for a 13B actor on 4 GPUs next to a 13B critic.

    ## Fix
    Sets the stage to 3 (unsafe: communication volume grows by half, checkpoints change layout).

    ## References
    https://arxiv.org/abs/1910.02054
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    """
    stage = ctx.job.value("zero.stage")
    est = _estimate(ctx)
    if _no_verdict(est) or not isinstance(stage, int) or stage >= 3:
        return
    after = _what_if(ctx, {"zero.stage": 3})
    for group in est.groups:
        # an overflow at the length bound of micro batches (M009's case) is a risk this rule warns of; a certain or
        # tight one is M001's error, and this rule adds only its own fix, as an info that points there
        by_m001 = _m001_reports(group)
        if not (by_m001 or _length_bound_case(group)) or not any(r.trainable for r in group.roles):
            continue
        new = after.group_of(group.roles[0].role)
        if new is None or not new.fits:
            continue
        from rlhf_lint.memory.fixes import setting_fix

        span = _span_of(ctx, "zero.stage")
        when = "" if by_m001 else " when micro batches reach their length bound"
        yield Finding(span, f"ZeRO-{stage}: {_need(group.names)} {_gib(group.peak)} per GPU{when}, "
                            f"{_gib(group.gpu_memory)} available; with ZeRO-3 {_gib(new.peak)}"
                            + (M001_NOTE if by_m001 else ""),
                      fix=setting_fix(ctx.project, ctx.job, {"zero.stage": 3}, "use ZeRO stage 3",
                                      Applicability.UNSAFE),
                      severity=Severity.INFO if by_m001 else None)
