"""V006 verl-sequence-parallel-needs-remove-padding."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ACTOR, _cfg, _finding, _value_fix


@rule("V006", "verl-sequence-parallel-needs-remove-padding", Severity.ERROR, scope="job", frameworks=("verl",), fixable=True)
def verl_sequence_parallel_needs_remove_padding(ctx):
    """Ulysses sequence parallelism is on while `use_remove_padding` is off.

    ## What it does
    Reports `ulysses_sequence_parallel_size > 1` (actor or critic) with the model's `use_remove_padding` false
    (the default before verl 0.5).

    ## Why it matters
    verl's FSDP actor and critic configs assert that sequence parallelism is only supported with remove-padding.

    ## Example
    `actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 actor_rollout_ref.model.use_remove_padding=False`

    ## Fix
    Set `use_remove_padding=True` (unsafe fix: a different attention path).

    ## References
    https://github.com/verl-project/verl/blob/main/verl/workers/config/actor.py
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    for sp_key, pad_key in ((f"{ACTOR}.ulysses_sequence_parallel_size", "actor_rollout_ref.model.use_remove_padding"),
                            ("critic.ulysses_sequence_parallel_size", "critic.model.use_remove_padding")):
        sp = cfg.known_int(sp_key)
        if sp is not None and sp > 1 and cfg.get(pad_key) is False:
            fix = _value_fix(cfg, pad_key, True, f"set {pad_key}=True")
            where = pad_key if cfg.where(pad_key) is not None else sp_key
            yield _finding(ctx, cfg, where, f"{sp_key.rsplit('.', 1)[0].split('.')[-1]} sequence parallel size {sp} "
                                            f"needs {pad_key} = True", fix=fix)
