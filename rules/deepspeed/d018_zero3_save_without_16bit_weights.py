"""D018 zero3-save-without-16bit-weights."""
from __future__ import annotations

from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JValue
from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _is_auto, _zero_stage


_GATHER_KEYS = ("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                "stage3_gather_fp16_weights_on_model_save")


@rule("D018", "zero3-save-without-16bit-weights", Severity.WARNING, kinds=KINDS, fixable=True)
def zero3_save_without_16bit_weights(ctx):
    """ZeRO-3 without stage3_gather_16bit_weights_on_model_save true: saved models hold no usable weights.

    ## What it does
    Reports a ZeRO stage 3 config where the key is false or absent (absent is false; accelerate also fills false).

    ## Why it matters
    Under ZeRO-3 each GPU holds a shard. Without gathering, `save_16bit_model()` / HF `save_model()` writes nothing
    or empty tensors (`torch.Size([0])`, a 905 KB `pytorch_model.bin`), and the run's result has to be rebuilt with
    `zero_to_fp32.py`.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3}}
    ```

    ## Fix
    Sets it to true (unsafe: saving gathers the full 16-bit model, which costs time and memory at each save).

    ## References
    https://github.com/huggingface/transformers/issues/21482
    https://github.com/hiyouga/LlamaFactory/issues/253
    https://github.com/deepspeedai/DeepSpeed/issues/3841
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) != 3:
        return
    zero = doc.root.get("zero_optimization")
    members = [m for m in (zero.member(k) for k in _GATHER_KEYS) if m is not None]
    if any(_is_auto(m.value) or (isinstance(m.value, JValue) and m.value.value is True) for m in members):
        return
    if members:
        m = members[-1]
        if not (isinstance(m.value, JValue) and m.value.value is False):
            return  # odd value: D023's business
        yield Finding(m.value.span, f"{m.key} is false under ZeRO-3: saved models get no consolidated weights "
                                    "(use zero_to_fp32.py, or set it to true)",
                      fix=Fix(f"set {m.key} to true", (jfix.set_value(m.value, True),), Applicability.UNSAFE))
        return
    stage = zero.member("stage")
    yield Finding(stage.value.span if stage else zero.span,
                  "ZeRO-3 without stage3_gather_16bit_weights_on_model_save (defaults to false): saved models get no "
                  "consolidated weights",
                  fix=Fix("add \"stage3_gather_16bit_weights_on_model_save\": true",
                          jfix.insert_member(ctx.source.text, doc, zero, "stage3_gather_16bit_weights_on_model_save",
                                             True), Applicability.UNSAFE))
