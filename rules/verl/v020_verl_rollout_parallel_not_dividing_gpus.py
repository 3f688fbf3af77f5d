"""V020 verl-rollout-parallel-not-dividing-gpus."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ROLLOUT, _asserts_of, _cfg, _finding, _gpus


@rule("V020", "verl-rollout-parallel-not-dividing-gpus", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_rollout_parallel_not_dividing_gpus(ctx):
    """The GPUs of the job do not divide by the rollout's tensor parallel size (x data and pipeline parallel).

    ## What it does
    Repeats the rollout device mesh of verl's workers: `trainer.nnodes x trainer.n_gpus_per_node` must be a multiple
    of `rollout.tensor_model_parallel_size` (from 0.6: times `rollout.data_parallel_size x
    pipeline_model_parallel_size`), with the release's defaults for what the launch leaves unset:
    `tensor_model_parallel_size` defaults to 2 in every release, so a one-GPU launch that does not set it fails.
    The factors per release and the line of each assert are data (schemas/verl/startup_asserts.json).

    ## Why it matters
    The worker asserts "rollout world_size: 1 is not divisible by infer_tp: 2" while building the rollout, after
    Ray has started and the actor's weights are loaded.

    ## Example
    `trainer.n_gpus_per_node=1` without `actor_rollout_ref.rollout.tensor_model_parallel_size=1`.

    ## Fix
    Set `actor_rollout_ref.rollout.tensor_model_parallel_size` to a divisor of the GPU count.

    ## References
    https://github.com/volcengine/verl/blob/v0.4.1/verl/workers/fsdp_workers.py#L406
    https://github.com/volcengine/verl/blob/v0.7.0/verl/workers/fsdp_workers.py#L618
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    row = _asserts_of(cfg, "rollout_mesh")
    got = [cfg.known_int("trainer.nnodes"), cfg.known_int("trainer.n_gpus_per_node")]
    if row is None or None in got:
        return
    nodes, per_node = got
    tp_key = f"{ROLLOUT}.tensor_model_parallel_size"
    factors = row["factors"] if cfg.exact else [tp_key]
    if not cfg.exact:
        # release unknown: data/pipeline parallel count from 0.6 only, so a launch that sets them is not judged
        for key in (f"{ROLLOUT}.data_parallel_size", f"{ROLLOUT}.pipeline_model_parallel_size"):
            if cfg.where(key) is not None and cfg.get(key) != 1:
                return
    values = [cfg.known_int(k) for k in factors]
    if None in values or any(v <= 0 for v in values):
        return
    size = 1
    for v in values:
        size *= v
    gpus = nodes * per_node
    if gpus > 0 and gpus % size:
        parts = " x ".join(f"{k.rsplit('.', 1)[1]} {v}" + ("" if cfg.where(k) is not None else
                                                          f" (verl {cfg.release} default)")
                           for k, v in zip(factors, values))
        key = next((k for k in factors if cfg.where(k) is not None), tp_key)
        yield _finding(ctx, cfg, key, f"rollout {parts} = {size} does not divide the {_gpus(cfg, nodes, per_node)}: "
                                      f"verl asserts it when building the rollout ({row['source']})")
