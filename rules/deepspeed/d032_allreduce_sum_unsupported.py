"""D032 allreduce-sum-unsupported."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import assumed_version_note, version_at_least
from rlhf_lint.readers.json import JValue
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _is_true, _literal, _zero_stage, checks


@rule("D032", "allreduce-sum-unsupported", Severity.ERROR, kinds=KINDS)
def allreduce_sum_unsupported(ctx):
    """Summed gradient reduction (`gradient_allreduce_op: "sum"`) with ZeRO-3, ZenFlow or DeepCompile.

    ## What it does
    Reports `"gradient_allreduce_op": "sum"` when the ZeRO stage is 3, a `zero_optimization.zenflow` block is set,
    or `compile.deepcompile` is true. The key exists from DeepSpeed 0.19.6 (older releases ignore it), so the rule
    applies from that version (configured, pinned, or assumed when unknown).

    ## Why it matters
    DeepSpeed raises `ValueError: gradient_allreduce_op='sum' is not supported with ZeRO stage 3` (or ZenFlow,
    DeepCompile) while it builds the config.

    ## Example
    ```json
    {"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}}
    ```

    ## Fix
    Use "mean" (the default) and scale the loss yourself, or ZeRO stage 1/2.

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/8232
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py#L1029-L1035
    """
    doc = _doc(ctx)
    if doc is None or not version_at_least(ctx, checks()["gradient_allreduce_op"]["since"]):
        return
    op, node = _literal(doc, "gradient_allreduce_op")
    if not (isinstance(op, str) and op.lower() == "sum"):
        return
    reasons = []
    if _zero_stage(doc) == 3:
        reasons.append("ZeRO stage 3")
    zenflow = doc.lookup("zero_optimization.zenflow")
    if zenflow is not None and not (isinstance(zenflow, JValue) and zenflow.value is None):
        reasons.append("ZenFlow")
    if _is_true(doc, "compile.deepcompile"):
        reasons.append("DeepCompile")
    if reasons:
        yield Finding(node.span, f"gradient_allreduce_op \"sum\" is not supported with {' and '.join(reasons)}: "
                                 f"DeepSpeed raises ValueError ({assumed_version_note(ctx)})")
