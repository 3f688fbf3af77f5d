"""O019 vlm-restriction: vision-language training (`--data.max_images_per_prompt > 0`) with a critic or with packing."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _invocations, _k, _num, _on, _value_text, _where


@rule("O019", "vlm-restriction", Severity.ERROR, kinds=SHELL)
def vlm_restriction(ctx):
    """Vision-language training (`--data.max_images_per_prompt > 0`) with a critic or with packing.

    ## What it does
    From v0.10.0 OpenRLHF asserts that VLM training uses no critic (choose an estimator other than GAE) and no
    sample packing.

    ## Why it matters
    The assertion fires at start-up.

    ## Example
    `--data.max_images_per_prompt 1 --ds.packing_samples`.

    ## Fix
    Use a critic-free estimator and drop packing for VLM runs.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L618-L627
    """
    from rlhf_lint.frameworks.openrlhf import critic_in_use

    k = _k()
    for inv in _invocations(ctx, PPO):
        images = _num(inv, "data.max_images_per_prompt")
        if k.check_applies("vlm_restrictions", inv.tag) is None or images is None or images <= 0:
            continue
        if critic_in_use(inv):
            span, related = _where(inv, "algo.advantage.estimator", "data.max_images_per_prompt")
            yield _checked(
                inv, span,
                "VLM training does not support a critic; the estimator is "
                f"{_value_text(inv, 'algo.advantage.estimator')}",
                related=related)
        if _on(inv, "ds.packing_samples"):
            span, related = _where(inv, "ds.packing_samples", "data.max_images_per_prompt")
            yield _checked(
                inv, span,
                "VLM training does not support sample packing",
                related=related)
