"""D004 duplicate-ds-config-key: the same key appears twice in one object of a ds_config."""
from __future__ import annotations

from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JArray, JObject
from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc


def _objects(node):
    if isinstance(node, JObject):
        yield node
        for m in node.members:
            yield from _objects(m.value)
    elif isinstance(node, JArray):
        for item in node.items:
            yield from _objects(item)


@rule("D004", "duplicate-ds-config-key", Severity.ERROR, kinds=KINDS, fixable=True)
def duplicate_ds_config_key(ctx):
    """The same key appears twice in one object of a ds_config.

    ## What it does
    Reports every member whose key is repeated later in the same object.

    ## Why it matters
    DeepSpeed raises `ValueError: Duplicate keys in DeepSpeed config` when it loads the file; HF Trainer and
    accelerate (`json.load`) silently keep the last value, so the first one never had an effect.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 4, "train_micro_batch_size_per_gpu": 8}
    ```

    ## Fix
    Deletes the earlier member (unsafe: under plain DeepSpeed the file failed, under HF the last value already won).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config_utils.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    for obj in _objects(doc.root):
        last = {m.key: m for m in obj.members}  # one pass: 10,000 duplicates on a line stay linear
        for i, m in enumerate(obj.members):
            if last[m.key] is m:
                continue
            line = ctx.source.position(last[m.key].key_span.start).line
            yield Finding(m.key_span, f"duplicate key {m.key!r} (again on line {line}): DeepSpeed raises ValueError; "
                                      "json.load (HF, accelerate) keeps the last value",
                          fix=Fix(f"delete this earlier {m.key!r}", jfix.delete_member(ctx.source.text, obj, m, i),
                                  Applicability.UNSAFE))
