"""D020 unfilled-auto-value: a value of "auto" that nothing will fill in."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import ds_keys
from rlhf_lint.fixers import json as jfix
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _consumers, _doc, _is_auto, _section_mode, hf_frameworks


def _auto_fill_keys(which: str | None = None) -> set[str]:
    fill = ds_keys()["auto_fill"]
    if which:
        return set(fill[which]["keys"])
    return set(fill["hf_trainer"]["keys"]) | set(fill["accelerate"]["keys"])


@rule("D020", "unfilled-auto-value", Severity.ERROR, kinds=KINDS)
def unfilled_auto_value(ctx):
    """A value of "auto" that nothing will fill in.

    ## What it does
    DeepSpeed never resolves "auto"; only HF Trainer and accelerate replace it, and only for the keys they know
    (batch sizes, gradient clipping, optimizer/scheduler params, fp16/bf16 enabled, the three hidden-size buckets;
    accelerate also the ZeRO stage, offload devices and nvme paths from its own config). This rule reports "auto":
    in a key neither integration fills; and in any key when a plain `deepspeed`/`torchrun` launch uses the file.

    ## Why it matters
    In keys DeepSpeed reads with dict.get the string stays and fails later (`TypeError: '>' not supported between
    instances of 'str' and 'float'`). In validated keys pydantic drops it and uses the default silently: `"stage":
    "auto"` turns ZeRO off (stage 0), so it is an error, other validated keys a warning.

    ## Example
    ```json
    {"gradient_clipping": "auto", "zero_optimization": {"stage": 3, "sub_group_size": "auto"}}
    ```

    ## Fix
    Write the value. Keep "auto" only for keys HF / accelerate fill, in files only they read.

    ## References
    https://github.com/deepspeedai/DeepSpeed/issues/1270
    https://github.com/huggingface/trl/issues/2154
    https://github.com/Roblox/FAI-RL/pull/70
    https://github.com/huggingface/transformers/blob/main/src/transformers/integrations/deepspeed.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    data = ds_keys()
    frameworks, _ = _consumers(ctx)
    plain_launch = bool(frameworks) and not frameworks & hf_frameworks()
    accelerate_launch = "accelerate" in frameworks
    hf_fill, acc_fill = _auto_fill_keys("hf_trainer"), _auto_fill_keys("accelerate")
    for path, m in doc.walk():
        if not _is_auto(m.value):
            continue
        canonical = data["aliases"].get(path, path)
        entry = data["keys"].get(canonical, {})
        parent = path.rpartition(".")[0]
        strict = entry.get("mode") == "strict" and _section_mode(parent, ctx) == "strict"
        fillable = canonical in hf_fill | acc_fill
        if not fillable:
            if canonical in data["keys"]:
                if entry.get("type") == "any":
                    continue  # takes "auto" itself (zenflow intervals)
            elif _section_mode(parent, ctx) != "open" or parent not in ("optimizer.params", "scheduler.params",
                                                                               "amp"):
                continue  # an unknown key: D001/D002 report it
        if plain_launch:
            why = "this file is launched by plain DeepSpeed, which never fills \"auto\""
        elif canonical in hf_fill or (canonical in acc_fill and accelerate_launch):
            continue
        elif canonical in acc_fill:
            why = "only `accelerate launch` with a DeepSpeed plugin config fills it; HF Trainer alone does not"
        else:
            why = "neither HF Trainer nor accelerate fills this key"
        if canonical == "zero_optimization.stage":
            yield Finding(m.value.span, f"\"stage\": \"auto\" — {why}; DeepSpeed then drops it and runs ZeRO stage 0")
        elif strict:
            default = entry.get("default")
            yield Finding(m.value.span, f"{m.key}: \"auto\" — {why}; DeepSpeed drops it and silently uses the default "
                                        f"({jfix.dumps(default)})", severity=Severity.WARNING)
        else:
            yield Finding(m.value.span, f"{m.key}: \"auto\" — {why}; DeepSpeed keeps the string and fails when it "
                                        "uses it (TypeError)")
