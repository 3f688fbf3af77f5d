"""M012 memory-not-modelled."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _estimate, once_per_repository, others_phrase


@rule("M012", "memory-not-modelled", Severity.INFO, scope="job", when="gpu")
def memory_not_modelled(ctx):
    """The GPU is declared, but the launch runs a layout the memory model does not cover, so it gets no verdict.

    ## What it does
    Says so when the hardware profile names the GPU and the estimate declines the launch: a Megatron layout it does
    not read (a size left to a shell variable, a layout Megatron-Core would not start), KTransformers'
    CPU experts, a trainer rlhf-lint does not model (ms-swift's GRPO, PPO, GKD), a strategy it cannot read.
    Reported once per repository, on the first such launch, with the count of the others.

    ## Why it matters
    Silence reads as "fits": a CI gate that declares its GPUs should learn which launches it did not check, rather
    than pass them.

    ## Example
    `python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP ...` with `--gpu H20`.

    ## Fix
    Nothing to change in the launch; size it with the framework's own estimator, or a short trial run.

    ## References
    https://github.com/verl-project/verl/issues/3124
    """
    def declined(job) -> bool:
        est = _estimate(ctx, job)
        return est.hardware_known and est.unmodelled is not None

    if not declined(ctx.job):
        return
    launches = once_per_repository(ctx, "m012", declined)
    if launches is None:
        return
    est = _estimate(ctx)
    others = others_phrase(launches, ", for reasons of their own: `rlhf-lint estimate FILE` says why")
    yield Finding(ctx.job.span, f"no memory verdict: {est.unmodelled}{others}")
