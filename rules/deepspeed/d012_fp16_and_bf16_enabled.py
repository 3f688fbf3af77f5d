"""D012 fp16-and-bf16-enabled: both fp16 and bf16 are enabled."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import assumed_version_note, precision_section
from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _consumers, _doc, _enabled, _is_auto, hf_frameworks


@rule("D012", "fp16-and-bf16-enabled", Severity.ERROR, kinds=KINDS)
def fp16_and_bf16_enabled(ctx):
    """Both fp16 and bf16 are enabled.

    ## What it does
    Reads `fp16.enabled` and `bf16.enabled` (or the legacy `bfloat16`) the way the DeepSpeed version in use does:
    before 0.17.1 they are read with `dict.get`, so any non-empty string - `"false"` and `"auto"` included - is
    true; from 0.17.1 pydantic turns `"false"` into false and drops `"auto"`. An `"auto"` is no finding when every
    launch of the file is an HF Trainer, TRL, LLaMA-Factory or accelerate one (or, with no launch known, when the
    file holds "auto" in other keys only they fill): they fill it before DeepSpeed reads it.

    ## Why it matters
    `AssertionError: bfloat16 and fp16 modes cannot be simultaneously enabled` at start-up.

    ## Example
    ```json
    {"fp16": {"enabled": true}, "bf16": {"enabled": true}}
    ```

    ## Fix
    Keep the one your GPUs and model want (bf16 on A100/H100) and disable the other.

    ## References
    https://github.com/Snowflake-AI-Research/Arctic-Platform/pull/78
    https://github.com/hiyouga/LlamaFactory/issues/3493
    https://github.com/deepspeedai/DeepSpeed/pull/6976
    """
    doc = _doc(ctx)
    if doc is None:
        return
    fp16, fp16_node = _enabled(doc, "fp16", ctx)
    bf16, bf16_node = _enabled(doc, precision_section(doc), ctx)
    if fp16 and bf16 and (_is_auto(fp16_node) or _is_auto(bf16_node)):
        frameworks, _ = _consumers(ctx)
        if frameworks and frameworks <= hf_frameworks():
            return  # every launch of the file is an HF Trainer / accelerate one: "auto" is filled before DeepSpeed
        if not frameworks and _written_for_hf(doc):
            return  # no launch known, and "auto" batch keys say the file is for the HF Trainer / accelerate
    if fp16 and bf16:
        strings = [n for n in (fp16_node, bf16_node) if isinstance(n.value, str)]
        note = f" (string values are truthy before DeepSpeed 0.17.1; {assumed_version_note(ctx)})" if strings else ""
        yield Finding(bf16_node.span, "fp16 and bf16 are both enabled: DeepSpeed asserts they cannot be enabled "
                                      f"together{note}",
                      related=(Related(ctx.source.path, fp16_node.span, "fp16 enabled here"),))


def _written_for_hf(doc) -> bool:
    """The file holds "auto" in a key only the HF Trainer / accelerate fill (besides the precision flags)."""
    from rlhf_lint.frameworks.deepspeed import ds_keys

    fill = ds_keys()["auto_fill"]
    keys = (set(fill["hf_trainer"]["keys"]) | set(fill["accelerate"]["keys"])) - {"fp16.enabled", "bf16.enabled"}
    return any(_is_auto(doc.lookup(k)) for k in keys)
