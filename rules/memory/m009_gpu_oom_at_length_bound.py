"""M009 gpu-oom-at-length-bound."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _assumed, _breakdown, _estimate, _gib, _need, _no_verdict, _what_if


_BUDGET_KEYS = ("batch.max_tokens_per_gpu", "batch.actor.forward_max_tokens_per_gpu",
                "batch.ref.forward_max_tokens_per_gpu", "batch.critic.max_tokens_per_gpu",
                "batch.critic.forward_max_tokens_per_gpu")
_DYNAMIC_KEYS = ("batch.dynamic", "batch.actor.forward_dynamic", "batch.ref.forward_dynamic", "batch.critic.dynamic",
                 "batch.critic.forward_dynamic")


def _token_budget(ctx, group, low: int, high: int) -> int | None:
    """The largest per-GPU token budget (a multiple of 1024 between one sequence and the length bound) at which the
    group fits when every micro batch is packed to that budget (verl's use_dynamic_bsz): the whole band of every
    phase that holds length-dependent terms (no budget changes the others, the optimizer step's)."""
    def fits(tokens: int) -> bool:
        changes = {k: True for k in _DYNAMIC_KEYS} | {k: tokens for k in _BUDGET_KEYS}
        after = _what_if(ctx, changes).group_of(group.roles[0].role)
        if after is None or after.gpu_memory is None:
            return False
        bounded = [p for p, items in after.phases.items() if any(t.at_length_bound for _, t in items)]
        return all(max(after.band_total(p, 1), after.phase_total(p)) <= after.gpu_memory for p in bounded)

    lo, hi = -(-low // 1024), high // 1024
    if hi < lo or not fits(lo * 1024):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid * 1024):
            lo = mid
        else:
            hi = mid - 1
    return lo * 1024


@rule("M009", "gpu-oom-at-length-bound", Severity.WARNING, scope="job", when="gpu")
def gpu_oom_at_length_bound(ctx):
    """The job fits only while its micro batches hold fewer tokens than their configured bound.

    ## What it does
    With padding removed (verl `use_remove_padding`), a micro batch of `micro` sequences holds anything up to
    `micro x (max_prompt_length + max_response_length)` tokens, and a token budget (`use_dynamic_bsz`,
    `ppo_max_token_len_per_gpu`) is filled only when the mini batch has that many real tokens: activations and
    logits depend on how long the sequences turn out. When the GPU group fits without those terms but not with
    them at their bound, this rule reports the phase, both figures, and the largest per-GPU token budget (multiple
    of 1024, at least one full sequence) at which every micro batch fits. M001 keeps the overflows that happen
    whatever the lengths (model states, gathered units, padded micro batches).

    ## Why it matters
    The job runs while the rollouts are short and dies when the policy learns to answer at length - typically hours
    into a GRPO run on reasoning data (verl issue 2186: OOM in the FSDP backward on long-reasoning GRPO).

    ## Example
    `ppo_micro_batch_size_per_gpu=16` with 1024 + 1024 tokens for a 7B actor on 2 x 80 GB with parameter and
    optimizer offload: the states loaded back for the update take 57 GiB, 32768 tokens of activations and logits
    another 19 GiB.

    ## Fix
    Bound the tokens instead of the sequences: `actor_rollout_ref.actor.use_dynamic_bsz=True` with
    `ppo_max_token_len_per_gpu` (and the log-prob and critic budgets) at the figure given, or lower the micro batch.

    ## References
    https://verl.readthedocs.io/en/latest/perf/perf_tuning.html
    https://github.com/volcengine/verl/issues/2186
    https://github.com/volcengine/verl/blob/v0.7.0/verl/utils/seqlen_balancing.py
    """
    est = _estimate(ctx)
    if _no_verdict(est):
        return
    for group in est.groups:
        if group.fits is not False or group.certain_overflow:
            continue
        phase = group.peak_phase
        bound = [(role, t) for role, t in group.phases[phase] if t.at_length_bound]
        if not bound:
            continue
        roles = sorted({role for role, _ in bound}, key=group.names.index)
        lengths = ctx.job.value("seq.prompt_max_len"), ctx.job.value("seq.generate_max_len")
        one = sum(v for v in lengths if isinstance(v, int)) or 1024
        tokens = max((v[0] for r in group.roles for v in r.micro_tokens.values() if v[1]), default=one)
        hows = []
        for r in group.roles:
            if r.role in roles and phase in r.micro_tokens:
                n, _, how = r.micro_tokens[phase]
                hows.append(f"{r.role} {n} tokens: {how}")
        budget = _token_budget(ctx, group, one, max(one, tokens))
        # the knob is verl's; other frameworks name their token budget per release (or have none: TRL)
        knob = ("use_dynamic_bsz with ppo_max_token_len_per_gpu and the log-prob and critic budgets at "
                f"{budget}" if ctx.job.framework == "verl" else
                "a dynamic batch with that token budget where the framework has one, or a smaller micro batch")
        advice = (f"; a token budget of {budget} per GPU fits ({knob})" if budget else
                  f"; no token budget of at least one {one}-token sequence fits")
        yield Finding(ctx.job.span,
                      f"{_need(group.names)} {_gib(group.peak)} per GPU in the {phase} phase when "
                      f"micro batches reach their bound ({'; '.join(hows)}), {_gib(group.floor_total(phase))} "
                      f"without the length-dependent activations and logits; "
                      f"{est.gpu.name if est.gpu else 'the GPU'} has "
                      f"{_gib(group.gpu_memory)}: {_breakdown(group)}{advice}{_assumed(est)}",
                      severity=None)
