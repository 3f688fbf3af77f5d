"""D015 offload-param-without-zero3."""
from __future__ import annotations

from rlhf_lint.fixers import json as jfix
from rlhf_lint.model import Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _device, _doc, _zero_stage


@rule("D015", "offload-param-without-zero3", Severity.WARNING, kinds=KINDS, fixable=True)
def offload_param_without_zero3(ctx):
    """The offload_param block is set under ZeRO stage 0, 1 or 2, where DeepSpeed ignores it.

    ## What it does
    Reports `zero_optimization.offload_param` with a device of cpu or nvme when the stage is a literal below 3.

    ## Why it matters
    Only ZeRO-3 partitions (and so can offload) parameters. DeepSpeed accepts the block without a word, so the
    memory plan that counted on it is wrong.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}
    ```

    ## Fix
    Deletes the block (safe: it had no effect). Use stage 3 if parameters must leave the GPU.

    ## References
    https://github.com/wenet-e2e/wenet/pull/2499
    https://github.com/deepspeedai/DeepSpeed/issues/2977
    """
    doc = _doc(ctx)
    if doc is None:
        return
    stage = _zero_stage(doc)
    device, node = _device(doc, "param")
    if stage is None or stage >= 3 or device not in ("cpu", "nvme"):
        return
    zero = doc.root.get("zero_optimization")
    member = zero.member("offload_param")
    yield Finding(member.key_span, f"offload_param (device {device}) has no effect at ZeRO stage {stage}: only "
                                   "stage 3 offloads parameters",
                  fix=Fix("delete offload_param", jfix.delete_member(ctx.source.text, zero, member)))
