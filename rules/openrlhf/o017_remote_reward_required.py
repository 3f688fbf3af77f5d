"""O017 remote-reward-required."""
from __future__ import annotations

from rlhf_lint.model import UNKNOWN, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _invocations, _k, _on, _where


@rule("O017", "remote-reward-required", Severity.ERROR, kinds=SHELL)
def remote_reward_required(ctx):
    """Evaluation or dynamic filtering without a remote reward (or agent function): OpenRLHF asserts.

    ## What it does
    `--eval.dataset` requires `--reward.remote_url` (v0.7.0..v0.10.3) or also accepts `--train.agent_func_path`
    (v0.10.4+); dynamic filtering requires one of them (v0.8.1+).

    ## Why it matters
    The assertion fires at start-up.

    ## Example
    `--eval.dataset D --reward.model_name_or_path RM`.

    ## Fix
    Serve the reward remotely (`openrlhf.cli.serve_rm`) or drop the option.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L676-L681
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L700-L706
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        remote, agent = inv.get("reward.remote_url"), inv.get("train.agent_func_path")
        if remote is UNKNOWN or agent is UNKNOWN or remote:
            continue
        row = k.check_applies("eval_needs_remote_reward", inv.tag)
        if row is not None and inv.get("eval.dataset") and not (agent and row["params"]["agent_ok"]):
            span, related = _where(inv, "eval.dataset")
            needs = "a remote reward or an agent function" if row["params"]["agent_ok"] else "a remote reward"
            yield _checked(
                inv, span,
                f"an eval dataset needs {needs}",
                related=related)
        if k.check_applies("dynamic_filtering", inv.tag) and _on(inv, "algo.dynamic_filtering_enable") and not agent:
            span, related = _where(inv, "algo.dynamic_filtering_enable")
            yield _checked(
                inv, span,
                "dynamic filtering needs a remote reward or an agent function",
                related=related)
