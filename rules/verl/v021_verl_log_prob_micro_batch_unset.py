"""V021 verl-log-prob-micro-batch-unset."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ACTOR, ROLLOUT, _asserts_of, _cfg, _startup_finding


@rule("V021", "verl-log-prob-micro-batch-unset", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_log_prob_micro_batch_unset(ctx):
    """Neither form of the rollout's (or the reference's) log-prob micro batch is set, and dynamic batching is off.

    ## What it does
    With `actor_rollout_ref.actor.use_dynamic_bsz` off (the default), reports a launch that sets neither
    `rollout.log_prob_micro_batch_size_per_gpu` nor the deprecated `rollout.log_prob_micro_batch_size`, and the
    same pair of `actor_rollout_ref.ref` when the job builds a reference model. Both keys default to null in every
    release; the launch must be whole (no repository config the check cannot read).

    ## Why it matters
    `validate_config` raises "[actor_rollout_ref.rollout] Please set at least one of
    'actor_rollout_ref.rollout.log_prob_micro_batch_size' or '..._per_gpu'" before training starts, after the
    Ray cluster is up.

    ## Example
    A launch that sets `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4` and nothing for the rollout.

    ## Fix
    Add `actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=N` (and the `ref` one).

    ## References
    https://github.com/volcengine/verl/blob/v0.4.1/verl/trainer/ppo/ray_trainer.py#L381
    https://github.com/volcengine/verl/blob/v0.7.0/verl/utils/config.py#L142
    """
    cfg = _cfg(ctx)
    if cfg is None or not cfg.overrides or cfg.values_unknown or cfg.get(f"{ACTOR}.use_dynamic_bsz") is not False:
        return
    row = _asserts_of(cfg, "log_prob_micro_batch")
    if row is None:
        return
    sections = [ROLLOUT] + (["actor_rollout_ref.ref"] if "ref" in ctx.job.roles else [])
    for section in sections:
        old, new = f"{section}.log_prob_micro_batch_size", f"{section}.log_prob_micro_batch_size_per_gpu"
        if cfg.get(old) is None and cfg.get(new) is None:
            yield _startup_finding(
                ctx, cfg, new, f"neither {new} nor the deprecated {old.rsplit('.', 1)[1]} is set and "
                f"use_dynamic_bsz is off: verl raises \"Please set at least one of\" at "
                f"start-up ({row['source']})")
