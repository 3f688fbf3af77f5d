"""Z005 orz-no-reward-source: neither a reward model nor a reward function is configured."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.orz._common import _configs, _location, _per_scenario


@rule("Z005", "orz-no-reward-source", Severity.ERROR, kinds={"python"})
def orz_no_reward_source(ctx):
    """Neither a reward model nor a reward function is configured.

    ## What it does
    Reports a config whose `reward_pretrain` evaluates to None while `use_compute_reward_fn` is False.

    ## Why it matters
    ORZ asserts "at least one of reward model or custom reward fn should be set" after start-up.

    ## Example
    ```python
    reward_pretrain: Optional[str] = None
    use_compute_reward_fn: bool = False
    ```

    ## Fix
    Set `use_compute_reward_fn = True` (rule-based reward, as ORZ's playground does) or name a reward model.

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L106
    """
    for config in _configs(ctx):
        def check(scenario):
            if "reward_pretrain" not in scenario.values or "use_compute_reward_fn" not in scenario.values:
                return
            if scenario.get("reward_pretrain") is None and scenario.get("use_compute_reward_fn") is False:
                r = scenario.values.get("use_compute_reward_fn")
                span, related = _location(ctx, config, r)
                msg = "reward_pretrain is None and use_compute_reward_fn is False: ORZ needs one reward source"
                yield (span, msg), lambda sfx: Finding(span, msg + sfx, related=related)
        yield from _per_scenario(config, check)
