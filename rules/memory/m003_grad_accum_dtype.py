"""M003 grad-accum-dtype: a bf16/fp16 job accumulates gradients in fp32, doubling the gradient memory."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _estimate, _gib, _what_if


@rule("M003", "grad-accum-dtype", Severity.WARNING, scope="job", fixable=True)
def grad_accum_dtype(ctx):
    """A bf16/fp16 job accumulates gradients in fp32, doubling the gradient memory.

    ## What it does
    Reports a launch whose gradient accumulation dtype is fp32 (written, or the default of the framework release)
    while the model trains in bf16 or fp16, with the memory that costs per GPU or per node (where the gradients
    live in host RAM under optimizer offload). A launch that names a ds_config file is left to the DeepSpeed rule
    on that file.

    ## Why it matters
    Maintainers of OpenRLHF answer host-RAM kills under `--adam_offload` with `--grad_accum_dtype bf16`; older
    OpenRLHF releases accumulated in fp32 by default.

    ## Example
    `--bf16 --adam_offload --zero_stage 2` on OpenRLHF 0.5: 4 bytes per parameter of gradients in host RAM.

    ## Fix
    Adds `--grad_accum_dtype bf16` (or sets the field that carries it). Unsafe: accumulation in 16 bits changes
    numerics slightly.

    ## References
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/engine.py
    """
    job = ctx.job
    setting = job.settings.get("precision.grad_accum_dtype")
    dtype = str(job.value("precision.param_dtype", "") or "").lower()
    if setting is None or str(setting.value).lower() != "fp32" or dtype not in ("bf16", "fp16"):
        return
    if job.settings.get("deepspeed.config_path") is not None:
        return  # the D rule on the ds_config file reports it
    from rlhf_lint.memory.fixes import setting_fix

    est = _estimate(ctx)
    after = _what_if(ctx, {"precision.grad_accum_dtype": dtype})
    saved_gpu = max((g.peak - a.peak for g, a in zip(est.groups, after.groups)), default=0)
    saved_host = max((n.total - m.total for n, m in zip(est.nodes, after.nodes)), default=0)
    cost = []
    if saved_gpu > 0:
        cost.append(f"{_gib(saved_gpu)} per GPU")
    if saved_host > 0:
        cost.append(f"{_gib(saved_host)} of host RAM per node")
    cost_text = " (" + ", ".join(cost) + ")" if cost else ""
    origin = f" [{setting.origin}]" if setting.origin else ""
    fix = setting_fix(ctx.project, job, {"precision.grad_accum_dtype": dtype},
                      f"accumulate gradients in {dtype}", Applicability.UNSAFE)
    yield Finding(setting.span if setting.path == job.path and setting.span else job.span,
                  f"gradients accumulate in fp32 while the model trains in {dtype}{origin}: accumulating in "
                  f"{dtype} saves{cost_text or ' memory'}", fix=fix)
