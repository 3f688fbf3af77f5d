"""O015 critic-without-model."""
from __future__ import annotations

from rlhf_lint.model import UNKNOWN, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _invocations, _k, _remote_reward, _value_text, _where


@rule("O015", "critic-without-model", Severity.ERROR, kinds=SHELL)
def critic_without_model(ctx):
    """GAE (the default estimator) with neither a reward model, a remote reward nor a critic: start-up crashes.

    ## What it does
    With GAE, OpenRLHF initialises the critic from the first `--reward.model_name_or_path` when no critic path is
    given (or from the actor when a remote reward is used). With none of them set, it calls `.split` on `None`
    and stops with `AttributeError` (v0.3.2+).

    ## Why it matters
    A GRPO-style script that forgot `--algo.advantage.estimator` runs GAE by default and crashes this way.

    ## Example
    `python3 -m openrlhf.cli.train_ppo_ray --actor.model_name_or_path M --data.prompt_dataset D`.

    ## Fix
    Choose the estimator you meant (`group_norm`, `reinforce_baseline`, ...) or give a reward model / remote
    reward / critic.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L600-L606
    """
    from rlhf_lint.frameworks.openrlhf import critic_in_use

    k = _k()
    for inv in _invocations(ctx, PPO):
        if k.check_applies("critic_from_reward", inv.tag) is None or critic_in_use(inv) is not True:
            continue
        critic, reward, remote = (inv.get("critic.model_name_or_path"), inv.get("reward.model_name_or_path"),
                                  _remote_reward(inv))
        if critic is UNKNOWN or reward is UNKNOWN or remote is None:
            continue
        if not critic and not reward and not remote:
            span, related = _where(inv, "algo.advantage.estimator")
            yield _checked(
                inv, span,
                f"the estimator is {_value_text(inv, 'algo.advantage.estimator')}: GAE trains a critic "
                "initialised from the reward model, but no reward model, remote reward or critic is "
                "given, so OpenRLHF fails with AttributeError",
                related=related)
