"""D: cross-field checks DeepSpeed makes while it builds its config or its engine (research sections 2.2 and 2.3).

Facts (which optimizers, which schedulers, since which release) are in schemas/ds_config_checks.json. A check fires
only on literal values: a stage or a type that is "auto" or missing stays unknown.
"""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import assumed_version_note, ds_version_origin, normalise_dtype, precision_section, \
    version_at_least
from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JObject, JValue
from rlhf_lint.model import Applicability, Edit, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed import KINDS, _device, _doc, _enabled, _is_auto, _lookup_member, _zero_stage

DS = "https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed"


def checks() -> dict:
    from rlhf_lint.schemas import load

    return load("ds_config_checks.json")


def _literal(doc, dotted: str):
    """(python value, node) of a scalar at dotted, or (None, None) when absent, "auto" or not a scalar."""
    node = doc.lookup(dotted)
    if not isinstance(node, JValue) or _is_auto(node):
        return None, None
    return node.value, node


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _optimizer(doc):
    """(DeepSpeed's name for optimizer.type, node): DeepSpeed lower-cases its own names, torch names stay."""
    value, node = _literal(doc, "optimizer.type")
    if not isinstance(value, str):
        return None, None
    from rlhf_lint.frameworks.deepspeed import ds_keys

    low = value.lower()
    return (low if low in ds_keys()["optimizers"]["names"] else value), node


def _is_true(doc, dotted: str) -> bool:
    value, _ = _literal(doc, dotted)
    return value is True


