"""D026 one-bit-optimizer-with-zero: a 1-bit optimizer (OneBitAdam, ZeroOneAdam, OneBitLamb) with ZeRO stage 1-3."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _optimizer, _zero_stage, checks


@rule("D026", "one-bit-optimizer-with-zero", Severity.ERROR, kinds=KINDS)
def one_bit_optimizer_with_zero(ctx):
    """A 1-bit optimizer (OneBitAdam, ZeroOneAdam, OneBitLamb) with ZeRO stage 1-3.

    ## What it does
    Reports `optimizer.type` naming a 1-bit optimizer when the ZeRO stage is a literal 1, 2 or 3.

    ## Why it matters
    The engine asserts `1bit-Adam is not compatible with ZeRO` (`0/1 Adam ...`, `1bit-Lamb ...`) when it builds the
    optimizer: the compressed communication replaces the reductions ZeRO partitions.

    ## Example
    ```json
    {"optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4}}, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Use stage 0 with the 1-bit optimizer, or keep ZeRO with Adam/AdamW.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L2146-L2166
    https://www.deepspeed.ai/tutorials/onebit-adam/
    """
    doc = _doc(ctx)
    if doc is None:
        return
    name, node = _optimizer(doc)
    label = checks()["one_bit_optimizers"]["names"].get(name)
    stage = _zero_stage(doc)
    if label and stage in (1, 2, 3):
        yield Finding(node.span, f"{node.value} with ZeRO stage {stage}: DeepSpeed asserts '{label} is not compatible "
                                 "with ZeRO'")
