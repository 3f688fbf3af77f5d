"""A011 trl-dpo-precompute-ref-under-zero3."""
from __future__ import annotations

from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import HF_FRAMEWORKS, here, launch_setting, package_version, zero_stage


@rule("A011", "trl-dpo-precompute-ref-under-zero3", Severity.ERROR, kinds=(), scope="job", frameworks=HF_FRAMEWORKS)
def trl_dpo_precompute_ref_under_zero3(ctx):
    """TRL's DPOTrainer refuses `precompute_ref_log_probs=True` under DeepSpeed ZeRO-3 (TRL 0.7.5 to 0.28).

    ## What it does
    Reports a DPO launch that sets `precompute_ref_log_probs` while the DeepSpeed config it runs with (the
    `--deepspeed` file, or the accelerate config's `zero_stage`) is ZeRO stage 3. TRL 0.7.5 up to 0.28 raise in
    `DPOTrainer.__init__`; the rewritten DPOTrainer of 0.29 no longer does. With no TRL release configured or pinned
    the finding is a warning that says so.

    ## Why it matters
    `ValueError: You cannot use precompute_ref_log_probs=True with Deepspeed ZeRO-3` after the policy and reference
    models were loaded.

    ## Example
    `trl dpo --deepspeed ds_zero3.json --precompute_ref_log_probs ...`

    ## Fix
    Drop `precompute_ref_log_probs` (the reference model then runs beside the policy, sharded by ZeRO-3), use
    ZeRO-2, or move to TRL >= 0.29.

    ## References
    https://github.com/huggingface/trl/blob/v0.28.0/trl/trainer/dpo_trainer.py
    https://github.com/huggingface/trl/pull/885
    https://github.com/huggingface/trl/pull/3906
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
    if stage != 3:
        return
    fact = load("hf/trl_checks.json")["dpo_precompute_zero3"]
    version, note = package_version(ctx, "trl")
    severity = None
    if version is None:
        severity = Severity.WARNING
        note += f": TRL {fact['since']} to {fact['until']} (exclusive) raise, later releases do not"
    elif not version_tuple(fact["since"]) <= version < version_tuple(fact["until"]):
        return
    if job.framework != "trl":
        severity = Severity.WARNING  # a script with TRL's flag, not known to run TRL's DPOTrainer
        note += "; the script is taken to run TRL's DPOTrainer"
    related = ()
    if stage_s is not None and stage_s.path is not None:
        related = (Related(stage_s.path, stage_s.span, "ZeRO stage 3 here"),)
    span, path = here(ctx, pre)
    yield Finding(span, f"precompute_ref_log_probs with DeepSpeed ZeRO-3: DPOTrainer raises ValueError at start-up "
                        f"({note})", related=related, severity=severity, path=path)