# -- D024 allgather bucket ------------------------------------------------------------------------------------------
@rule("D024", "allgather-bucket-size-odd", Severity.ERROR, kinds=KINDS, fixable=True)
def allgather_bucket_odd(ctx):
    """ZeRO-1/2 with an odd `allgather_bucket_size`.

    ## What it does
    Reports a literal `zero_optimization.allgather_bucket_size` that is not a multiple of 2 when the stage is 1 or 2
    (ZeRO-3 does not use the key).

    ## Why it matters
    The ZeRO-1/2 optimizer aligns NCCL all-gather buffers to 4 bytes and asserts `allgather_bucket_size must be a
    multiple of nccl_start_alignment_factor, 2` when it is built, after the model is loaded.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "allgather_bucket_size": 200000001}}
    ```

    ## Fix
    Rounds the size up to the next even number (unsafe: the bucket grows by one element).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/stage_1_and_2.py#L346-L351
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) not in (1, 2):
        return
    value, node = _literal(doc, "zero_optimization.allgather_bucket_size")
    value = _number(value)
    if value is None or not float(value).is_integer() or int(value) % 2 == 0:
        return
    even = int(value) + 1
    yield Finding(node.span, f"allgather_bucket_size {int(value)} is odd: ZeRO-{_zero_stage(doc)} asserts it is a "
                             "multiple of 2 (nccl_start_alignment_factor)",
                  fix=Fix(f"round up to {even}", (jfix.set_value(node, even),), Applicability.UNSAFE))


# -- D025 prescale / predivide with reduce-scatter ----------------------------------------------------------------------
@rule("D025", "gradient-prescale-with-reduce-scatter", Severity.ERROR, kinds=KINDS)
def prescale_with_reduce_scatter(ctx):
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


# -- D026 1-bit optimizers, D027 lamb loss scale, D038 untested optimizer ----------------------------------------------
@rule("D026", "one-bit-optimizer-with-zero", Severity.ERROR, kinds=KINDS)
def one_bit_with_zero(ctx):
    """A 1-bit optimizer (OneBitAdam, ZeroOneAdam, OneBitLamb) with ZeRO stage 1-3.

    ## What it does
    Reports `optimizer.type` naming a 1-bit optimizer when the ZeRO stage is a literal 1, 2 or 3.

    ## Why it matters
    The engine asserts `1bit-Adam is not compatible with ZeRO` (`0/1 Adam ...`, `1bit-Lamb ...`) when it builds the
    optimizer: the compressed communication replaces the reductions ZeRO partitions.

    ## Example
    ```json
    {"optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4}}, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Use stage 0 with the 1-bit optimizer, or keep ZeRO with Adam/AdamW.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L2146-L2166
    https://www.deepspeed.ai/tutorials/onebit-adam/
    """
    doc = _doc(ctx)
    if doc is None:
        return
    name, node = _optimizer(doc)
    label = checks()["one_bit_optimizers"]["names"].get(name)
    stage = _zero_stage(doc)
    if label and stage in (1, 2, 3):
        yield Finding(node.span, f"{node.value} with ZeRO stage {stage}: DeepSpeed asserts '{label} is not compatible "
                                 "with ZeRO'")


@rule("D027", "lamb-with-static-loss-scale", Severity.ERROR, kinds=KINDS, fixable=True)
def lamb_static_loss_scale(ctx):
    """LAMB or OneBitLamb with a static fp16 loss scale.

    ## What it does
    Reports `fp16.loss_scale` other than 0 (0 means dynamic) when fp16 is enabled and `optimizer.type` is lamb or
    onebitlamb.

    ## Why it matters
    The engine asserts `DeepSpeed lamb optimizer requires dynamic loss scaling` at initialize().

    ## Example
    ```json
    {"optimizer": {"type": "Lamb"}, "fp16": {"enabled": true, "loss_scale": 128}}
    ```

    ## Fix
    Sets `loss_scale` to 0, dynamic scaling (unsafe: the scale now moves during training).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1696-L1698
    """
    doc = _doc(ctx)
    if doc is None:
        return
    name, type_node = _optimizer(doc)
    if name not in checks()["dynamic_loss_scale_optimizers"]["names"]:
        return
    fp16, _ = _enabled(doc, "fp16", ctx)
    scale, node = _literal(doc, "fp16.loss_scale")
    if fp16 is not True or _number(scale) is None or scale == 0:
        return
    yield Finding(node.span, f"loss_scale {scale} is a static loss scale, but {type_node.value} requires dynamic "
                             "loss scaling: DeepSpeed asserts at initialize()",
                  related=(Related(ctx.source.path, type_node.span, "optimizer set here"),),
                  fix=Fix("set loss_scale to 0 (dynamic)", (jfix.set_value(node, 0),), Applicability.UNSAFE))


@rule("D038", "zero-untested-optimizer", Severity.ERROR, kinds=KINDS)
def zero_untested_optimizer(ctx):
    """ZeRO with an optimizer it has not been tested with, without `zero_allow_untested_optimizer`.

    ## What it does
    Reports `optimizer.type` when ZeRO is on (stage 1-3) and the optimizer DeepSpeed builds for it is not in ZeRO's
    supported list (torch Adam/AdamW/Adagrad, DeepSpeed's Adam, AdamW, Adagrad, Lion and Muon), unless
    `zero_allow_untested_optimizer` is true. The 1-bit optimizers are D026's.

    ## Why it matters
    The engine asserts `You are using an untested ZeRO Optimizer. Please add <"zero_allow_untested_optimizer": true>`
    at initialize(). `"type": "Lamb"` (FusedLamb) and torch names such as `SGD` hit it.

    ## Example
    ```json
    {"optimizer": {"type": "SGD", "params": {"lr": 0.1}}, "zero_optimization": {"stage": 1}}
    ```

    ## Fix
    Add `"zero_allow_untested_optimizer": true` if you accept the risk, or use AdamW.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/utils.py#L45-L69
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1985-L1991
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) not in (1, 2, 3) or _is_true(doc, "zero_allow_untested_optimizer"):
        return
    name, node = _optimizer(doc)
    facts = checks()
    if name is None or name in facts["one_bit_optimizers"]["names"]:
        return
    supported = facts["zero_supported_optimizers"]
    from rlhf_lint.frameworks.deepspeed import ds_keys

    if name in ds_keys()["optimizers"]["names"]:
        if name in supported["deepspeed_names"]:
            return
    elif name in supported["torch_names"] or not name.isidentifier():
        return
    yield Finding(node.span, f"optimizer {node.value!r} is not one ZeRO supports: DeepSpeed asserts 'You are using "
                             "an untested ZeRO Optimizer' unless zero_allow_untested_optimizer is true")


# -- D028 max_grad_norm in optimizer params ----------------------------------------------------------------------------
@rule("D028", "max-grad-norm-in-optimizer-params", Severity.ERROR, kinds=KINDS, fixable=True)
def max_grad_norm_param(ctx):
    """Gradient clipping written as `max_grad_norm` inside `optimizer.params`.

    ## What it does
    Reports the key in the params of an optimizer DeepSpeed builds from the config (`optimizer.type` set).

    ## Why it matters
    DeepSpeed raises `ValueError: 'max_grad_norm' is not supported as an optimizer parameter, please switch to using
    the deepspeed parameter 'gradient_clipping'` when it builds the optimizer.

    ## Example
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-5, "max_grad_norm": 1.0}}}
    ```

    ## Fix
    Moves the value to top-level `gradient_clipping` (or just deletes it when gradient_clipping is set). Unsafe:
    clipping now takes effect.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L2090-L2093
    https://www.deepspeed.ai/docs/config-json/#gradient-clipping
    """
    doc = _doc(ctx)
    if doc is None or _optimizer(doc)[0] is None:
        return
    params = doc.lookup("optimizer.params")
    member = params.member("max_grad_norm") if isinstance(params, JObject) else None
    if member is None:
        return
    text = ctx.source.text
    edits = jfix.delete_member(text, params, member)
    value = member.value.to_python()
    message = "delete max_grad_norm (gradient_clipping is set)"
    if doc.root.get("gradient_clipping") is None and _number(value) is not None:
        edits = edits + jfix.insert_member(text, doc, doc.root, "gradient_clipping", value)
        message = f"move it to \"gradient_clipping\": {jfix.dumps(value)}"
    yield Finding(member.key_span, "max_grad_norm in optimizer.params: DeepSpeed raises ValueError (use the top-level "
                                   "gradient_clipping)", fix=Fix(message, edits, Applicability.UNSAFE))


# -- D029 warmup_num_steps, D030 total_num_steps ---------------------------------------------------------------------
@rule("D029", "warmup-steps-not-positive-int", Severity.ERROR, kinds=KINDS, fixable=True)
def warmup_steps_int(ctx):
    """A warmup scheduler's `warmup_num_steps` that is not a positive whole number (DeepSpeed >= 0.19.3).

    ## What it does
    For `WarmupLR`, `WarmupDecayLR` and `WarmupCosineLR`, reports a literal `scheduler.params.warmup_num_steps`
    that is 0 or negative, or written as a float (`1e3`, `100.0`: JSON reads them as floats). Applies when the
    DeepSpeed version in use is 0.19.3 or newer (configured, pinned, or assumed when unknown).

    ## Why it matters
    Since 0.19.3 the schedulers raise `ValueError: warmup_num_steps must be a positive integer` when the engine
    builds them. Older releases accepted floats and clamped small values.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1e3}}}
    ```

    ## Fix
    Writes a whole float such as `1e3` as `1000` (safe: same number). Zero or negative values need a decision.

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/8126
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/lr_schedules.py#L708-L709
    """
    doc = _doc(ctx)
    if doc is None:
        return
    facts = checks()["warmup_schedulers"]
    kind, _ = _literal(doc, "scheduler.type")
    if kind not in facts["names"] or not version_at_least(ctx, facts["positive_int_since"]):
        return
    value, node = _literal(doc, "scheduler.params.warmup_num_steps")
    if _number(value) is None:
        return
    note = assumed_version_note(ctx)
    if value <= 0:
        yield Finding(node.span, f"warmup_num_steps {value} is not positive: {kind} raises ValueError ({note})")
    elif isinstance(value, float):
        fix = None
        if value.is_integer():
            fix = Fix(f"write {int(value)}", (Edit(node.span.start, node.span.end, str(int(value))),))
        yield Finding(node.span, f"warmup_num_steps {ctx.source.text[node.span.start:node.span.end]} is a float: "
                                 f"{kind} raises 'warmup_num_steps must be a positive integer' ({note})", fix=fix)


@rule("D030", "scheduler-missing-total-num-steps", Severity.ERROR, kinds=KINDS)
def missing_total_steps(ctx):
    """A decaying warmup scheduler (`WarmupDecayLR`, `WarmupCosineLR`) without `total_num_steps`.

    ## What it does
    Reports the scheduler type when `scheduler.params.total_num_steps` is absent. ("auto" counts as present: HF
    Trainer and accelerate fill it.)

    ## Why it matters
    Both schedulers take `total_num_steps` as a required argument; DeepSpeed passes `scheduler.params` as keyword
    arguments, so the engine fails with `TypeError: __init__() missing 1 required positional argument:
    'total_num_steps'`. HF and accelerate fill only a value written as "auto", not a missing key.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100}}}
    ```

    ## Fix
    Add `"total_num_steps"`: the number of optimizer steps of the run (or "auto" under HF / accelerate).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/lr_schedules.py#L789-L842
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1598-L1611
    """
    doc = _doc(ctx)
    if doc is None:
        return
    kind, node = _literal(doc, "scheduler.type")
    if kind not in checks()["total_num_steps_schedulers"]["names"]:
        return
    params = doc.lookup("scheduler.params")
    if params is not None and not isinstance(params, JObject):
        return
    if params is None or params.member("total_num_steps") is None:
        yield Finding(node.span, f"{kind} needs scheduler.params.total_num_steps: without it DeepSpeed fails with "
                                 "TypeError (missing required argument 'total_num_steps')")


# -- D031 low-precision master weights --------------------------------------------------------------------------------
@rule("D031", "low-precision-master-weights-prerequisites", Severity.ERROR, kinds=KINDS)
def master_weights_prerequisites(ctx):
    """Low-precision optimizer states without 16-bit master weights, or 16-bit master weights without ZeRO.

    ## What it does
    Reports `bf16.bf16_optimizer_states: true` when `bf16.bf16_master_weights_and_grads` is not true, and any of
    `fp16.fp16_master_weights_and_grads`, `bf16.bf16_master_weights_and_grads`, `bf16.bf16_optimizer_states` set to
    true when the ZeRO stage is 0.

    ## Why it matters
    DeepSpeed asserts while it builds the config: `bf16_optimizer_states requires bf16_master_weights_and_grads to
    be enabled.` and `..._master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3.`

    ## Example
    ```json
    {"bf16": {"enabled": true, "bf16_optimizer_states": true}, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Also set `bf16_master_weights_and_grads: true` (ZeRO-1/2 then need CPU optimizer offload with DeepSpeedCPUAdam),
    or remove the key.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py#L1037-L1049
    """
    doc = _doc(ctx)
    if doc is None:
        return
    bf16 = precision_section(doc)
    stage = _zero_stage(doc)
    states, states_node = _literal(doc, f"{bf16}.bf16_optimizer_states")
    master, _ = _literal(doc, f"{bf16}.bf16_master_weights_and_grads")
    if states is True and master is not True:
        yield Finding(states_node.span, "bf16_optimizer_states needs bf16_master_weights_and_grads true: DeepSpeed "
                                        "asserts while it builds the config")
    if stage != 0:
        return
    for dotted in ("fp16.fp16_master_weights_and_grads", f"{bf16}.bf16_master_weights_and_grads",
                   f"{bf16}.bf16_optimizer_states"):
        value, node = _literal(doc, dotted)
        if value is True:
            yield Finding(node.span, f"{dotted.rpartition('.')[2]} needs ZeRO stage 1, 2 or 3 (stage is 0): "
                                     "DeepSpeed asserts while it builds the config")


# -- D032 gradient_allreduce_op sum ----------------------------------------------------------------------------------
@rule("D032", "allreduce-sum-unsupported", Severity.ERROR, kinds=KINDS)
def allreduce_sum(ctx):
    """Summed gradient reduction (`gradient_allreduce_op: "sum"`) with ZeRO-3, ZenFlow or DeepCompile.

    ## What it does
    Reports `"gradient_allreduce_op": "sum"` when the ZeRO stage is 3, a `zero_optimization.zenflow` block is set,
    or `compile.deepcompile` is true. The key exists from DeepSpeed 0.19.6 (older releases ignore it), so the rule
    applies from that version (configured, pinned, or assumed when unknown).

    ## Why it matters
    DeepSpeed raises `ValueError: gradient_allreduce_op='sum' is not supported with ZeRO stage 3` (or ZenFlow,
    DeepCompile) while it builds the config.

    ## Example
    ```json
    {"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}}
    ```

    ## Fix
    Use "mean" (the default) and scale the loss yourself, or ZeRO stage 1/2.

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/8232
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py#L1029-L1035
    """
    doc = _doc(ctx)
    if doc is None or not version_at_least(ctx, checks()["gradient_allreduce_op"]["since"]):
        return
    op, node = _literal(doc, "gradient_allreduce_op")
    if not (isinstance(op, str) and op.lower() == "sum"):
        return
    reasons = []
    if _zero_stage(doc) == 3:
        reasons.append("ZeRO stage 3")
    zenflow = doc.lookup("zero_optimization.zenflow")
    if zenflow is not None and not (isinstance(zenflow, JValue) and zenflow.value is None):
        reasons.append("ZenFlow")
    if _is_true(doc, "compile.deepcompile"):
        reasons.append("DeepCompile")
    if reasons:
        yield Finding(node.span, f"gradient_allreduce_op \"sum\" is not supported with {' and '.join(reasons)}: "
                                 f"DeepSpeed raises ValueError ({assumed_version_note(ctx)})")


# -- D033 / D034 amp ----------------------------------------------------------------------------------------------------
def _amp(doc):
    value, node = _literal(doc, "amp.enabled")
    return node if value is True else None


@rule("D033", "amp-with-zero", Severity.ERROR, kinds=KINDS)
def amp_with_zero(ctx):
    """Apex AMP (`amp.enabled`) together with ZeRO.

    ## What it does
    Reports `amp.enabled: true` when the ZeRO stage is 1, 2 or 3.

    ## Why it matters
    The engine asserts `Amp and ZeRO are not currently compatible, please use (legacy) fp16 mode which performs
    similar to amp opt_mode=O2` at initialize().

    ## Example
    ```json
    {"amp": {"enabled": true, "opt_level": "O1"}, "zero_optimization": {"stage": 2}}
    ```

    ## Fix
    Replace the amp block with `"fp16": {"enabled": true}` (or bf16).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1983-L1985
    """
    doc = _doc(ctx)
    node = None if doc is None else _amp(doc)
    stage = None if node is None else _zero_stage(doc)
    if stage in (1, 2, 3):
        yield Finding(node.span, f"amp is enabled with ZeRO stage {stage}: DeepSpeed asserts 'Amp and ZeRO are not "
                                 "currently compatible'")


@rule("D034", "amp-with-fp16-or-bf16", Severity.ERROR, kinds=KINDS)
def amp_with_half(ctx):
    """Apex AMP (`amp.enabled`) together with DeepSpeed's fp16 or bf16 mode, or a different accumulation dtype.

    ## What it does
    Without ZeRO (stage 0; with ZeRO see D033), reports `amp.enabled: true` when `fp16.enabled` or `bf16.enabled` is
    true, or when `data_types.grad_accum_dtype` is set to something other than fp32 (AMP keeps an fp32 model).

    ## Why it matters
    The engine raises `NotImplementedError("Cannot enable both amp with (legacy) fp16 or bfloat16 mode")` or `Model
    data type and gradient accumulation data type must be equal to use Amp` at initialize().

    ## Example
    ```json
    {"amp": {"enabled": true}, "fp16": {"enabled": true}}
    ```

    ## Fix
    Keep one mixed-precision mechanism: DeepSpeed's fp16/bf16 block, or amp.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L1998-L2003
    """
    doc = _doc(ctx)
    node = None if doc is None else _amp(doc)
    if node is None or _zero_stage(doc) != 0:
        return
    fp16, fp16_node = _enabled(doc, "fp16", ctx)
    bf16, bf16_node = _enabled(doc, precision_section(doc), ctx)
    half = "fp16" if fp16 is True else "bf16" if bf16 is True else None
    accum, accum_node = _literal(doc, "data_types.grad_accum_dtype")
    if half:
        other = fp16_node if half == "fp16" else bf16_node
        yield Finding(node.span, f"amp is enabled together with {half}: DeepSpeed raises NotImplementedError('Cannot "
                                 "enable both amp with (legacy) fp16 or bfloat16 mode')",
                      related=(Related(ctx.source.path, other.span, f"{half} enabled here"),))
    elif normalise_dtype(accum) not in (None, "fp32"):
        yield Finding(node.span, f"amp keeps an fp32 model but grad_accum_dtype is {accum}: DeepSpeed raises "
                                 "NotImplementedError('Model data type and gradient accumulation data type must be "
                                 "equal to use Amp')", related=(Related(ctx.source.path, accum_node.span,
                                                                        "grad_accum_dtype set here"),))


# -- D035 mixed accumulation dtype without ZeRO --------------------------------------------------------------------------
@rule("D035", "grad-accum-dtype-without-zero", Severity.ERROR, kinds=KINDS)
def accum_without_zero(ctx):
    """Without ZeRO, the gradient accumulation dtype differs from the model dtype (e.g. bf16 with fp32 accumulation).

    ## What it does
    At ZeRO stage 0 without amp, reports a `grad_accum_dtype` other than the dtype fp16/bf16/fp32 training uses.
    bf16 with fp32 accumulation is reported only from DeepSpeed 0.18.5 (before, it selected BF16_Optimizer).

    ## Why it matters
    The engine raises `NotImplementedError: unsupported mix of model_dtype=... and grad_accum_dtype=...` when it
    builds the optimizer. PR #7790 (0.18.5) removed the bf16 + fp32 path without ZeRO.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"}}
    ```

    ## Fix
    Use ZeRO stage 1 (bf16 with fp32 accumulation then runs BF16_Optimizer), or drop `grad_accum_dtype`.

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/7790
    https://github.com/deepspeedai/DeepSpeed/pull/7803
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/engine.py#L2008-L2021
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) != 0 or _amp(doc) is not None:
        return
    accum_raw, node = _literal(doc, "data_types.grad_accum_dtype")
    accum = normalise_dtype(accum_raw)
    fp16, fp16_node = _enabled(doc, "fp16", ctx)
    bf16, bf16_node = _enabled(doc, precision_section(doc), ctx)
    # "auto" (or another undecidable value) in a precision section that is not overruled by one enabled for sure
    undecided = (fp16 is None and fp16_node is not None) or (bf16 is None and bf16_node is not None)
    if accum is None or (undecided and fp16 is not True and bf16 is not True):
        return  # unknown model dtype
    model = "fp16" if fp16 is True else "bf16" if bf16 is True else "fp32"
    if accum == model:
        return
    since = checks()["mixed_grad_accum_without_zero"]["bf16_fp32_rejected_since"]
    note = ""
    if model == "bf16" and accum == "fp32":
        if not version_at_least(ctx, since):
            return
        note = f" since DeepSpeed {since} ({assumed_version_note(ctx)}); ZeRO stage 1 runs this mix with BF16_Optimizer"
    yield Finding(node.span, f"grad_accum_dtype {accum} with a {model} model and no ZeRO: DeepSpeed raises "
                             f"NotImplementedError (unsupported mix){note}")


