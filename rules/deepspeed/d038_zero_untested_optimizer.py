"""D038 zero-untested-optimizer."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _is_true, _optimizer, _zero_stage, checks


@rule("D038", "zero-untested-optimizer", Severity.ERROR, kinds=KINDS)
def zero_untested_optimizer(ctx):
    """ZeRO with an optimizer it has not been tested with, without `zero_allow_untested_optimizer`.

    ## What it does
    Reports `optimizer.type` when ZeRO is on (stage 1-3) and the optimizer DeepSpeed builds for it is not in ZeRO's
    supported list (torch Adam/AdamW/Adagrad, DeepSpeed's Adam, AdamW, Adagrad, Lion and Muon), unless
    `zero_allow_untested_optimizer` is true. The 1-bit optimizers are D026's.

    ## Why it matters
    The engine asserts `You are using an untested ZeRO Optimizer. Please add <"zero_allow_untested_optimizer": true>`
    at initialize(). `"type": "Lamb"` (FusedLamb) and torch names such as `SGD` hit it.

    ## Example
    ```json
    {"optimizer": {"type": "SGD", "params": {"lr": 0.1}}, "zero_optimization": {"stage": 1}}
    ```

    ## Fix
    Add `"zero_allow_untested_optimizer": true` if you accept the risk, or use AdamW.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/utils.py#L45-L69
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1985-L1991
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) not in (1, 2, 3) or _is_true(doc, "zero_allow_untested_optimizer"):
        return
    name, node = _optimizer(doc)
    facts = checks()
    if name is None or name in facts["one_bit_optimizers"]["names"]:
        return
    supported = facts["zero_supported_optimizers"]
    from rlhf_lint.frameworks.deepspeed import ds_keys

    if name in ds_keys()["optimizers"]["names"]:
        if name in supported["deepspeed_names"]:
            return
    elif name in supported["torch_names"] or not name.isidentifier():
        return
    yield Finding(node.span, f"optimizer {node.value!r} is not one ZeRO supports: DeepSpeed asserts 'You are using "
                             "an untested ZeRO Optimizer' unless zero_allow_untested_optimizer is true")
