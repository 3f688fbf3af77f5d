"""A012 hf-trainer-ds-config-mismatch."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import HF_FRAMEWORKS, ds_config_docs, launch_setting, world_size

# ds_config key -> (TrainingArguments field, setting, TrainingArguments default or None: compare only when given)
PAIRS = (
    ("train_micro_batch_size_per_gpu", "per_device_train_batch_size", "batch.micro_train", 8),
    ("gradient_accumulation_steps", "gradient_accumulation_steps", "batch.grad_accum", 1),
    ("gradient_clipping", "max_grad_norm", "hf.max_grad_norm", 1.0),
    ("fp16.enabled", "fp16", "hf.mixed_precision", None),
    ("bf16.enabled", "bf16", "hf.mixed_precision", None),
)


@rule("A012", "hf-trainer-ds-config-mismatch", Severity.ERROR, kinds=(), scope="job", frameworks=HF_FRAMEWORKS,
      fixable=True)
def hf_trainer_ds_config_mismatch(ctx):
    """A ds_config value differs from the TrainingArguments of the HF Trainer launch that reads it.

    ## What it does
    The Hugging Face Trainer fills the ds_config's "auto" values from TrainingArguments and compares every value
    written out (`HfTrainerDeepSpeedConfig.fill_match`): `train_micro_batch_size_per_gpu` with
    `per_device_train_batch_size`, `gradient_accumulation_steps`, `train_batch_size` with world size x per-device
    batch x accumulation, `gradient_clipping` with `max_grad_norm`, `fp16.enabled` / `bf16.enabled` with `fp16` /
    `bf16`. Any difference is collected and `trainer_config_finalize` raises. The comparison is Python's `!=`, so a
    number written as a string (`"4"`) differs from 4 too. This rule redoes it for TRL, LLaMA-Factory and
    `--deepspeed FILE` launches; an argument the launch does not give takes TrainingArguments' default (per-device
    batch 8, accumulation 1, max_grad_norm 1.0; precision flags are compared only when given, TRL's default changed
    across releases). For a script that is not known to parse TrainingArguments from its flags (a plain `train.py`)
    the finding is a warning.

    ## Why it matters
    `ValueError: Please correct the following DeepSpeed config values that mismatch TrainingArguments values:
    - ds train_micro_batch_size_per_gpu=4 vs hf per_device_train_batch_size=8` after the model was loaded.

    ## Example
    `trl sft --deepspeed ds.json --per_device_train_batch_size 8` with `"train_micro_batch_size_per_gpu": 4`.

    ## Fix
    An unsafe fix writes "auto" in the ds_config, so the Trainer fills in its own value; or make the two agree.

    ## References
    https://github.com/huggingface/transformers/blob/v4.46.0/src/transformers/integrations/deepspeed.py
    https://github.com/huggingface/transformers/issues/24445
    """
    from rlhf_lint.fixers import json as jfix

    job = ctx.job
    certain = job.value("hf.certain") is True
    world, world_s, world_assumed = world_size(ctx)
    for target, ref in ds_config_docs(ctx):
        doc = target.tree
        values = {}
        for ds_key, field, key, default in PAIRS:
            s = launch_setting(ctx, key)
            if key == "hf.mixed_precision":
                if s is None or s.value not in ("bf16", "fp16", "no"):
                    continue
                value = s.value == ds_key.partition(".")[0]
            elif s is not None:
                if s.value is None or type(s.value) not in (int, float):
                    continue
                value = s.value
            elif certain:
                value = default
            else:
                continue
            values[ds_key] = (value, s, field)
        per, accum = values.get("train_micro_batch_size_per_gpu"), values.get("gradient_accumulation_steps")
        if per is not None and accum is not None and world is not None and not world_assumed:
            values["train_batch_size"] = (world * per[0] * accum[0], world_s,
                                          f"train_batch_size (world {world} x {per[0]} x {accum[0]})")
        for ds_key, (hf_value, s, field) in values.items():
            node = doc.lookup(ds_key)
            if node is None:
                continue
            ds_value = node.to_python()
            if ds_value == "auto" or ds_value is None or ds_value == hf_value:
                continue
            if isinstance(ds_value, (dict, list)):
                continue
            given = s is not None and s.path is not None and ds_key != "train_batch_size"
            why = "" if given or ds_key == "train_batch_size" else " (TrainingArguments default: not given)"
            quoted = " (a string: the Trainer compares with !=)" if isinstance(ds_value, str) else ""
            message = (f"ds_config {ds_key}={jfix.dumps(ds_value)}{quoted} vs TrainingArguments "
                       f"{field}={jfix.dumps(hf_value)}{why}: the HF Trainer raises ValueError at start-up")
            severity = None
            if not certain:
                severity = Severity.WARNING
                message += "; the script is taken to parse TrainingArguments from its flags"
            related = [Related(ref.path, ref.span, f"{job.name} reads this ds_config")] if ref.span else []
            if s is not None and s.span is not None and s.path is not None:
                related.append(Related(s.path, s.span, f"TrainingArguments {field}={jfix.dumps(hf_value)} from here"))
            fix = Fix(f"write \"auto\" for {ds_key}: the Trainer fills in its value",
                      (jfix.set_value(node, "auto"),), Applicability.UNSAFE)
            yield Finding(node.span, message, fix=fix, related=tuple(related), severity=severity, path=target.path)
