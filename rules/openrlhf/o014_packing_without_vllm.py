"""O014 packing-without-vllm: sample packing in train_ppo_ray without vLLM engines: OpenRLHF refuses to start."""
from __future__ import annotations

from rlhf_lint.model import UNKNOWN, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _invocations, _k, _packing_reason, _where


@rule("O014", "packing-without-vllm", Severity.ERROR, kinds=SHELL)
def packing_without_vllm(ctx):
    """Sample packing in train_ppo_ray without vLLM engines: OpenRLHF refuses to start.

    ## What it does
    `--ds.packing_samples` (also switched on by `--ds.ring_attn_size > 1` and by dynamic batching) requires
    `--vllm.num_engines > 0` (v0.4.4+). With the engine count left at its default `None` the check itself
    fails with a `TypeError` instead of its message.

    ## Why it matters
    The job dies at start-up with an unhelpful error.

    ## Example
    `--ds.packing_samples` without `--vllm.num_engines`.

    ## Fix
    Add vLLM engines or drop packing.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L655-L661
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        if k.check_applies("packing_needs_vllm", inv.tag) is None:
            continue
        reason = _packing_reason(inv, k)
        if reason is None:
            continue
        engines = inv.get("vllm.num_engines")
        if engines is UNKNOWN or (isinstance(engines, int) and engines > 0):
            continue
        name, why = reason
        span, related = _where(inv, name, "vllm.num_engines")
        shown = "unset (None)" if engines is None else str(engines)
        yield _checked(
            inv, span,
            f"{why} needs vLLM engines in train_ppo_ray, but vllm.num_engines is {shown}",
            related=related)
