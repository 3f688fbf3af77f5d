"""O012 rollout-batches-below-actors."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _invocations, _k, _num, _where, _world


@rule("O012", "rollout-batches-below-actors", Severity.ERROR, kinds=SHELL)
def rollout_batches_below_actors(ctx):
    """Fewer rollout micro-batches than actor processes: OpenRLHF asserts every actor gets one (v0.7.2+).

    ## What it does
    Checks `n_samples_per_prompt × rollout.batch_size // rollout.micro_batch_size >=
    actor.num_nodes × actor.num_gpus_per_node // ds.ring_attn_size // ds.tensor_parallel_size`.

    ## Why it matters
    The assertion "The number of sample batches must be greater than or equal to the effective number of actor
    processes" fires at start-up.

    ## Example
    `--rollout.batch_size 4 --rollout.micro_batch_size 4` with 8 actor GPUs.

    ## Fix
    Raise the rollout batch or lower the rollout micro batch.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L711-L717
    - https://github.com/OpenRLHF/OpenRLHF/issues/431
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        if k.check_applies("sample_batches_cover_actors", inv.tag) is None:
            continue
        n, rb, mrb = (_num(inv, "rollout.n_samples_per_prompt"), _num(inv, "rollout.batch_size"),
                      _num(inv, "rollout.micro_batch_size"))
        ring, tp, actor = _num(inv, "ds.ring_attn_size") or 1, _num(inv, "ds.tensor_parallel_size") or 1, _world(inv, "actor")
        if None in (n, rb, mrb, actor) or mrb <= 0:
            continue
        batches = int(n) * int(rb) // int(mrb)
        processes = int(actor) // int(ring) // int(tp)
        if batches < processes:
            span, related = _where(inv, "rollout.batch_size", "rollout.micro_batch_size", "rollout.n_samples_per_prompt",
                                   "actor.num_gpus_per_node", "actor.num_nodes")
            yield _checked(
                inv, span,
                f"{n} sample(s) per prompt × rollout batch {rb} // rollout micro batch {mrb} = {batches} "
                f"micro-batches, fewer than the {processes} actor processes; OpenRLHF asserts at "
                "start-up",
                related=related)
