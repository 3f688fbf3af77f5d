"""D024 allgather-bucket-size-odd: zeRO-1/2 with an odd `allgather_bucket_size`."""
from __future__ import annotations

from rlhf_lint.fixers import json as jfix
from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _literal, _number, _zero_stage


@rule("D024", "allgather-bucket-size-odd", Severity.ERROR, kinds=KINDS, fixable=True)
def allgather_bucket_size_odd(ctx):
    """ZeRO-1/2 with an odd `allgather_bucket_size`.

    ## What it does
    Reports a literal `zero_optimization.allgather_bucket_size` that is not a multiple of 2 when the stage is 1 or 2
    (ZeRO-3 does not use the key).

    ## Why it matters
    The ZeRO-1/2 optimizer aligns NCCL all-gather buffers to 4 bytes and asserts `allgather_bucket_size must be a
    multiple of nccl_start_alignment_factor, 2` when it is built, after the model is loaded.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "allgather_bucket_size": 200000001}}
    ```

    ## Fix
    Rounds the size up to the next even number (unsafe: the bucket grows by one element).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/stage_1_and_2.py#L346-L351
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) not in (1, 2):
        return
    value, node = _literal(doc, "zero_optimization.allgather_bucket_size")
    value = _number(value)
    if value is None or not float(value).is_integer() or int(value) % 2 == 0:
        return
    even = int(value) + 1
    yield Finding(node.span, f"allgather_bucket_size {int(value)} is odd: ZeRO-{_zero_stage(doc)} asserts it is a "
                             "multiple of 2 (nccl_start_alignment_factor)",
                  fix=Fix(f"round up to {even}", (jfix.set_value(node, even),), Applicability.UNSAFE))
