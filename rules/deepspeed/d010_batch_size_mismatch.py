"""D010 batch-size-mismatch."""
from __future__ import annotations

from rlhf_lint.readers.json import JValue
from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _batch, _consumers, _doc, _elastic


def _world_sizes(ctx):
    """[(world size, Related or None)] from the launches naming this file, else from the configuration."""
    out = []
    _, refs = _consumers(ctx)
    for job, _setting in refs:
        ws = job.value("topology.world_size")
        if isinstance(ws, int) and not isinstance(ws, bool) and ws > 0:
            s = job.settings.get("topology.world_size")
            if s is not None and s.path not in (None, job.path) and s.span is not None:
                # the launch left it to a config file it names (accelerate's num_processes)
                out.append((ws, Related(s.path, s.span, f"world size {ws} of {job.name} comes from this file")))
                continue
            span = s.span if s is not None and s.path == job.path else None
            how = f" ({s.origin})" if s is not None and s.filled else ""
            out.append((ws, Related(job.path, span, f"world size {ws} comes from this launch{how}")))
    if not out and ctx.config.world_size:
        out.append((ctx.config.world_size, None))
    seen, unique = set(), []
    for ws, rel in out:
        if ws not in seen:
            seen.add(ws)
            unique.append((ws, rel))
    return unique


@rule("D010", "batch-size-mismatch", Severity.ERROR, kinds=KINDS)
def batch_size_mismatch(ctx):
    """The global batch size does not equal micro batch x accumulation steps x world size of the launch using it.

    ## What it does
    Redoes DeepSpeed's batch resolution (`_set_batch_related_parameters`, with its floor divisions) for each world
    size known: from the launch scripts that name this file (`deepspeed --num_gpus`, `torchrun --nproc_per_node`,
    ...) or from `world-size` in the configuration, divided by `sequence_parallel_size` when the config sets it
    (DeepSpeed then counts data-parallel ranks). The message shows the arithmetic; the related location is the
    launch that sets the world size.

    ## Why it matters
    DeepSpeed asserts `train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size` while
    building its config, after the model is loaded.

    ## Example
    ```json
    {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}
    ```
    launched with `deepspeed --num_gpus 4 train.py` (4 x 1 x 4 = 16, not 32).

    ## Fix
    Set train_batch_size to the product, drop one of the three keys and let DeepSpeed derive it, or use "auto" under
    HF Trainer / accelerate.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py
    https://github.com/CarperAI/trlx/issues/376
    https://github.com/Roblox/FAI-RL/pull/72
    """
    doc = _doc(ctx)
    if doc is None or _elastic(doc):
        return
    b = _batch(doc)
    if any(v == "skip" for v, _ in b.values()):
        return
    tbs, mbs, gas = b["tbs"][0], b["mbs"][0], b["gas"][0]
    if any(v is not None and v <= 0 for v in (tbs, mbs, gas)) or tbs is None:
        return  # nothing to compare, or D011's business
    anchor = b["tbs"][1]
    sp_node = doc.lookup("sequence_parallel_size")
    sp = sp_node.value if isinstance(sp_node, JValue) and isinstance(sp_node.value, int) \
        and not isinstance(sp_node.value, bool) and sp_node.value > 1 else 1
    for ws, rel in _world_sizes(ctx):
        where = " (world size from the configuration)" if rel is None else ""
        if sp > 1:  # Ulysses: DeepSpeed counts data-parallel ranks, world size / sequence_parallel_size
            where += f" (data-parallel ranks: {ws} processes / sequence_parallel_size {sp})"
            ws = max(1, ws // sp)
        if mbs is not None and gas is not None:
            if tbs != mbs * gas * ws:
                yield Finding(anchor.span, f"train_batch_size {tbs} != train_micro_batch_size_per_gpu {mbs} x "
                                           f"gradient_accumulation_steps {gas} x world size {ws} = {mbs * gas * ws}"
                                           f"{where}", related=(rel,) if rel else ())
            continue
        if mbs is not None:
            gas_d = tbs // mbs // ws
            derived = f"DeepSpeed derives gradient_accumulation_steps = {tbs} // {mbs} // {ws} = {gas_d}"
            bad = mbs * gas_d * ws != tbs
            check = f"{mbs} x {gas_d} x {ws} = {mbs * gas_d * ws} != {tbs}"
        elif gas is not None:
            mbs_d = tbs // ws // gas
            derived = f"DeepSpeed derives train_micro_batch_size_per_gpu = {tbs} // {ws} // {gas} = {mbs_d}"
            bad = mbs_d * gas * ws != tbs
            check = f"{mbs_d} x {gas} x {ws} = {mbs_d * gas * ws} != {tbs}"
        else:
            mbs_d = tbs // ws
            derived = f"DeepSpeed derives train_micro_batch_size_per_gpu = {tbs} // {ws} = {mbs_d}"
            bad = mbs_d * ws != tbs
            check = f"{mbs_d} x 1 x {ws} = {mbs_d * ws} != {tbs}"
        if bad:
            yield Finding(anchor.span, f"train_batch_size {tbs} does not divide over world size {ws}{where}: "
                                       f"{derived}, then {check}", related=(rel,) if rel else ())
