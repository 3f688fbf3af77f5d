"""O016 async-conflict: options that require, or forbid, asynchronous training (`--train.async_enable`)."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _flag_of, _invocations, _k, _num, _on, _where


@rule("O016", "async-conflict", Severity.ERROR, kinds=SHELL)
def async_conflict(ctx):
    """Options that require, or forbid, asynchronous training (`--train.async_enable`).

    ## What it does
    OpenRLHF asserts: async training cannot use `--vllm.enable_sleep` (v0.8.0+); `--train.partial_rollout_enable`
    requires async (v0.9.7+); `--rollout.vllm_generate_batch_size` larger than `--rollout.batch_size` requires
    async (v0.10.0+).

    ## Why it matters
    Each is an assertion at start-up.

    ## Example
    `--train.async_enable --vllm.enable_sleep`.

    ## Fix
    Drop the conflicting option or switch async training on/off accordingly.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L670-L698
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        is_async = _on(inv, "train.async_enable")
        if is_async is None:
            continue
        if is_async and k.check_applies("async_forbids_vllm_sleep", inv.tag) and _on(inv, "vllm.enable_sleep"):
            span, related = _where(inv, "vllm.enable_sleep", "train.async_enable")
            yield _checked(
                inv, span,
                "async training does not support vLLM sleep mode; OpenRLHF asserts at start-up",
                related=related)
        if not is_async and k.check_applies("partial_rollout_needs_async", inv.tag) \
                and _on(inv, "train.partial_rollout_enable"):
            span, related = _where(inv, "train.partial_rollout_enable")
            yield _checked(
                inv, span,
                f"partial rollout requires async training ({_flag_of(inv, 'train.async_enable')})",
                related=related)
        if not is_async and k.check_applies("generate_batch_over_rollout_needs_async", inv.tag):
            gen, rb = _num(inv, "rollout.vllm_generate_batch_size"), _num(inv, "rollout.batch_size")
            if gen is not None and rb is not None and gen > rb:
                span, related = _where(inv, "rollout.vllm_generate_batch_size", "rollout.batch_size")
                yield _checked(
                    inv, span,
                    f"a vLLM generate batch ({gen}) larger than the rollout batch ({rb}) requires "
                    "async training",
                    related=related)
