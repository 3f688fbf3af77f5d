"""D021 fp32-grad-accum-under-bf16."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import precision_section
from rlhf_lint.frameworks.precision import normalise_dtype
from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JSONDocument, JValue
from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _enabled, _zero_stage


def grad_accum_bf16_fix(text: str, doc: JSONDocument) -> Fix:
    """The edit that makes gradient accumulation bf16 (adds data_types when absent). Also used by memory rules."""
    return Fix('set "data_types": {"grad_accum_dtype": "bf16"}',
               jfix.insert_path(text, doc, ["data_types", "grad_accum_dtype"], "bf16"), Applicability.UNSAFE)


@rule("D021", "fp32-grad-accum-under-bf16", Severity.WARNING, kinds=KINDS, fixable=True)
def fp32_grad_accum_under_bf16(ctx):
    """Training in bf16 accumulates gradients in fp32 (data_types.grad_accum_dtype fp32) under ZeRO.

    ## What it does
    Reports `grad_accum_dtype` fp32 (or float32/float) when bf16 is enabled and the ZeRO stage is 1-3. Without the
    key DeepSpeed accumulates in the model dtype under ZeRO, so an absent key is not reported.

    ## Why it matters
    The gradient partition and its buffers are kept at 4 bytes per element instead of 2: twice the gradient memory,
    on the GPU or, with optimizer offload, in pinned host RAM. OpenRLHF up to 0.5.3 wrote fp32 here by default; its
    maintainers recommend bf16 accumulation when host memory runs out (13B PPO killed with SIGKILL).

    ## Example
    ```json
    {"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}, "data_types": {"grad_accum_dtype": "fp32"}}
    ```

    ## Fix
    Sets `"grad_accum_dtype": "bf16"` (unsafe: accumulation loses precision; usually fine for bf16 training).

    ## References
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    https://github.com/deepspeedai/DeepSpeed/pull/4713
    https://github.com/deepspeedai/DeepSpeed/issues/2352
    """
    doc = _doc(ctx)
    if doc is None:
        return
    bf16, _ = _enabled(doc, precision_section(doc), ctx)
    stage = _zero_stage(doc)
    node = doc.lookup("data_types.grad_accum_dtype")
    if not bf16 or stage is None or stage < 1 or not isinstance(node, JValue):
        return
    if normalise_dtype(node.value) == "fp32":
        yield Finding(node.span, f"gradients accumulate in fp32 under bf16 training (ZeRO-{stage}): twice the "
                                 "gradient memory of bf16 accumulation", fix=grad_accum_bf16_fix(ctx.source.text, doc))
