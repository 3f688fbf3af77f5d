"""D003 ds-config-not-strict-json."""
from __future__ import annotations

from rlhf_lint.model import Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc


@rule("D003", "ds-config-not-strict-json", Severity.WARNING, kinds=KINDS, fixable=True)
def ds_config_not_strict_json(ctx):
    """A ds_config uses comments or trailing commas: DeepSpeed reads it, Hugging Face and accelerate do not.

    ## What it does
    Reports each comment and each trailing comma in a ds_config file.

    ## Why it matters
    DeepSpeed loads a config path with `hjson`, which accepts both. HF Trainer and accelerate open the same file with
    `json.load`, which fails with `JSONDecodeError`, so the config works with the `deepspeed` launcher and breaks the
    day it is passed to `--deepspeed` of a Trainer script.

    ## Example
    ```json
    {"train_batch_size": 32, // global
     "fp16": {"enabled": true,},}
    ```

    ## Fix
    Trailing commas are removed (safe). Comments must be moved out by hand (JSON has no comments).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py
    https://github.com/huggingface/accelerate/blob/main/src/accelerate/utils/deepspeed.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    for span in doc.comments:
        yield Finding(span, "comment in a ds_config: DeepSpeed's hjson loader accepts it, but json.load (HF Trainer, "
                            "accelerate) fails on it")
    for span in doc.trailing_commas:
        yield Finding(span, "trailing comma: DeepSpeed's hjson loader accepts it, but json.load (HF Trainer, "
                            "accelerate) fails on it", fix=Fix("remove the trailing comma", (Edit(span.start, span.end, ""),)))
