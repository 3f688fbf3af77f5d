"""A016 swift-megatron-layout-refused."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import here, world_size

SIZES = (("megatron.tensor_parallel", "tensor_model_parallel_size"),
         ("megatron.pipeline_parallel", "pipeline_model_parallel_size"),
         ("megatron.context_parallel", "context_parallel_size"))
EXPERT_SIZES = (("megatron.expert_tensor_parallel", "expert_tensor_parallel_size"),
                ("megatron.expert_parallel", "expert_model_parallel_size"),
                ("megatron.pipeline_parallel", "pipeline_model_parallel_size"))


def _size(job, key: str) -> int | None:
    value = job.value(key, 1)
    return value if type(value) is int and value > 0 else None


def _written(job, keys) -> object:
    """The first of ``keys`` the launch writes (a place for the finding), else None."""
    for key, _ in keys:
        s = job.settings.get(key)
        if s is not None and s.span is not None and "default" not in (s.origin or ""):
            return s
    return None


@rule("A016", "swift-megatron-layout-refused", Severity.ERROR, kinds=(), scope="job", frameworks=("swift",))
def swift_megatron_layout_refused(ctx):
    """An ms-swift `megatron sft|pt|rlhf` layout Megatron-Core refuses at start-up: the GPUs do not divide by the
    parallel sizes, or the global batch does not divide by micro batch x data-parallel size.

    ## What it does
    With the launch's world size (`NPROC_PER_NODE` x `NNODES`; one process without either, as `megatron sft` then
    runs plain python) and the ms-swift release's defaults for what the launch leaves unset, checks what
    Megatron-Core's `initialize_model_parallel` and ms-swift's `_init_distributed` assert: world size divisible by
    `tensor_model_parallel_size x pipeline_model_parallel_size x context_parallel_size`, and by
    `expert_tensor_parallel_size x expert_model_parallel_size x pipeline_model_parallel_size`; `global_batch_size`
    divisible by `micro_batch_size` x the data-parallel size (world / (TP x PP x CP)), which must leave at least
    one micro batch. A world size only the hardware profile gives makes it a warning.

    ## Why it matters
    `RuntimeError: world_size (8) is not divisible by ...` or `ValueError: global batch size (16) is not divisible
    by micro batch size (1) times data parallel size (32)` once every node has started, before the model loads.

    ## Example
    `NPROC_PER_NODE=8 megatron sft --tensor_model_parallel_size 3 ...`, or `NNODES=4 NPROC_PER_NODE=8 megatron sft
    --micro_batch_size 1` with the default `--global_batch_size 16` (32 data-parallel ranks).

    ## Fix
    Parallel sizes whose products divide the GPUs; a global batch that is a multiple of micro batch x data-parallel
    size.

    ## References
    https://github.com/NVIDIA/Megatron-LM/blob/core_r0.13.0/megatron/core/parallel_state.py
    https://github.com/modelscope/ms-swift/blob/v4.5.2/swift/megatron/arguments/megatron_args.py#L943-L958
    """
    from rlhf_lint.schemas import load

    job = ctx.job
    if job.value("train.strategy") != "megatron" or job.value("megatron.tensor_parallel") is None:
        return
    world, world_setting, assumed = world_size(ctx)
    if world is None:
        return
    checks = load("swift/arguments.json")["megatron_commands"]["layout_checks"]
    severity = Severity.WARNING if assumed else None
    where = "the hardware profile's" if assumed else "the launch's: NPROC_PER_NODE x NNODES"
    for keys, source in ((SIZES, checks["model_parallel_source"]), (EXPERT_SIZES, checks["expert_source"])):
        sizes = [_size(job, key) for key, _ in keys]
        if keys is EXPERT_SIZES and job.value("megatron.expert_tensor_parallel") is None:
            sizes[0] = _size(job, "megatron.tensor_parallel")  # unset: Megatron-Core takes the TP size
        if None in sizes:
            continue
        product = sizes[0] * sizes[1] * sizes[2]
        if world % product:
            parts = " x ".join(f"{name} {size}" for (_, name), size in zip(keys, sizes))
            span, path = here(ctx, _written(job, keys) or world_setting)
            yield Finding(span, f"world size {world} ({where}) is not divisible by {parts} = {product}: "
                                f"Megatron-Core refuses the layout at start-up ({source.split(' ')[0]})", path=path,
                          severity=severity)
            return
    model_parallel = 1
    for key, _ in SIZES:
        model_parallel *= _size(job, key) or 1
    micro, batch = job.value("batch.micro_train"), job.value("batch.train")
    if type(micro) is not int or type(batch) is not int or micro <= 0 or batch <= 0:
        return
    per_step = micro * (world // model_parallel)
    if batch % per_step:
        s = job.settings.get("batch.train")
        given = s is not None and s.span is not None and "default" not in (s.origin or "")
        span, path = here(ctx, s if given else job.settings.get("batch.micro_train"))
        yield Finding(span, f"global_batch_size {batch}{'' if given else ' (the default)'} is not divisible by "
                            f"micro_batch_size {micro} x {world // model_parallel} data-parallel ranks = {per_step}: "
                            f"ms-swift refuses it at start-up ({checks['batch_source'].split(' ')[0]})", path=path,
                      severity=severity)
