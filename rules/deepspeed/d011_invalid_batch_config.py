"""D011 invalid-batch-config."""
from __future__ import annotations

from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _batch, _consumers, _doc, _elastic, hf_frameworks


@rule("D011", "invalid-batch-config", Severity.ERROR, kinds=KINDS)
def invalid_batch_config(ctx):
    """Batch keys DeepSpeed rejects whatever the world size: zero or negative, or not divisible.

    ## What it does
    Without knowing the world size: a batch key that is not positive; `train_batch_size` that is not a multiple of
    `train_micro_batch_size_per_gpu` x `gradient_accumulation_steps` (no world size can satisfy it); and, for a
    plain `deepspeed`/`torchrun` launch, neither `train_batch_size` nor `train_micro_batch_size_per_gpu` given.

    ## Why it matters
    DeepSpeed's `_batch_assertion` fails at start-up (`has to be greater than 0`, `train_batch_size is not equal to
    ...`, `Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided`).

    ## Example
    ```json
    {"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4}
    ```

    ## Fix
    Make train_batch_size a multiple of the micro batch size times the accumulation steps.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py
    https://github.com/deepspeedai/DeepSpeed/issues/17
    """
    doc = _doc(ctx)
    if doc is None or _elastic(doc):
        return
    b = _batch(doc)
    names = {"tbs": "train_batch_size", "mbs": "train_micro_batch_size_per_gpu", "gas": "gradient_accumulation_steps"}
    for short, (value, node) in b.items():
        if isinstance(value, int) and value <= 0:
            yield Finding(node.span, f"{names[short]} is {value}: DeepSpeed requires it to be greater than 0")
    if any(isinstance(v, int) and v <= 0 for v, _ in b.values()):
        return
    tbs, mbs, gas = b["tbs"][0], b["mbs"][0], b["gas"][0]
    if isinstance(tbs, int):
        step = (mbs if isinstance(mbs, int) else 1) * (gas if isinstance(gas, int) else 1)
        if (isinstance(mbs, int) or isinstance(gas, int)) and tbs % step:
            parts = " x ".join(f"{names[s]} {b[s][0]}" for s in ("mbs", "gas") if isinstance(b[s][0], int))
            yield Finding(b["tbs"][1].span, f"train_batch_size {tbs} is not a multiple of {parts} = {step}: no world "
                                            f"size satisfies train_batch_size = micro x accumulation x world size")
    if tbs is None and mbs is None:
        frameworks, refs = _consumers(ctx)
        plain = [job for job, _ in refs if job.framework in ("deepspeed", "torchrun")]
        if plain and not frameworks & hf_frameworks():
            related = tuple(Related(s.path or job.path, s.span, "launched here by plain DeepSpeed") for job, s in refs
                            if job in plain)
            yield Finding(None, "neither train_batch_size nor train_micro_batch_size_per_gpu is set: DeepSpeed "
                                "asserts one of them is provided", related=related)
