"""A015 hf-auto-fill-refused."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import HF_FRAMEWORKS, ds_config_docs, package_version, zero_stage


@rule("A015", "hf-auto-fill-refused", Severity.ERROR, kinds=(), scope="job", frameworks=HF_FRAMEWORKS, fixable=True)
def hf_auto_fill_refused(ctx):
    """The HF Trainer fills a ds_config "auto" with a value DeepSpeed refuses at start-up.

    ## What it does
    For an HF Trainer launch (TRL, LLaMA-Factory, `--deepspeed FILE`) under ZeRO-3 whose ds_config says
    `"stage3_prefetch_bucket_size": "auto"`, computes what transformers writes there: 0.9 x hidden_size^2 of the
    model, a float with a fractional part for most models (15099494.4 for a hidden size of 4096) in transformers
    releases before 4.45, which DeepSpeed 0.15.0 and later refuse (schemas/ds_config_auto_fillers.json `fills`). An
    error when both releases are configured or pinned in that window; a warning when one of them is in it and the
    other is not known. The model's hidden size comes from the catalog or the name the launch gives.

    ## Why it matters
    `ValidationError: 1 validation error for DeepSpeedZeroConfig stage3_prefetch_bucket_size Input should be a valid
    integer, got a number with a fractional part` after the processes have started and the tokenizer and data are
    loaded: D023 cannot see it, since the file says "auto".

    ## Example
    ```bash
    # requirements.txt: transformers==4.44.2, deepspeed==0.15.0
    llamafactory-cli train llama3_lora_sft_ds3.yaml  # deepspeed: ds_z3_config.json, prefetch "auto"
    ```

    ## Fix
    Write the whole number in the ds_config (the unsafe fix writes int(0.9 x hidden_size^2) for this model), or use
    transformers 4.45 or later.

    ## References
    https://github.com/hiyouga/LlamaFactory/issues/5252
    https://github.com/huggingface/transformers/pull/33402
    https://github.com/deepspeedai/DeepSpeed/issues/6525
    """
    from rlhf_lint.fixers import json as jfix
    from rlhf_lint.frameworks.deepspeed import version_tuple
    from rlhf_lint.memory.catalog import resolve_model
    from rlhf_lint.schemas import load

    stage, _ = zero_stage(ctx)
    if stage != 3:
        return
    job = ctx.job
    ref = next((v for v in (job.value("model.policy.path"), job.value("model.actor.path")) if isinstance(v, str)),
               None)
    found = resolve_model(ref) if ref else None
    if found is None or found.arch is None or found.how not in ("catalog", "config.json", "name"):
        return  # a shape guessed from a size: its hidden size is not the model's
    arch = found.arch
    tf, tf_note = package_version(ctx, "transformers")
    ds, ds_note = package_version(ctx, "deepspeed")
    for row in load("ds_config_auto_fillers.json")["fills"]["rows"]:
        value = row["hidden_size_factor"] * arch.hidden_size * arch.hidden_size
        if float(value).is_integer():
            continue
        tf_in = None if tf is None else tf < version_tuple(row["float_before"])
        ds_in = None if ds is None else ds >= version_tuple(row["deepspeed_refuses_from"])
        if tf_in is False or ds_in is False or (tf_in is None and ds_in is None):
            continue
        section, _, key = row["key"].partition(".")
        for target, named in ds_config_docs(ctx):
            zero = target.tree.root.get(section)
            member = zero.member(key) if hasattr(zero, "member") else None
            if member is None or getattr(member.value, "value", None) != "auto":
                continue
            known = [tf_note if tf is not None else None, ds_note if ds is not None else None]
            message = (f"{key} \"auto\": transformers before {row['float_before']} fills it with "
                       f"{row['hidden_size_factor']} x hidden_size^2 = {value:.1f} for {arch.name} (hidden size "
                       f"{arch.hidden_size}), and DeepSpeed {row['deepspeed_refuses_from']} on refuses a fractional "
                       f"value for this integer key at start-up (int_from_float) ({'; '.join(k for k in known if k)})")
            severity = None
            if tf_in is None:
                severity, message = Severity.WARNING, message + "; the transformers release is not known (pin it)"
            elif ds_in is None:
                severity, message = Severity.WARNING, message + "; the DeepSpeed release is not known (pin it)"
            fix = Fix(f"write {int(value)} for {key} (what transformers {row['float_before']} writes for this model)",
                      (jfix.set_value(member.value, int(value)),), Applicability.UNSAFE)
            related = (Related(named.path, named.span, f"{job.name} reads this ds_config"),) if named.span else ()
            yield Finding(member.value.span, message, fix=fix, related=related, severity=severity, path=target.path)
