"""A011 trl-dpo-precompute-ref-under-zero3."""
from __future__ import annotations

from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import HF_FRAMEWORKS, here, launch_setting, package_version, zero_stage


@rule("A011", "trl-dpo-precompute-ref-under-zero3", Severity.ERROR, kinds=(), scope="job", frameworks=HF_FRAMEWORKS)
def trl_dpo_precompute_ref_under_zero3(ctx):
    """TRL's DPOTrainer fails at start-up with `precompute_ref_log_probs=True` under DeepSpeed (TRL 0.7.5 to 1.8).

    ## What it does
    Reports a DPO launch that sets `precompute_ref_log_probs` while the DeepSpeed config it runs with (the
    `--deepspeed` file, or the accelerate config's `zero_stage`) is ZeRO stage 3. TRL 0.7.5 up to 0.28 raise in
    `DPOTrainer.__init__`; the rewritten DPOTrainer of 0.29 no longer does, but until 1.9 it computes the reference
    log-probs in `__init__` on the model DeepSpeed has not prepared, which crashes under ZeRO-1, 2 and 3 when the
    reference is the policy itself (no LoRA; PR #6403). With no TRL release configured or pinned the finding is a
    ZeRO-3 warning that says so.

    ## Why it matters
    `ValueError: You cannot use precompute_ref_log_probs=True with Deepspeed ZeRO-3` after the policy and reference
    models were loaded.

    ## Example
    `trl dpo --deepspeed ds_zero3.json --precompute_ref_log_probs ...`

    ## Fix
    Drop `precompute_ref_log_probs` (the reference model then runs beside the policy, sharded by ZeRO), or move to
    TRL >= 1.9.

    ## References
    https://github.com/huggingface/trl/blob/v0.28.0/trl/trainer/dpo_trainer.py
    https://github.com/huggingface/trl/pull/885
    https://github.com/huggingface/trl/pull/3906
    https://github.com/huggingface/trl/pull/6403
    """
    from rlhf_lint.frameworks.deepspeed import version_tuple
    from rlhf_lint.schemas import load

    job = ctx.job
    if job.value("job.type") != "dpo":
        return
    pre = launch_setting(ctx, "trl.precompute_ref_log_probs")
    if pre is None or pre.value is not True:
        return
    stage, stage_s = zero_stage(ctx)
    if stage is None:
        return
    checks = load("hf/trl_checks.json")
    refused, crashes = checks["dpo_precompute_zero3"], checks["dpo_precompute_deepspeed"]
    version, note = package_version(ctx, "trl")

    def within(fact) -> bool:
        return version_tuple(fact["since"]) <= version < version_tuple(fact["until"])

    severity = None
    if version is None:
        if stage != 3:
            return  # ZeRO-1/2 crash only in 0.29-1.8: too narrow a window to assume
        severity = Severity.WARNING
        note += f": TRL {refused['since']} to {refused['until']} (exclusive) raise, later releases do not"
        what = "DPOTrainer raises ValueError at start-up"
    elif stage == 3 and within(refused):
        what = "DPOTrainer raises ValueError at start-up"
    elif stage in crashes["stages"] and within(crashes) and not job.value("train.lora_rank"):
        what = f"{crashes['message']}; fixed in TRL {crashes['until']}"
    else:
        return
    if job.framework != "trl":
        severity = Severity.WARNING  # a script with TRL's flag, not known to run TRL's DPOTrainer
        note += "; the script is taken to run TRL's DPOTrainer"
    related = ()
    if stage_s is not None and stage_s.path is not None:
        related = (Related(stage_s.path, stage_s.span, f"ZeRO stage {stage} here"),)
    span, path = here(ctx, pre)
    yield Finding(span, f"precompute_ref_log_probs with DeepSpeed ZeRO-{stage}: {what} ({note})", related=related,
                  severity=severity, path=path)