# -- D036 elastic_checkpoint, D037 elasticity vs batch keys ------------------------------------------------------------
@rule("D036", "elastic-checkpoint-with-zero3", Severity.WARNING, kinds=KINDS, fixable=True)
def elastic_checkpoint_zero3(ctx):
    """Elastic checkpointing (`zero_optimization.elastic_checkpoint`) requested under ZeRO-3.

    ## What it does
    Reports the key when it is true and the stage is 3.

    ## Why it matters
    ZeRO-3 does not do elastic checkpointing; since 0.19.3 DeepSpeed says so in a warning ("ZeRO-3 elastic
    checkpointing is deprecated and no longer supported. Use Universal Checkpointing instead."). A resume that
    counted on it to change the number of GPUs will not work.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "elastic_checkpoint": true}}
    ```

    ## Fix
    Deletes the key (unsafe: check how you resume; use Universal Checkpointing to change the world size).

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/8099
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/config.py#L396-L400
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) != 3:
        return
    member = _lookup_member(doc, "zero_optimization.elastic_checkpoint")
    if member is None or not (isinstance(member.value, JValue) and member.value.value is True):
        return
    zero = doc.root.get("zero_optimization")
    yield Finding(member.key_span, "elastic_checkpoint has no effect with ZeRO-3 (deprecated, no longer supported): "
                                   "use Universal Checkpointing to resume on another world size",
                  fix=Fix("delete elastic_checkpoint", jfix.delete_member(ctx.source.text, zero, member),
                          Applicability.UNSAFE))


@rule("D037", "elasticity-with-batch-keys", Severity.ERROR, kinds=KINDS)
def elasticity_batch_keys(ctx):
    """Elastic training enabled while the config also sets batch sizes.

    ## What it does
    Reports each of `train_batch_size`, `train_micro_batch_size_per_gpu`, `gradient_accumulation_steps` when
    `elasticity.enabled` is true and `elasticity.ignore_non_elastic_batch_info` is not true.

    ## Why it matters
    DeepSpeed raises `ElasticityConfigError: One or more batch related parameters were found in your ds_config ...
    These parameters *will not be used* since elastic training is enabled` while it builds the config.

    ## Example
    ```json
    {"train_batch_size": 64, "elasticity": {"enabled": true, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4]}}
    ```

    ## Fix
    Remove the batch keys (elasticity chooses them), or set `"ignore_non_elastic_batch_info": true`.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py#L755-L768
    https://www.deepspeed.ai/docs/config-json/#elastic-training-config-v01-and-v02
    """
    doc = _doc(ctx)
    if doc is None or not _is_true(doc, "elasticity.enabled") or _is_true(doc, "elasticity.ignore_non_elastic_batch_info"):
        return
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        member = doc.root.member(key)
        if member is not None:
            yield Finding(member.key_span, f"{key} is set while elasticity is enabled: DeepSpeed raises "
                                           "ElasticityConfigError (set ignore_non_elastic_batch_info to keep it)")


# -- D040 defaults that changed ------------------------------------------------------------------------------------------
def _default_applies(doc, when: str, ctx) -> bool:
    if when == "always":
        return True
    if when == "bf16":
        return _enabled(doc, precision_section(doc), ctx)[0] is True
    if when in ("offload_optimizer", "offload_param"):
        return _device(doc, when.split("_")[1])[0] in ("cpu", "nvme")
    return False


@rule("D040", "ds-default-changed", Severity.INFO, kinds=KINDS, default_enabled=False)
def default_changed(ctx):
    """The config relies on a DeepSpeed default that changed between releases, and the DeepSpeed version is unknown.

    ## What it does
    Off by default (enable with `--extend-select D040`). When no DeepSpeed version is configured
    (`deepspeed-version`) and the repository pins none exactly, reports each absent key whose default changed:
    `gradient_clipping` (0.0 -> 1.0 in 0.19.3), `bf16.check_grad_overflow` with bf16 (false -> true in 0.19.3),
    `offload_optimizer.pin_memory` / `offload_param.pin_memory` with cpu/nvme offload (false -> true in 0.19.5).
    With a known version the default is known, so nothing is reported.

    ## Why it matters
    The same file trains differently on two installs: clipping at 1.0 appears, overflow checks cost a sync, pinned
    offload buffers need host RAM and a high `ulimit -l` (OOM after upgrading is the documented symptom).

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Fix
    Write the value you want explicitly, or pin DeepSpeed.

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/8068
    https://github.com/deepspeedai/DeepSpeed/pull/8035
    https://github.com/deepspeedai/DeepSpeed/pull/8207
    """
    doc = _doc(ctx)
    if doc is None:
        return
    version, origin = ds_version_origin(ctx)
    if origin != "assumed":
        return
    for row in checks()["changed_defaults"]:
        key = row["key"]
        parent = key.rpartition(".")[0]
        if not _default_applies(doc, row["when"], ctx) or doc.lookup(key) is not None:
            continue
        if parent == "bf16" and precision_section(doc) == "bfloat16":
            parent = "bfloat16"
        anchor = doc.lookup(parent) if parent else None
        span = anchor.span if anchor is not None else None
        yield Finding(span, f"{key} is not set: its default changed from {jfix.dumps(row['old'])} to "
                            f"{jfix.dumps(row['new'])} in DeepSpeed {row['since']}, and the DeepSpeed version is "
                            f"unknown ({version} assumed): set it explicitly")
