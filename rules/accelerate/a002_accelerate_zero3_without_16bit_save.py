"""A002 accelerate-zero3-without-16bit-save."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import _cfg, _value_span


@rule("A002", "accelerate-zero3-without-16bit-save", Severity.WARNING, kinds={"yaml"}, fixable=True)
def accelerate_zero3_without_16bit_save(ctx):
    """ZeRO-3 without `zero3_save_16bit_model: true`: saved checkpoints hold no usable weights.

    ## What it does
    Reports an accelerate config running ZeRO stage 3 (without a ds_config file) whose `zero3_save_16bit_model` is
    false or missing (accelerate's default is false).

    ## Why it matters
    Under ZeRO-3 every rank holds a shard; without gathering the 16-bit weights on save,
    `save_model`/`save_pretrained` writes placeholders and the final model has to be rebuilt from ZeRO checkpoints
    with `zero_to_fp32.py`. TRL's own ZeRO-3 config sets it to true.

    ## Example
    ```yaml
    deepspeed_config:
      zero_stage: 3
      zero3_save_16bit_model: false
    ```

    ## Fix
    Set `zero3_save_16bit_model: true` (unsafe fix: saving gathers the full model on rank 0).

    ## References
    https://github.com/huggingface/trl/blob/main/examples/accelerate_configs/deepspeed_zero3.yaml
    https://github.com/huggingface/accelerate/blob/main/docs/source/usage_guides/deepspeed.md
    """
    from rlhf_lint.fixers.yaml import insert_after_entry, node_span, replace_scalar

    cfg = _cfg(ctx)
    if cfg is None or not cfg.uses_deepspeed or "deepspeed_config_file" in cfg.deepspeed:
        return
    if cfg.zero_stage() != 3:
        return
    entry = cfg.deepspeed.get("zero3_save_16bit_model")
    if entry is not None and entry.value is False:
        fix = Fix("set zero3_save_16bit_model: true", (replace_scalar(entry.value_node, True),), Applicability.UNSAFE)
        yield Finding(_value_span(entry), "ZeRO-3 with zero3_save_16bit_model false: saved models hold no gathered "
                                          "weights", fix=fix)
    elif entry is None:
        stage = cfg.deepspeed.get("zero_stage")
        fix = None
        if stage is not None:
            edit = insert_after_entry(ctx.source.text, stage.key_node, stage.value_node, "zero3_save_16bit_model", True)
            fix = Fix("add zero3_save_16bit_model: true", (edit,), Applicability.UNSAFE) if edit else None
        span = node_span(stage.key_node) if stage is not None else node_span(cfg.deepspeed_node or cfg.root)
        yield Finding(span, "ZeRO-3 without zero3_save_16bit_model (accelerate's default is false): saved models "
                            "hold no gathered weights", fix=fix)
