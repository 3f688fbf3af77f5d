"""O010 colocated-groups-differ."""
from __future__ import annotations

from rlhf_lint.model import UNKNOWN, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _invocations, _k, _num, _on, _value_text, _where


@rule("O010", "colocated-groups-differ", Severity.ERROR, kinds=SHELL)
def colocated_groups_differ(ctx):
    """Colocated model groups with different node or GPU counts: OpenRLHF asserts they are equal.

    ## What it does
    With `--train.colocate_actor_ref` (or `--train.colocate_all`) the actor and reference model share one
    placement group, so their `num_nodes` and `num_gpus_per_node` must match (when a reference model is built:
    `--algo.kl.init_coef > 0`, from v0.6.1). With `--train.colocate_critic_reward` the critic and reward model
    must match. Defaults of the targeted release count (1 node; 8 GPUs per node since v0.2.6).

    ## Why it matters
    The assertion fires after Ray is up, so the allocation is spent for nothing.

    ## Example
    ```bash
    --actor.num_gpus_per_node 4 --train.colocate_actor_ref   # ref keeps the default 8
    ```

    ## Fix
    Give both roles the same `num_nodes` and `num_gpus_per_node`.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L41-L46
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L109-L113
    """
    from rlhf_lint.frameworks.openrlhf import critic_in_use

    k = _k()
    for inv in _invocations(ctx, PPO):
        row = k.check_applies("colocate_actor_ref_same_gpus", inv.tag)
        if row is not None and (_on(inv, "train.colocate_actor_ref") or _on(inv, "train.colocate_all")):
            kl = _num(inv, "algo.kl.init_coef")
            needs_kl = row["params"].get("needs_kl")
            ref_built = not (needs_kl and inv.tag >= k.index(needs_kl)) or kl is None or kl > 0
            if ref_built and inv.get("algo.kl.init_coef") is not UNKNOWN:
                yield from _same_topology(inv, "actor", "ref", "the actor and reference model are colocated")
        row = k.check_applies("colocate_critic_reward_same_gpus", inv.tag)
        if row is not None and _on(inv, "train.colocate_critic_reward") and critic_in_use(inv) \
                and inv.get("reward.model_name_or_path"):
            yield from _same_topology(inv, "critic", "reward", "the critic and reward model are colocated")


def _same_topology(inv, a, b, why):
    for part in ("num_nodes", "num_gpus_per_node"):
        va, vb = _num(inv, f"{a}.{part}"), _num(inv, f"{b}.{part}")
        if va is None or vb is None or va == vb:
            continue
        span, related = _where(inv, f"{a}.{part}", f"{b}.{part}", "train.colocate_actor_ref", "train.colocate_all",
                               "train.colocate_critic_reward")
        yield _checked(
            inv, span,
            f"{why}, so {a} and {b} need the same {part}: {a} has {_value_text(inv, f'{a}.{part}')}, "
            f"{b} has {_value_text(inv, f'{b}.{part}')}; OpenRLHF asserts this at start-up",
            related=related)
