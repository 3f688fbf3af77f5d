"""V022 verl-critic-mini-batch-not-divisible."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import _cfg, _finding, _gpus


def _releases(cfg):
    from rlhf_lint.schemas import load

    return load("verl/startup_asserts.json")["critic_mini_batch"]["releases"]


@rule("V022", "verl-critic-mini-batch-not-divisible", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_critic_mini_batch_not_divisible(ctx):
    """The critic's mini batch, normalised per GPU, is zero or not a multiple of its micro batch per GPU.

    ## What it does
    For a job with a critic (GAE), repeats the critic worker's normalisation with the release's defaults
    (`critic.ppo_mini_batch_size` defaults to the actor's, `critic.rollout_n` to `rollout.n`):
    `ppo_mini_batch_size (x rollout_n from verl 0.4) // (GPUs / critic.ulysses_sequence_parallel_size)` must be
    positive and divisible by `critic.ppo_micro_batch_size_per_gpu`. Without a known release, it reports only
    what fails under both normalisations.

    ## Why it matters
    The critic worker asserts "normalized ppo_mini_batch_size ... should be divisible by ppo_micro_batch_size_per_gpu"
    when it is built, after the actor and the rollout are up.

    ## Example
    `critic.ppo_micro_batch_size_per_gpu=32` with a normalised critic mini batch of 16.

    ## Fix
    Lower `critic.ppo_micro_batch_size_per_gpu` or raise `critic.ppo_mini_batch_size`.

    ## References
    https://github.com/volcengine/verl/blob/v0.4.1/verl/workers/fsdp_workers.py (CriticWorker.__init__)
    https://github.com/volcengine/verl/blob/v0.2.0.post2/verl/workers/fsdp_workers.py (CriticWorker.__init__)
    """
    cfg = _cfg(ctx)
    if cfg is None or "critic" not in ctx.job.roles or cfg.get("critic.strategy") not in ("fsdp", "fsdp2") \
            or cfg.get("critic.use_dynamic_bsz") is not False:
        return
    releases = _releases(cfg)
    rows = [releases[cfg.release]] if cfg.exact and cfg.release in releases else list(releases.values())
    mini, micro = cfg.known_int("critic.ppo_mini_batch_size"), cfg.known_int("critic.ppo_micro_batch_size_per_gpu")
    nodes, per_node = cfg.known_int("trainer.nnodes"), cfg.known_int("trainer.n_gpus_per_node")
    n = cfg.known_int("critic.rollout_n") if cfg.exists("critic.rollout_n") else cfg.known_int(
        "actor_rollout_ref.rollout.n")
    sp = cfg.known_int("critic.ulysses_sequence_parallel_size") or 1
    if None in (mini, micro, nodes, per_node, n) or micro <= 0 or sp <= 0:
        return
    dp = nodes * per_node // sp
    if dp <= 0:
        return
    failures = []
    for row in rows:
        times = n if row["times_rollout_n"] else 1
        normalised = mini * times // dp
        if normalised <= 0 or normalised % micro:
            failures.append((row, times, normalised))
    if not failures or len(failures) < len(rows):
        return
    row, times, normalised = failures[0]
    formula = f"{mini} x {times}" if row["times_rollout_n"] else f"{mini}"
    why = "is 0" if normalised <= 0 else f"is not divisible by ppo_micro_batch_size_per_gpu = {micro}"
    yield _finding(ctx, cfg, "critic.ppo_micro_batch_size_per_gpu",
                   f"the critic's normalised ppo_mini_batch_size {formula} // {dp} = {normalised} per GPU {why} on "
                   f"{_gpus(cfg, nodes, per_node)}: verl asserts it when building the critic "
                   + (f"in {row['where']} " if row.get("where") else "") + f"({row['source']})")
