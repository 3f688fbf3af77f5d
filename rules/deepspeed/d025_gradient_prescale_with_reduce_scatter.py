"""D025 gradient-prescale-with-reduce-scatter."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _literal, _number, _zero_stage


@rule("D025", "gradient-prescale-with-reduce-scatter", Severity.ERROR, kinds=KINDS)
def gradient_prescale_with_reduce_scatter(ctx):
    """Gradient pre-scaling (`prescale_gradients`, `gradient_predivide_factor` != 1) with ZeRO-2/3 reduce-scatter.

    ## What it does
    Reports either key when the stage is 2 or 3 and `zero_optimization.reduce_scatter` is not false (it defaults to
    true). At stage 2 gradients must also be averaged (`gradient_allreduce_op` mean, the default).

    ## Why it matters
    The ZeRO-2 and ZeRO-3 optimizers assert `gradient_predivide_factor != 1.0 is not yet supported with ZeRO-2 with
    reduce scatter enabled` / `pre-scale gradients is not yet supported ...` at initialize().

    ## Example
    ```json
    {"prescale_gradients": true, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Remove `prescale_gradients` / `gradient_predivide_factor`, or set `"reduce_scatter": false` (slower all-reduce).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/stage_1_and_2.py#L305-L311
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/stage3.py#L385-L389
    """
    doc = _doc(ctx)
    stage = None if doc is None else _zero_stage(doc)
    if stage not in (2, 3):
        return
    scatter, _ = _literal(doc, "zero_optimization.reduce_scatter")
    if scatter is False:
        return
    op, _ = _literal(doc, "gradient_allreduce_op")
    if stage == 2 and isinstance(op, str) and op.lower() == "sum":
        return  # no averaging: DeepSpeed skips both assertions at stage 2
    pre, pre_node = _literal(doc, "prescale_gradients")
    if pre is True:
        yield Finding(pre_node.span, f"prescale_gradients is true with ZeRO-{stage} reduce-scatter: DeepSpeed asserts "
                                     "'pre-scale gradients is not yet supported' at initialize()")
    factor, factor_node = _literal(doc, "gradient_predivide_factor")
    if _number(factor) is not None and factor != 1:
        yield Finding(factor_node.span, f"gradient_predivide_factor {factor} with ZeRO-{stage} reduce-scatter: DeepSpeed "
                                        "asserts 'gradient_predivide_factor != 1.0 is not yet supported'")
