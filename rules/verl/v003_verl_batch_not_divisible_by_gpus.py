"""V003 verl-batch-not-divisible-by-gpus."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ACTOR, ROLLOUT, _cfg, _fsdp, _startup_finding, _gpus, _ints


@rule("V003", "verl-batch-not-divisible-by-gpus", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_batch_not_divisible_by_gpus(ctx):
    """The real train batch `data.train_batch_size x rollout.n` is not a multiple of the number of GPUs.

    ## What it does
    Computes the real train batch (prompts x samples per prompt) and the GPU count
    (`trainer.nnodes x trainer.n_gpus_per_node`) and reports a remainder, for FSDP without dynamic batch size.

    ## Why it matters
    verl's `validate_config` asserts "real_train_batch_size must be divisible by minimal possible batch size";
    older releases failed later with "only support equal chunk".

    ## Example
    `data.train_batch_size=100 actor_rollout_ref.rollout.n=1 trainer.n_gpus_per_node=8`

    ## Fix
    Choose a train batch size whose product with `rollout.n` divides by the GPU count.

    ## References
    https://github.com/verl-project/verl/issues/473
    https://github.com/verl-project/verl/issues/3095
    """
    cfg = _cfg(ctx)
    if cfg is None or not _fsdp(cfg) or cfg.get(f"{ACTOR}.use_dynamic_bsz") is not False:
        return
    got = _ints(cfg, "data.train_batch_size", f"{ROLLOUT}.n", "trainer.nnodes", "trainer.n_gpus_per_node")
    if got is None:
        return
    batch, n, nodes, per_node = got
    gpus = nodes * per_node
    if gpus > 0 and (batch * n) % gpus:
        yield _startup_finding(
            ctx, cfg, "data.train_batch_size",
            f"data.train_batch_size x rollout.n = {batch} x {n} = {batch * n} is not divisible by "
            f"{_gpus(cfg, nodes, per_node)}")
