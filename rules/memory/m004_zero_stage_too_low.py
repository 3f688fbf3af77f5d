"""M004 zero-stage-too-low: the job does not fit at its ZeRO stage but would with ZeRO-3."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _length_bound_case, _estimate, _gib, _no_verdict, _span_of, _what_if


@rule("M004", "zero-stage-too-low", Severity.WARNING, scope="job", when="gpu", fixable=True)
def zero_stage_too_low(ctx):
    """The job does not fit at its ZeRO stage but would with ZeRO-3.

    ## What it does
    Re-runs the estimate with `zero.stage = 3` for a GPU group that overflows only when its micro batches reach
    their length bound (M009's case); reports the stage when ZeRO-3 alone makes it fit, with the per-GPU figures
    before and after. A certain or tight overflow is M001's: its one finding names the cheapest change that fits
    (ZeRO-3 among them) and carries it as its fix, so this rule does not repeat it.

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
        # M001 reports certain and tight overflows with the cheapest change as its fix; this rule speaks only
        # for an overflow at the length bound of micro batches (M009's case), where it is a risk
        if not _length_bound_case(group) or not any(r.trainable for r in group.roles):
            continue
        new = after.group_of(group.roles[0].role)
        if new is None or not new.fits:
            continue
        from rlhf_lint.memory.fixes import setting_fix

        span = _span_of(ctx, "zero.stage")
        yield Finding(span, f"ZeRO-{stage}: {' + '.join(group.names)} need {_gib(group.peak)} per GPU when micro batches "
                            f"reach their length bound, "
                            f"{_gib(group.gpu_memory)} available; with ZeRO-3 {_gib(new.peak)}",
                      fix=setting_fix(ctx.project, ctx.job, {"zero.stage": 3}, "use ZeRO stage 3",
                                      Applicability.UNSAFE))
