"""D035 grad-accum-dtype-without-zero."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import assumed_version_note, precision_section, version_at_least
from rlhf_lint.frameworks.precision import normalise_dtype
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _amp, _doc, _enabled, _literal, _zero_stage, checks


@rule("D035", "grad-accum-dtype-without-zero", Severity.ERROR, kinds=KINDS)
def grad_accum_dtype_without_zero(ctx):
    """Without ZeRO, the gradient accumulation dtype differs from the model dtype (e.g. bf16 with fp32 accumulation).

    ## What it does
    At ZeRO stage 0 without amp, reports a `grad_accum_dtype` other than the dtype fp16/bf16/fp32 training uses.
    bf16 with fp32 accumulation is reported only from DeepSpeed 0.18.5 (before, it selected BF16_Optimizer).

    ## Why it matters
    The engine raises `NotImplementedError: unsupported mix of model_dtype=... and grad_accum_dtype=...` when it
    builds the optimizer. PR #7790 (0.18.5) removed the bf16 + fp32 path without ZeRO.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"}}
    ```

    ## Fix
    Use ZeRO stage 1 (bf16 with fp32 accumulation then runs BF16_Optimizer), or drop `grad_accum_dtype`.

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/7790
    https://github.com/deepspeedai/DeepSpeed/pull/7803
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L2008-L2021
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) != 0 or _amp(doc) is not None:
        return
    accum_raw, node = _literal(doc, "data_types.grad_accum_dtype")
    accum = normalise_dtype(accum_raw)
    fp16, fp16_node = _enabled(doc, "fp16", ctx)
    bf16, bf16_node = _enabled(doc, precision_section(doc), ctx)
    # "auto" (or another undecidable value) in a precision section that is not overruled by one enabled for sure
    undecided = (fp16 is None and fp16_node is not None) or (bf16 is None and bf16_node is not None)
    if accum is None or (undecided and fp16 is not True and bf16 is not True):
        return  # unknown model dtype
    model = "fp16" if fp16 is True else "bf16" if bf16 is True else "fp32"
    if accum == model:
        return
    since = checks()["mixed_grad_accum_without_zero"]["bf16_fp32_rejected_since"]
    note = ""
    if model == "bf16" and accum == "fp32":
        if not version_at_least(ctx, since):
            return
        note = f" since DeepSpeed {since} ({assumed_version_note(ctx)}); ZeRO stage 1 runs this mix with BF16_Optimizer"
    yield Finding(node.span, f"grad_accum_dtype {accum} with a {model} model and no ZeRO: DeepSpeed raises "
                             f"NotImplementedError (unsupported mix){note}")
