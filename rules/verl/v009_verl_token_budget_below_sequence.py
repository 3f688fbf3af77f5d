"""V009 verl-token-budget-below-sequence."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ACTOR, _cfg, _finding, _ints


@rule("V009", "verl-token-budget-below-sequence", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_token_budget_below_sequence(ctx):
    """With dynamic batch size, a per-GPU token budget is smaller than one prompt plus its response.

    ## What it does
    With `use_dynamic_bsz`, compares the actor's `ppo_max_token_len_per_gpu` (and the critic's, when a critic is
    trained) with `max_prompt_length + max_response_length`; verl's guidance is at least twice that. The workers
    pack up to the budget times the role's `ulysses_sequence_parallel_size` tokens, which is what is compared.

    ## Why it matters
    verl packs sequences up to the budget and asserts "max_token_len must be greater than the sequence length"
    when the longest sample does not fit.

    ## Example
    `data.max_response_length=16384 actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=16384`

    ## Fix
    Raise the budget to at least 2 x (prompt + response), or lower the lengths.

    ## References
    https://github.com/verl-project/verl/blob/main/verl/utils/seqlen_balancing.py
    https://github.com/verl-project/verl/blob/main/docs/perf/perf_tuning.rst
    https://github.com/verl-project/verl/blob/v0.7.0/verl/workers/actor/dp_actor.py (max_token_len =
    ppo_max_token_len_per_gpu * ulysses_sequence_parallel_size)
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    lens = _ints(cfg, "data.max_prompt_length", "data.max_response_length")
    if lens is None:
        return
    seq = sum(lens)
    sp = "ulysses_sequence_parallel_size"
    keys = [(f"{ACTOR}.use_dynamic_bsz", f"{ACTOR}.ppo_max_token_len_per_gpu", f"{ACTOR}.{sp}")]
    if cfg.get("algorithm.adv_estimator") == "gae":
        keys.append(("critic.use_dynamic_bsz", "critic.ppo_max_token_len_per_gpu", f"critic.{sp}"))
    for flag, key, sp_key in keys:
        budget = cfg.known_int(key)
        ranks = cfg.known_int(sp_key) if cfg.exists(sp_key) or cfg.where(sp_key) is not None else 1
        if cfg.get(flag) is not True or budget is None or ranks is None:
            continue  # an unreadable Ulysses size may multiply the budget
        # the workers pack up to budget x Ulysses size tokens: the SP group splits each packed row
        if budget * max(1, ranks) < seq:
            times = f" x {sp} {ranks} = {budget * ranks}" if ranks > 1 else ""
            yield _finding(ctx, cfg, key, f"{key.split('.')[-2]}.ppo_max_token_len_per_gpu = {budget}{times} is "
                                          f"below max_prompt_length + max_response_length = {seq}: one sample does "
                                          f"not fit (verl recommends at least {2 * seq})")
