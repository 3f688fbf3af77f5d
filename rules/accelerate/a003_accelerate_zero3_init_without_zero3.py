"""A003 accelerate-zero3-init-without-zero3."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import _cfg, _value_span


@rule("A003", "accelerate-zero3-init-without-zero3", Severity.WARNING, kinds={"yaml"}, fixable=True)
def accelerate_zero3_init_without_zero3(ctx):
    """The flag `zero3_init_flag: true` is set with a ZeRO stage below 3, which accelerate ignores.

    ## What it does
    Reports `zero3_init_flag: true` when `zero_stage` is 0, 1 or 2 (or unset, accelerate's default being 2).

    ## Why it matters
    `zero3_init_flag` partitions weights as the model is built, which only ZeRO-3 can use; accelerate warns and
    turns it off, so the config promises a low-memory load that does not happen.

    ## Example
    ```yaml
    deepspeed_config:
      zero_stage: 2
      zero3_init_flag: true
    ```

    ## Fix
    Set `zero3_init_flag: false` (safe: accelerate already runs with it off), or move to ZeRO-3.

    ## References
    https://github.com/huggingface/accelerate/blob/16cb6eb8/src/accelerate/utils/dataclasses.py#L1337
    """
    from rlhf_lint.fixers.yaml import replace_scalar

    cfg = _cfg(ctx)
    if cfg is None or not cfg.uses_deepspeed or "deepspeed_config_file" in cfg.deepspeed:
        return
    entry = cfg.deepspeed.get("zero3_init_flag")
    stage = cfg.zero_stage()
    if entry is None or entry.value is not True or not isinstance(stage, int) or stage == 3:
        return
    fix = Fix("set zero3_init_flag: false", (replace_scalar(entry.value_node, False),), Applicability.SAFE)
    yield Finding(_value_span(entry), f"zero3_init_flag is true but zero_stage is {stage}: accelerate ignores it",
                  fix=fix)
