"""D031 low-precision-master-weights-prerequisites."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import precision_section
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _literal, _zero_stage


@rule("D031", "low-precision-master-weights-prerequisites", Severity.ERROR, kinds=KINDS)
def low_precision_master_weights_prerequisites(ctx):
    """Low-precision optimizer states without 16-bit master weights, or 16-bit master weights without ZeRO.

    ## What it does
    Reports `bf16.bf16_optimizer_states: true` when `bf16.bf16_master_weights_and_grads` is not true, and any of
    `fp16.fp16_master_weights_and_grads`, `bf16.bf16_master_weights_and_grads`, `bf16.bf16_optimizer_states` set to
    true when the ZeRO stage is 0.

    ## Why it matters
    DeepSpeed asserts while it builds the config: `bf16_optimizer_states requires bf16_master_weights_and_grads to
    be enabled.` and `..._master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3.`

    ## Example
    ```json
    {"bf16": {"enabled": true, "bf16_optimizer_states": true}, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Also set `bf16_master_weights_and_grads: true` (ZeRO-1/2 then need CPU optimizer offload with DeepSpeedCPUAdam),
    or remove the key.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py#L1037-L1049
    """
    doc = _doc(ctx)
    if doc is None:
        return
    bf16 = precision_section(doc)
    stage = _zero_stage(doc)
    states, states_node = _literal(doc, f"{bf16}.bf16_optimizer_states")
    master, _ = _literal(doc, f"{bf16}.bf16_master_weights_and_grads")
    if states is True and master is not True:
        yield Finding(states_node.span, "bf16_optimizer_states needs bf16_master_weights_and_grads true: DeepSpeed "
                                        "asserts while it builds the config")
    if stage != 0:
        return
    for dotted in ("fp16.fp16_master_weights_and_grads", f"{bf16}.bf16_master_weights_and_grads",
                   f"{bf16}.bf16_optimizer_states"):
        value, node = _literal(doc, dotted)
        if value is True:
            yield Finding(node.span, f"{dotted.rpartition('.')[2]} needs ZeRO stage 1, 2 or 3 (stage is 0): "
                                     "DeepSpeed asserts while it builds the config")
