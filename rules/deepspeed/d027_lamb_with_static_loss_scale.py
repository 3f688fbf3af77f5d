"""D027 lamb-with-static-loss-scale: lAMB or OneBitLamb with a static fp16 loss scale."""
from __future__ import annotations

from rlhf_lint.fixers import json as jfix
from rlhf_lint.model import Applicability, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _enabled, _literal, _number, _optimizer, checks


@rule("D027", "lamb-with-static-loss-scale", Severity.ERROR, kinds=KINDS, fixable=True)
def lamb_with_static_loss_scale(ctx):
    """LAMB or OneBitLamb with a static fp16 loss scale.

    ## What it does
    Reports `fp16.loss_scale` other than 0 (0 means dynamic) when fp16 is enabled and `optimizer.type` is lamb or
    onebitlamb.

    ## Why it matters
    The engine asserts `DeepSpeed lamb optimizer requires dynamic loss scaling` at initialize().

    ## Example
    ```json
    {"optimizer": {"type": "Lamb"}, "fp16": {"enabled": true, "loss_scale": 128}}
    ```

    ## Fix
    Sets `loss_scale` to 0, dynamic scaling (unsafe: the scale now moves during training).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1696-L1698
    """
    doc = _doc(ctx)
    if doc is None:
        return
    name, type_node = _optimizer(doc)
    if name not in checks()["dynamic_loss_scale_optimizers"]["names"]:
        return
    fp16, _ = _enabled(doc, "fp16", ctx)
    scale, node = _literal(doc, "fp16.loss_scale")
    if fp16 is not True or _number(scale) is None or scale == 0:
        return
    yield Finding(node.span, f"loss_scale {scale} is a static loss scale, but {type_node.value} requires dynamic "
                             "loss scaling: DeepSpeed asserts at initialize()",
                  related=(Related(ctx.source.path, type_node.span, "optimizer set here"),),
                  fix=Fix("set loss_scale to 0 (dynamic)", (jfix.set_value(node, 0),), Applicability.UNSAFE))
