"""D030 scheduler-missing-total-num-steps."""
from __future__ import annotations

from rlhf_lint.readers.json import JObject
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _literal, checks


@rule("D030", "scheduler-missing-total-num-steps", Severity.ERROR, kinds=KINDS)
def scheduler_missing_total_num_steps(ctx):
    """A decaying warmup scheduler (`WarmupDecayLR`, `WarmupCosineLR`) without `total_num_steps`.

    ## What it does
    Reports the scheduler type when `scheduler.params.total_num_steps` is absent. ("auto" counts as present: HF
    Trainer and accelerate fill it.)

    ## Why it matters
    Both schedulers take `total_num_steps` as a required argument; DeepSpeed passes `scheduler.params` as keyword
    arguments, so the engine fails with `TypeError: __init__() missing 1 required positional argument:
    'total_num_steps'`. HF and accelerate fill only a value written as "auto", not a missing key.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100}}}
    ```

    ## Fix
    Add `"total_num_steps"`: the number of optimizer steps of the run (or "auto" under HF / accelerate).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/lr_schedules.py#L789-L842
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1598-L1611
    """
    doc = _doc(ctx)
    if doc is None:
        return
    kind, node = _literal(doc, "scheduler.type")
    if kind not in checks()["total_num_steps_schedulers"]["names"]:
        return
    params = doc.lookup("scheduler.params")
    if params is not None and not isinstance(params, JObject):
        return
    if params is None or params.member("total_num_steps") is None:
        yield Finding(node.span, f"{kind} needs scheduler.params.total_num_steps: without it DeepSpeed fails with "
                                 "TypeError (missing required argument 'total_num_steps')")
