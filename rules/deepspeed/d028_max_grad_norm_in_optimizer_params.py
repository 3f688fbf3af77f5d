"""D028 max-grad-norm-in-optimizer-params: gradient clipping written as `max_grad_norm` inside `optimizer.params`."""
from __future__ import annotations

from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JObject
from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _number, _optimizer


@rule("D028", "max-grad-norm-in-optimizer-params", Severity.ERROR, kinds=KINDS, fixable=True)
def max_grad_norm_in_optimizer_params(ctx):
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
