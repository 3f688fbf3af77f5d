"""V005 verl-micro-batch-both-forms."""
from __future__ import annotations

from rlhf_lint.model import Severity, UNKNOWN
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ACTOR, ROLLOUT, _cfg, _finding


_MICRO_PAIRS = [
    (f"{ACTOR}.ppo_micro_batch_size", f"{ACTOR}.ppo_micro_batch_size_per_gpu"),
    ("critic.ppo_micro_batch_size", "critic.ppo_micro_batch_size_per_gpu"),
    ("actor_rollout_ref.ref.log_prob_micro_batch_size", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"),
    (f"{ROLLOUT}.log_prob_micro_batch_size", f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu"),
    ("reward_model.micro_batch_size", "reward_model.micro_batch_size_per_gpu"),
]


@rule("V005", "verl-micro-batch-both-forms", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_micro_batch_both_forms(ctx):
    """Both the deprecated global micro batch and the per-GPU micro batch are set for the same role.

    ## What it does
    Reports `*micro_batch_size` and `*micro_batch_size_per_gpu` set together (actor, critic, reference and rollout
    log-prob, reward model), and an actor with neither when dynamic batch size is off.

    ## Why it matters
    verl raises "You have set both ... Please remove ..." (or "Please set at least one of ...") at start-up. The
    global form is deprecated; per-GPU values also avoid the host-memory blow-up seen with the old form.

    ## Example
    `actor_rollout_ref.actor.ppo_micro_batch_size=16 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2`

    ## Fix
    Keep the `_per_gpu` form and delete the other.

    ## References
    https://github.com/verl-project/verl/issues/217
    https://github.com/verl-project/verl/blob/main/verl/utils/config.py
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    for old, new in _MICRO_PAIRS:
        a, b = cfg.get(old), cfg.get(new)
        if a not in (None, UNKNOWN) and b not in (None, UNKNOWN):
            yield _finding(ctx, cfg, old, f"both {old.rsplit('.', 1)[1]} = {a} and {new.rsplit('.', 1)[1]} = {b} "
                                          f"are set for {old.rsplit('.', 1)[0]}: verl refuses both; keep the "
                                          "_per_gpu form")
    if (cfg.overrides and not cfg.values_unknown and cfg.get(f"{ACTOR}.use_dynamic_bsz") is False
            and cfg.get(f"{ACTOR}.ppo_micro_batch_size") is None
            and cfg.get(f"{ACTOR}.ppo_micro_batch_size_per_gpu") is None):
        # neither key is written: the finding sits on the launch command
        yield _finding(ctx, cfg, f"{ACTOR}.ppo_micro_batch_size_per_gpu", "neither actor_rollout_ref.actor."
                       "ppo_micro_batch_size_per_gpu nor the deprecated ppo_micro_batch_size is set (and "
                       "use_dynamic_bsz is off): verl asks for one")
