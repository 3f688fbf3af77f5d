"""D033 amp-with-zero: apex AMP (`amp.enabled`) together with ZeRO."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _amp, _doc, _zero_stage


@rule("D033", "amp-with-zero", Severity.ERROR, kinds=KINDS)
def amp_with_zero(ctx):
    """Apex AMP (`amp.enabled`) together with ZeRO.

    ## What it does
    Reports `amp.enabled: true` when the ZeRO stage is 1, 2 or 3.

    ## Why it matters
    The engine asserts `Amp and ZeRO are not currently compatible, please use (legacy) fp16 mode which performs
    similar to amp opt_mode=O2` at initialize().

    ## Example
    ```json
    {"amp": {"enabled": true, "opt_level": "O1"}, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Replace the amp block with `"fp16": {"enabled": true}` (or bf16).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1983-L1985
    """
    doc = _doc(ctx)
    node = None if doc is None else _amp(doc)
    stage = None if node is None else _zero_stage(doc)
    if stage in (1, 2, 3):
        yield Finding(node.span, f"amp is enabled with ZeRO stage {stage}: DeepSpeed asserts 'Amp and ZeRO are not "
                                 "currently compatible'")
