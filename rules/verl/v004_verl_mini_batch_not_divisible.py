"""V004 verl-mini-batch-not-divisible."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ACTOR, ROLLOUT, _cfg, _finding, _fsdp, _gpus, _ints


@rule("V004", "verl-mini-batch-not-divisible", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_mini_batch_not_divisible(ctx):
    """The actor's mini batch, normalised per GPU, is zero or not a multiple of its micro batch per GPU.

    ## What it does
    Repeats the FSDP worker's normalisation: `ppo_mini_batch_size x rollout.n / (GPUs / ulysses_sp)`, then checks it
    is positive and divisible by `ppo_micro_batch_size_per_gpu`. Also reports `data.train_batch_size` smaller than
    `ppo_mini_batch_size`.

    ## Why it matters
    The worker asserts these when it builds the model, after the Ray cluster and the weights are loaded; a
    normalised mini batch of 0 once sent verl's `split` into an endless loop.

    ## Example
    `actor_rollout_ref.actor.ppo_mini_batch_size=4 actor_rollout_ref.rollout.n=1 trainer.n_gpus_per_node=8`

    ## Fix
    Raise the mini batch or lower the micro batch so the normalised mini batch is a positive multiple.

    ## References
    https://github.com/verl-project/verl/pull/552
    https://github.com/verl-project/verl/pull/559
    https://github.com/verl-project/verl/issues/1524
    """
    cfg = _cfg(ctx)
    if cfg is None or not _fsdp(cfg) or cfg.get(f"{ACTOR}.use_dynamic_bsz") is not False:
        return
    got = _ints(cfg, f"{ACTOR}.ppo_mini_batch_size", f"{ROLLOUT}.n", "trainer.nnodes", "trainer.n_gpus_per_node")
    if got is None:
        return
    mini, n, nodes, per_node = got
    train = cfg.known_int("data.train_batch_size")
    if train is not None and train < mini:
        yield _finding(ctx, cfg, f"{ACTOR}.ppo_mini_batch_size",
                       f"ppo_mini_batch_size = {mini} is larger than data.train_batch_size = {train}")
    sp = cfg.known_int(f"{ACTOR}.ulysses_sequence_parallel_size") or 1
    dp = (nodes * per_node) // sp
    if dp <= 0:
        return
    normalised = mini * n // dp
    if normalised <= 0:
        yield _finding(ctx, cfg, f"{ACTOR}.ppo_mini_batch_size",
                       f"ppo_mini_batch_size x rollout.n / data-parallel GPUs = {mini} x {n} / {dp} = 0 per GPU: "
                       "verl asserts it is larger than 0")
        return
    micro = cfg.known_int(f"{ACTOR}.ppo_micro_batch_size_per_gpu")
    if micro and normalised % micro:
        yield _finding(ctx, cfg, f"{ACTOR}.ppo_micro_batch_size_per_gpu",
                       f"normalised ppo_mini_batch_size {mini} x {n} / {dp} = {normalised} per GPU is not divisible "
                       f"by ppo_micro_batch_size_per_gpu = {micro} on {_gpus(cfg, nodes, per_node)}")
