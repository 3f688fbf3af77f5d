"""O013 estimator-needs-samples."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _invocations, _k, _num, _on, _value_text, _where


@rule("O013", "estimator-needs-samples", Severity.ERROR, kinds=SHELL)
def estimator_needs_samples(ctx):
    """A group-baseline estimator or dynamic filtering with one sample per prompt: OpenRLHF asserts n > 1.

    ## What it does
    `rloo` (from v0.5.3), `reinforce_baseline` and `group_norm` (GRPO, from v0.6.0) and `dr_grpo` (v0.11.0)
    compare samples of the same prompt, and dynamic filtering (v0.8.1+) filters on them: each needs
    `--rollout.n_samples_per_prompt > 1`, whose default is 1.

    ## Why it matters
    The assertion fires at start-up; with one sample the group baseline would be the sample itself.

    ## Example
    `--algo.advantage.estimator group_norm` without `--rollout.n_samples_per_prompt`.

    ## Fix
    Set `--rollout.n_samples_per_prompt` to the group size (e.g. 8).

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L612-L615
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L707-L709
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        n = _num(inv, "rollout.n_samples_per_prompt")
        if n is None or n > 1:
            continue
        row = k.check_applies("estimator_needs_samples", inv.tag)
        estimator = inv.get("algo.advantage.estimator")
        if row is not None and isinstance(estimator, str) and estimator in row["params"]["estimators"]:
            span, related = _where(inv, "rollout.n_samples_per_prompt", "algo.advantage.estimator")
            yield _checked(
                inv, span,
                f"estimator {estimator} needs more than one sample per prompt, but "
                f"n_samples_per_prompt is {_value_text(inv, 'rollout.n_samples_per_prompt')}",
                related=related)
        if k.check_applies("dynamic_filtering", inv.tag) is not None and _on(inv, "algo.dynamic_filtering_enable"):
            span, related = _where(inv, "rollout.n_samples_per_prompt", "algo.dynamic_filtering_enable")
            yield _checked(
                inv, span,
                "dynamic filtering needs more than one sample per prompt, but n_samples_per_prompt "
                f"is {_value_text(inv, 'rollout.n_samples_per_prompt')}",
                related=related)
