"""D036 elastic-checkpoint-with-zero3."""
from __future__ import annotations

from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JValue
from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _lookup_member, _zero_stage


@rule("D036", "elastic-checkpoint-with-zero3", Severity.WARNING, kinds=KINDS, fixable=True)
def elastic_checkpoint_with_zero3(ctx):
    """Elastic checkpointing (`zero_optimization.elastic_checkpoint`) requested under ZeRO-3.

    ## What it does
    Reports the key when it is true and the stage is 3.

    ## Why it matters
    ZeRO-3 does not do elastic checkpointing; since 0.19.3 DeepSpeed says so in a warning ("ZeRO-3 elastic
    checkpointing is deprecated and no longer supported. Use Universal Checkpointing instead."). A resume that
    counted on it to change the number of GPUs will not work.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "elastic_checkpoint": true}}
    ```

    ## Fix
    Deletes the key (unsafe: check how you resume; use Universal Checkpointing to change the world size).

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/8099
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/config.py#L396-L400
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) != 3:
        return
    member = _lookup_member(doc, "zero_optimization.elastic_checkpoint")
    if member is None or not (isinstance(member.value, JValue) and member.value.value is True):
        return
    zero = doc.root.get("zero_optimization")
    yield Finding(member.key_span, "elastic_checkpoint has no effect with ZeRO-3 (deprecated, no longer supported): "
                                   "use Universal Checkpointing to resume on another world size",
                  fix=Fix("delete elastic_checkpoint", jfix.delete_member(ctx.source.text, zero, member),
                          Applicability.UNSAFE))
