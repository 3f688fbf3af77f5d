"""A: accelerate config YAML (as used by TRL's example configs) with DeepSpeed, checked as accelerate reads it."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule


def _cfg(ctx):
    from rlhf_lint.frameworks.accelerate import read

    if ctx.source is None or "distributed_type" not in ctx.source.text and "compute_environment" not in ctx.source.text:
        return None
    return read(ctx.source)


def _value_span(entry):
    from rlhf_lint.fixers.yaml import node_span

    return node_span(entry.value_node)


@rule("A001", "accelerate-ds-config-file-conflict", Severity.ERROR, kinds={"yaml"}, fixable=True)
def ds_config_file_conflict(ctx):
    """A `deepspeed_config_file` is set together with fields accelerate refuses beside it.

    ## What it does
    Reports, in an accelerate config whose `deepspeed_config` names a `deepspeed_config_file`, the entries
    `gradient_accumulation_steps`, `gradient_clipping`, `zero_stage`, `offload_*_device`, `offload_*_nvme_path`,
    `zero3_save_16bit_model` and a top-level `mixed_precision`.

    ## Why it matters
    accelerate raises "When using `deepspeed_config_file`, the following accelerate config variables will be
    ignored" when the DeepSpeed plugin is built: those values belong in the ds_config file.

    ## Example
    ```yaml
    deepspeed_config:
      deepspeed_config_file: ds_z3.json
      zero_stage: 3
    distributed_type: DEEPSPEED
    ```

    ## Fix
    Delete the entry and set the value in the ds_config file (unsafe fix: check the file says what you meant).

    ## References
    https://github.com/huggingface/accelerate/blob/16cb6eb8/src/accelerate/utils/dataclasses.py#L1507
    https://github.com/huggingface/accelerate/blob/main/docs/source/usage_guides/deepspeed.md
    """
    from rlhf_lint.frameworks.accelerate import deepspeed_keys
    from rlhf_lint.fixers.yaml import delete_entry, node_span

    cfg = _cfg(ctx)
    if cfg is None or "deepspeed_config_file" not in cfg.deepspeed or not cfg.uses_deepspeed:
        return
    refused = deepspeed_keys()["ignored_with_config_file"]
    entries = [cfg.deepspeed[k] for k in cfg.deepspeed if k in refused]
    if "mixed_precision" in cfg.top:
        entries.append(cfg.top["mixed_precision"])
    for entry in sorted(entries, key=lambda e: e.key_node.start_mark.index):
        edit = delete_entry(ctx.source.text, entry.key_node, entry.value_node)
        fix = Fix(f"delete {entry.key}", (edit,), Applicability.UNSAFE) if edit is not None else None
        yield Finding(node_span(entry.key_node), f"{entry.key} cannot be set beside deepspeed_config_file: accelerate "
                                                 "refuses it; set it in the ds_config file", fix=fix)


@rule("A002", "accelerate-zero3-without-16bit-save", Severity.WARNING, kinds={"yaml"}, fixable=True)
def zero3_without_16bit_save(ctx):
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


@rule("A003", "accelerate-zero3-init-without-zero3", Severity.WARNING, kinds={"yaml"}, fixable=True)
def zero3_init_without_zero3(ctx):
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


@rule("A004", "accelerate-unknown-deepspeed-key", Severity.WARNING, kinds={"yaml"})
def unknown_deepspeed_key(ctx):
    """A key of `deepspeed_config` that accelerate does not read, so its value is silently ignored.

    ## What it does
    Checks the keys of an accelerate config's `deepspeed_config` section against the ones `accelerate config` writes
    and `accelerate launch` reads, and suggests the closest known key.

    ## Why it matters
    accelerate copies unknown keys onto its arguments without using them: `zero_stag: 3` or `offload_optimizer: cpu`
    leaves the run at the defaults (ZeRO-2, no offload) without a word.

    ## Example
    ```yaml
    deepspeed_config:
      offload_optimizer: cpu
    ```

    ## Fix
    Use the documented key (`offload_optimizer_device: cpu`).

    ## References
    https://github.com/huggingface/accelerate/blob/16cb6eb8/src/accelerate/commands/config/cluster.py
    https://github.com/huggingface/accelerate/blob/16cb6eb8/src/accelerate/commands/launch.py
    """
    import difflib

    from rlhf_lint.frameworks.accelerate import deepspeed_keys
    from rlhf_lint.fixers.yaml import node_span

    cfg = _cfg(ctx)
    if cfg is None:
        return
    known = deepspeed_keys()["keys"]
    for key, entry in cfg.deepspeed.items():
        if key in known:
            continue
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else ""
        yield Finding(node_span(entry.key_node), f"deepspeed_config key {key!r} is not read by accelerate{hint}")
