"""V023 verl-megatron-parallel-not-dividing."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ACTOR, ROLLOUT, _cfg, _finding, _gpus, _startup_finding


def _row(cfg):
    """The megatron_batch row for the release the launch targets: the newest row at or before it ("main" when the
    release is unknown; None before verl 0.4). The megatron key table has one release, so cfg.release cannot say."""
    from packaging.version import InvalidVersion, Version

    from rlhf_lint.schemas import load

    releases = load("verl/startup_asserts.json")["megatron_batch"]["releases"]
    if cfg.target is None:
        return releases["main"]
    try:
        wanted = Version(cfg.target.version)
    except InvalidVersion:
        return releases["main"]
    older = [r for r in releases if r != "main" and Version(r) <= wanted]
    return releases[max(older, key=Version)] if older else None


@rule("V023", "verl-megatron-parallel-not-dividing", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_megatron_parallel_not_dividing(ctx):
    """Megatron actor: tensor x pipeline x context parallel does not divide the GPUs, or the train batch does not
    divide by the data-parallel size x micro batch.

    ## What it does
    For `actor_rollout_ref.actor.strategy=megatron` with dynamic batch size off, repeats verl's `validate_config`
    with the release's defaults for what the launch leaves unset (tensor, pipeline and context parallel 1): the GPUs
    (`trainer.nnodes x n_gpus_per_node`) must divide by `tp x pp x cp`, and the real train batch
    (`data.train_batch_size x rollout.n`) by `GPUs / (tp x pp x cp) x ppo_micro_batch_size_per_gpu`. The first is
    also megatron-core's own assert in every release; the second is verl's from 0.4.

    ## Why it matters
    Both assert at start-up ("n_gpus (6) must be divisible by model_parallel_size (4) ...", "real_train_batch_size
    ... must be divisible by minimal possible batch size"), after the Ray cluster is up.

    ## Example
    `actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 trainer.n_gpus_per_node=6`.

    ## Fix
    Choose parallel sizes whose product divides the GPU count, and a train batch that divides by the data-parallel
    size times the micro batch.

    ## References
    https://github.com/volcengine/verl/blob/v0.4.1/verl/trainer/ppo/ray_trainer.py#L369-L377
    https://github.com/volcengine/verl/blob/v0.7.0/verl/utils/config.py#L96-L110
    """
    cfg = _cfg(ctx)
    if cfg is None or cfg.get(f"{ACTOR}.strategy") != "megatron" or cfg.get(f"{ACTOR}.use_dynamic_bsz") is not False:
        return
    row = _row(cfg)
    nodes, per_node = cfg.known_int("trainer.nnodes"), cfg.known_int("trainer.n_gpus_per_node")
    keys = [f"{ACTOR}.megatron.{k}_parallel_size" for k in ("tensor_model", "pipeline_model", "context")]
    sizes = [cfg.known_int(k) for k in keys]
    if None in (nodes, per_node) or None in sizes or any(v <= 0 for v in sizes) or nodes * per_node <= 0:
        return
    gpus = nodes * per_node
    model_parallel = sizes[0] * sizes[1] * sizes[2]
    source = row["source"] if row is not None else "megatron-core parallel_state.initialize_model_parallel"
    if gpus % model_parallel:
        parts = " x ".join(f"{k.rsplit('.', 1)[1].replace('_parallel_size', '')} {v}"
                           + ("" if cfg.where(k) is not None else " (default)") for k, v in zip(keys, sizes))
        key = next((k for k in keys if cfg.where(k) is not None), keys[0])
        yield _finding(ctx, cfg, key, f"megatron {parts} = {model_parallel} does not divide the "
                                      f"{_gpus(cfg, nodes, per_node)}: verl asserts it at start-up ({source})")
        return
    if row is None:
        return  # before 0.4 verl does not check the batch for megatron
    batch, n = cfg.known_int("data.train_batch_size"), cfg.known_int(f"{ROLLOUT}.n")
    micro = cfg.known_int(f"{ACTOR}.ppo_micro_batch_size_per_gpu")
    if None in (batch, n, micro) or micro <= 0:
        return
    minimal = gpus // model_parallel * micro
    if (batch * n) % minimal:
        yield _startup_finding(
            ctx, cfg, "data.train_batch_size",
            f"real train batch {batch} x rollout.n {n} = {batch * n} is not divisible by the megatron "
            f"data-parallel size {gpus // model_parallel} x ppo_micro_batch_size_per_gpu {micro} = "
            f"{minimal}: verl asserts it at start-up ({source})")
