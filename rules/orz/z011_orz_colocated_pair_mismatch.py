"""Z011 orz-colocated-pair-mismatch."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.orz._common import _configs, _location, _per_scenario

TRAINER_URL = "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/trainer.py"
# (switch, first role, second role, line of the assert in build_models)
PAIRS = (("colocate_actor_ref", "actor", "ref", 630), ("colocate_critic_reward", "critic", "reward", 660))


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@rule("Z011", "orz-colocated-pair-mismatch", Severity.ERROR, kinds={"python"})
def orz_colocated_pair_mismatch(ctx):
    """Without `colocate_all`, a colocated pair of roles (actor + reference, critic + reward) has different counts.

    ## What it does
    When `colocate_all` is off, ORZ's `RayPPOTrainer.build_models` puts the reference on the actor's placement group
    when `colocate_actor_ref` is on, and the reward model on the critic's when `colocate_critic_reward` is on (both
    default True in `BasePPOExpConfig`), asserting that the pair has equal `*_num_nodes` and `*_num_gpus_per_node`.
    The critic/reward assert runs whether or not a critic or reward model is built. Each value is the one the class
    would have (the subclass override or the inherited default), per DEBUG_MODE-style scenario.

    ## Why it matters
    "num_nodes and num_gpus_per_node must be the same when colocate actor and ref model" (or "critic and reward
    model") fires after the dataset is loaded and the Ray cluster started.

    ## Example
    ```python
    colocate_all: bool = False
    critic_num_gpus_per_node: int = 4  # reward_num_gpus_per_node stays 2
    ```

    ## Fix
    Give both roles of the pair the same counts, or turn the pair's colocation off.

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/trainer.py#L630
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/trainer.py#L660
    """
    for config in _configs(ctx):
        def check(scenario):
            if scenario.get("colocate_all") is not False:
                return  # True: Z010's assert instead; unknown: which branch runs is not known
            for switch, a, b, line in PAIRS:
                if scenario.get(switch) is not True:
                    continue
                for what in ("num_nodes", "num_gpus_per_node"):
                    ka, kb = f"{a}_{what}", f"{b}_{what}"
                    va, vb = _int(scenario.get(ka)), _int(scenario.get(kb))
                    if va is None or vb is None or va == vb:
                        continue
                    # point at the one written in this file (the other may be inherited)
                    written_b = getattr(scenario.values.get(kb), "path", None) == ctx.source.path
                    written_a = getattr(scenario.values.get(ka), "path", None) == ctx.source.path
                    key = kb if written_b and not written_a else ka
                    span, related = _location(ctx, config, scenario.values.get(key))
                    msg = (f"{switch} = True with {ka} = {va} but {kb} = {vb}: ORZ's build_models asserts "
                           f"\"num_nodes and num_gpus_per_node must be the same\" ({TRAINER_URL}#L{line})")
                    yield (span, msg), lambda sfx, span=span, msg=msg, related=related: Finding(
                        span, msg + sfx, related=related)
                    break
        yield from _per_scenario(config, check)
