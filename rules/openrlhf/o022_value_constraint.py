"""O022 value-constraint."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _checked, _flag_of, _invocations, _k, _num, _on, _where


@rule("O022", "value-constraint", Severity.ERROR, kinds=SHELL)
def value_constraint(ctx):
    """Values OpenRLHF checks after parsing: ring attention without packing (SFT/DPO/RM), multi-turn without a chat
    template, dual clip not above 1, an inverted dynamic-filtering range.

    ## What it does
    `--ds.ring_attn_size > 1` requires `--ds.packing_samples` in train_sft/dpo/rm (v0.5.4+; train_ppo_ray switches
    it on instead); `--data.multiturn` requires `--data.apply_chat_template` (v0.5.7+); `--actor.dual_clip` must be
    above 1.0 (v0.8.6+); `--algo.dynamic_filtering_range` must be increasing (v0.8.1+).

    ## Why it matters
    Each is an assertion before or at the first step.

    ## Example
    `deepspeed --module openrlhf.cli.train_sft --ds.ring_attn_size 2`.

    ## Fix
    Add the required option or correct the value.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_sft.py#L308-L322
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/models/loss.py#L147-L148
    """
    k = _k()
    for inv in _invocations(ctx):
        ring = _num(inv, "ds.ring_attn_size")
        if inv.cli in ("train_sft", "train_dpo", "train_rm") and ring and ring > 1 \
                and k.check_applies("ring_attention_needs_packing", inv.tag) and _on(inv, "ds.packing_samples") is False:
            span, related = _where(inv, "ds.ring_attn_size")
            yield _checked(
                inv, span,
                f"ring attention needs {_flag_of(inv, 'ds.packing_samples')} in {inv.cli}",
                related=related)
        if inv.cli == "train_sft" and k.check_applies("multiturn_needs_chat_template", inv.tag) \
                and _on(inv, "data.multiturn") and _on(inv, "data.apply_chat_template") is False:
            span, related = _where(inv, "data.multiturn")
            yield _checked(
                inv, span,
                f"multi-turn data needs {_flag_of(inv, 'data.apply_chat_template')}",
                related=related)
        if inv.cli == "train_ppo_ray":
            dual = _num(inv, "actor.dual_clip")
            if dual is not None and dual <= 1.0 and k.check_applies("dual_clip_above_one", inv.tag):
                span, related = _where(inv, "actor.dual_clip")
                yield _checked(
                    inv, span,
                    f"dual clip must be above 1.0, got {dual}",
                    related=related)
            rng = inv.get("algo.dynamic_filtering_range")
            if _on(inv, "algo.dynamic_filtering_enable") and isinstance(rng, list) and len(rng) == 2 \
                    and all(isinstance(x, (int, float)) for x in rng) and not rng[0] < rng[1] \
                    and k.check_applies("dynamic_filtering", inv.tag):
                span, related = _where(inv, "algo.dynamic_filtering_range")
                yield _checked(
                    inv, span,
                    f"the dynamic filtering range must be increasing, got {rng[0]} {rng[1]}",
                    related=related)
