"""V024 verl-val-sampling-temperature-zero."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ROLLOUT, _asserts_of, _cfg, _startup_finding


@rule("V024", "verl-val-sampling-temperature-zero", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_val_sampling_temperature_zero(ctx):
    """Validation sampling is on while the rollout temperature is 0 or below.

    ## What it does
    With `actor_rollout_ref.rollout.val_kwargs.do_sample=True` (default False), verl's `validate_config` asserts
    that `actor_rollout_ref.rollout.temperature` (default 1.0) is above 0, from verl 0.3.

    ## Why it matters
    "validation gen temperature should be greater than 0 when enabling do_sample" stops the trainer at start-up.

    ## Example
    `actor_rollout_ref.rollout.temperature=0 actor_rollout_ref.rollout.val_kwargs.do_sample=True`.

    ## Fix
    Give the rollout a temperature above 0, or turn validation sampling off.

    ## References
    https://github.com/volcengine/verl/blob/v0.3.0.post1/verl/trainer/ppo/ray_trainer.py#L382-L384
    https://github.com/volcengine/verl/blob/v0.7.0/verl/utils/config.py#L197
    """
    cfg = _cfg(ctx)
    if cfg is None or cfg.get(f"{ROLLOUT}.val_kwargs.do_sample") is not True:
        return
    row = _asserts_of(cfg, "val_sampling_temperature")
    temperature = cfg.get(f"{ROLLOUT}.temperature")
    if row is None or isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or temperature > 0:
        return
    yield _startup_finding(
        ctx, cfg, f"{ROLLOUT}.temperature",
        f"rollout.temperature is {temperature} while val_kwargs.do_sample is on: verl asserts \"validation "
        f"gen temperature should be greater than 0\" at start-up ({row['source']})")
