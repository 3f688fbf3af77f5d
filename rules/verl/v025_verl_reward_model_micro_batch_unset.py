"""V025 verl-reward-model-micro-batch-unset."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import _asserts_of, _cfg, _startup_finding


@rule("V025", "verl-reward-model-micro-batch-unset", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_reward_model_micro_batch_unset(ctx):
    """A model-based reward is enabled without its micro batch size (verl 0.2 to 0.7.0).

    ## What it does
    With `reward_model.enable=True` and `reward_model.use_dynamic_bsz` off (and, in 0.7.0, `use_reward_loop` off),
    verl's `validate_config` needs `reward_model.micro_batch_size_per_gpu` or the deprecated
    `reward_model.micro_batch_size`; both default to null. verl 0.7.1 moved the reward model's config and dropped the
    check, so a release from 0.7.1 is not judged; with no known release the finding is a warning. A launch that
    sets `reward_model.use_reward_loop` on a release without it is left to V001 (the override fails first).

    ## Why it matters
    `ValueError: [reward_model] Please set at least one of 'reward_model.micro_batch_size' or
    'reward_model.micro_batch_size_per_gpu'` stops the trainer at start-up.

    ## Example
    `reward_model.enable=True reward_model.model.path=...` and no micro batch.

    ## Fix
    Set `reward_model.micro_batch_size_per_gpu`.

    ## References
    https://github.com/volcengine/verl/blob/v0.4.1/verl/trainer/ppo/ray_trainer.py#L428-L429
    https://github.com/volcengine/verl/blob/v0.7.0/verl/utils/config.py#L171-L177
    """
    cfg = _cfg(ctx)
    if cfg is None or not cfg.overrides or cfg.values_unknown or cfg.get("reward_model.enable") is not True \
            or cfg.get("reward_model.use_dynamic_bsz") is True:
        return
    row = _asserts_of(cfg, "reward_model_micro_batch")
    loop = cfg.where("reward_model.use_reward_loop") is not None
    if row is None or (row.get("reward_loop_skips") and cfg.get("reward_model.use_reward_loop") is not False
                       and cfg.exists("reward_model.use_reward_loop")):
        return
    if loop and not row.get("reward_loop_skips"):
        return  # a launch written for the reward loop of 0.7.0+: V001 reports the key this release lacks
    old, new = "reward_model.micro_batch_size", "reward_model.micro_batch_size_per_gpu"
    if cfg.get(old) is not None or cfg.get(new) is not None:
        return
    yield _startup_finding(
        ctx, cfg, "reward_model.enable",
        f"reward_model.enable is on with neither {new} nor the deprecated micro_batch_size set and "
        f"dynamic batch size off: verl raises \"Please set at least one of\" at start-up ({row['source']})"
        + ("" if cfg.exact else f"; verl release not known: 0.7.1 and later do not check"),
        severity=None if cfg.exact else Severity.WARNING)
