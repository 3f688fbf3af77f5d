"""D016 partial-offload-without-zero3."""
from __future__ import annotations

from rlhf_lint.readers.json import JValue
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _zero_stage


@rule("D016", "partial-offload-without-zero3", Severity.ERROR, kinds=KINDS)
def partial_offload_without_zero3(ctx):
    """Partial optimizer offload (offload_optimizer.ratio below 1) without ZeRO stage 3.

    ## What it does
    Reports a literal `ratio` < 1.0 in `offload_optimizer` when the stage is a literal other than 3.

    ## Why it matters
    DeepSpeed's model validator raises `Partial offloading only supported for ZeRO Stage 3.` at start-up.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    ```

    ## Fix
    Use stage 3, or remove `ratio` to offload the whole optimizer state.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/config.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    stage = _zero_stage(doc)
    node = doc.lookup("zero_optimization.offload_optimizer.ratio")
    if stage is None or stage == 3 or not isinstance(node, JValue):
        return
    if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and node.value < 1.0:
        yield Finding(node.span, f"offload_optimizer.ratio {node.value} needs ZeRO stage 3 (stage is {stage}): "
                                 "DeepSpeed raises 'Partial offloading only supported for ZeRO Stage 3.'")
