"""M006 gradient-checkpointing-off: activations are what does not fit, and gradient checkpointing is off."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _length_bound_case, _checkpointing_off, _estimate, _gib, _no_verdict, _span_of, _what_if


@rule("M006", "gradient-checkpointing-off", Severity.WARNING, scope="job", when="gpu", fixable=True)
def gradient_checkpointing_off(ctx):
    """Activations are what does not fit, and gradient checkpointing is off.

    ## What it does
    For a GPU group that overflows only when its micro batches reach their length bound (M009's case), re-runs the
    estimate with gradient checkpointing on; reports when that alone makes it fit, with the activation memory
    before and after. A certain or tight overflow is M001's: its one finding names the cheapest change that fits
    (checkpointing among them) and carries it as its fix, so this rule does not repeat it.

    ## Why it matters
    Without checkpointing every layer keeps about 34 x sequence x batch x hidden bytes of activations; with it,
    only the layer inputs (2 x s x b x h) stay, at the price of one more forward pass.

    ## Example
    An 8B actor, micro batch 4, 4096 tokens, no `--gradient_checkpointing` on 80 GB GPUs.

    ## Fix
    Turns gradient checkpointing on (safe: results do not change).

    ## References
    https://arxiv.org/abs/2205.05198
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    """
    est = _estimate(ctx)
    if _no_verdict(est):
        return
    for group in est.groups:
        # M001 reports certain and tight overflows with the cheapest change as its fix; this rule speaks only
        # for an overflow at the length bound of micro batches (M009's case), where it is a risk
        if not _length_bound_case(group) or not any(r.trainable for r in group.roles):
            continue
        off = _checkpointing_off(ctx, group)
        if not off:
            continue
        changes = {key: True for key in off}
        new = _what_if(ctx, changes).group_of(group.roles[0].role)
        if new is None or not new.fits:
            continue
        roles = list(off.values())
        if "train.gradient_checkpointing" in off:  # the job-wide key covers every trained role without its own
            roles = [r.role for r in group.roles if r.trainable
                     and ctx.job.settings.get(f"train.{r.role}.gradient_checkpointing") is None]
            roles += [role for key, role in off.items() if key != "train.gradient_checkpointing"]
        training = lambda g, name: max((sum(t.bytes for t in r.terms if t.name == "activations" and not t.phases)
                                        for r in g.roles if r.role == name), default=0)
        before_act = sum(training(group, name) for name in roles)
        after_act = sum(training(new, name) for name in roles)
        span = ctx.job.span
        if list(off) == ["train.critic.gradient_checkpointing"]:
            span = _span_of(ctx, "train.critic.gradient_checkpointing")  # only the critic's own key changes
        from rlhf_lint.memory.fixes import setting_fix

        yield Finding(span,
                      f"activations of {' + '.join(roles)} take "
                      f"{_gib(before_act)} per GPU without gradient checkpointing ({_gib(after_act)} with it): "
                      f"{_gib(group.peak)} needed when micro batches reach their length bound, "
                      f"{_gib(group.gpu_memory)} available, {_gib(new.peak)} with it",
                      fix=setting_fix(ctx.project, ctx.job, changes, "turn on gradient checkpointing",
                                      Applicability.SAFE))
