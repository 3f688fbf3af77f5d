"""D022 offload-with-unsupported-optimizer: zeRO-Offload with an optimizer DeepSpeed cannot run on the CPU."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import ds_keys
from rlhf_lint.readers.json import JValue
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _device, _doc, _zero_stage


@rule("D022", "offload-with-unsupported-optimizer", Severity.ERROR, kinds=KINDS)
def offload_with_unsupported_optimizer(ctx):
    """ZeRO-Offload with an optimizer DeepSpeed cannot run on the CPU.

    ## What it does
    Reports `offload_optimizer.device` cpu/nvme (or `cpu_offload: true`) when `optimizer.type` names a torch
    optimizer or a DeepSpeed optimizer without a CPU implementation (lamb, the 1-bit ones), unless
    `zero_force_ds_cpu_optimizer` is false.

    ## Why it matters
    `ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer ... set
    <"zero_force_ds_cpu_optimizer": false>` at initialize().

    ## Example
    ```json
    {"optimizer": {"type": "SGD"}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Fix
    Use `"type": "AdamW"` (DeepSpeedCPUAdam), or set `zero_force_ds_cpu_optimizer` to false and accept the slow step.

    ## References
    https://github.com/deepspeedai/DeepSpeed/issues/7524
    https://github.com/OpenMOSS/MOSS/issues/272
    https://github.com/bitsandbytes-foundation/bitsandbytes/issues/596
    """
    doc = _doc(ctx)
    if doc is None:
        return
    device, _ = _device(doc, "optimizer")
    legacy = doc.lookup("zero_optimization.cpu_offload")
    offloaded = device in ("cpu", "nvme") or (isinstance(legacy, JValue) and legacy.value is True)
    type_node = doc.lookup("optimizer.type")
    force = doc.root.get("zero_force_ds_cpu_optimizer")
    if not offloaded or not isinstance(type_node, JValue) or not isinstance(type_node.value, str):
        return
    if isinstance(force, JValue) and force.value is False:
        return
    stage = _zero_stage(doc)
    if stage is not None and stage == 0:
        return
    opts = ds_keys()["optimizers"]
    name = type_node.value.lower()
    if name in opts["offload_capable"] or (name in opts["names"] and name.startswith("mu")):
        return
    yield Finding(type_node.span, f"optimizer {type_node.value!r} with ZeRO-Offload: DeepSpeed raises "
                                  "ZeRORuntimeException (only its CPU Adam/AdamW/Adagrad/Lion run offloaded) unless "
                                  "zero_force_ds_cpu_optimizer is false")
