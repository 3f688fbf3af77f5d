"""D034 amp-with-fp16-or-bf16."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import precision_section
from rlhf_lint.frameworks.precision import normalise_dtype
from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _amp, _doc, _enabled, _literal, _zero_stage


@rule("D034", "amp-with-fp16-or-bf16", Severity.ERROR, kinds=KINDS)
def amp_with_fp16_or_bf16(ctx):
    """Apex AMP (`amp.enabled`) together with DeepSpeed's fp16 or bf16 mode, or a different accumulation dtype.

    ## What it does
    Without ZeRO (stage 0; with ZeRO see D033), reports `amp.enabled: true` when `fp16.enabled` or `bf16.enabled` is
    true, or when `data_types.grad_accum_dtype` is set to something other than fp32 (AMP keeps an fp32 model).

    ## Why it matters
    The engine raises `NotImplementedError("Cannot enable both amp with (legacy) fp16 or bfloat16 mode")` or `Model
    data type and gradient accumulation data type must be equal to use Amp` at initialize().

    ## Example
    ```json
    {"amp": {"enabled": true}, "fp16": {"enabled": true}}
    ```

    ## Fix
    Keep one mixed-precision mechanism: DeepSpeed's fp16/bf16 block, or amp.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1998-L2003
    """
    doc = _doc(ctx)
    node = None if doc is None else _amp(doc)
    if node is None or _zero_stage(doc) != 0:
        return
    fp16, fp16_node = _enabled(doc, "fp16", ctx)
    bf16, bf16_node = _enabled(doc, precision_section(doc), ctx)
    half = "fp16" if fp16 is True else "bf16" if bf16 is True else None
    accum, accum_node = _literal(doc, "data_types.grad_accum_dtype")
    if half:
        other = fp16_node if half == "fp16" else bf16_node
        yield Finding(node.span, f"amp is enabled together with {half}: DeepSpeed raises NotImplementedError('Cannot "
                                 "enable both amp with (legacy) fp16 or bfloat16 mode')",
                      related=(Related(ctx.source.path, other.span, f"{half} enabled here"),))
    elif normalise_dtype(accum) not in (None, "fp32"):
        yield Finding(node.span, f"amp keeps an fp32 model but grad_accum_dtype is {accum}: DeepSpeed raises "
                                 "NotImplementedError('Model data type and gradient accumulation data type must be "
                                 "equal to use Amp')", related=(Related(ctx.source.path, accum_node.span,
                                                                        "grad_accum_dtype set here"),))
