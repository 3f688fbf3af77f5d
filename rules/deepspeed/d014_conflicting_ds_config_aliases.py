"""D014 conflicting-ds-config-aliases."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import ds_keys
from rlhf_lint.fixers import json as jfix
from rlhf_lint.model import Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _lookup_member


@rule("D014", "conflicting-ds-config-aliases", Severity.ERROR, kinds=KINDS, fixable=True)
def conflicting_ds_config_aliases(ctx):
    """A setting is given under two names (a `stage3_*` alias and its field name, or a deprecated key and its heir).

    ## What it does
    Reports the bare spelling when both `stage3_prefetch_bucket_size` and `prefetch_bucket_size` (and the other
    `stage3_*` aliases, `tensor_parallel.tp` / `tensor_parallel`, `kernel_inject` / `replace_with_kernel_inject`) are
    set, and a deprecated key set together with its replacement (`cpu_offload` with `offload_optimizer`,
    `stage3_gather_fp16_weights_on_model_save` with `stage3_gather_16bit_weights_on_model_save`).

    ## Why it matters
    DeepSpeed rejects both: `ValidationError ... Extra inputs are not permitted` for the alias pair, and `AssertionError:
    Cannot provide deprecated parameter ... and replacing parameter ... together` for the deprecated pair.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 5e7, "prefetch_bucket_size": 5e7}}
    ```

    ## Fix
    When both carry the same value, the fix deletes the redundant spelling (safe). Otherwise pick one by hand.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/config.py
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config_utils.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    text = ctx.source.text
    pairs = [(bare, canonical, "alias") for bare, canonical in ds_keys()["aliases"].items()]
    pairs += [(dep, info["replacement"], "deprecated") for dep, info in ds_keys()["deprecated"].items()
              if info.get("replacement") and dep not in ("bfloat16", "aio.thread_count", "allgather_size")]
    for extra, kept, kind in pairs:
        a, b = _lookup_member(doc, extra), _lookup_member(doc, kept)
        if a is None or b is None:
            continue
        parent_path = extra.rpartition(".")[0]
        parent = doc.lookup(parent_path) if parent_path else doc.root
        same = a.value.to_python() == b.value.to_python()
        if kind == "alias":
            message = (f"{a.key!r} and {b.key!r} are the same setting: DeepSpeed rejects the pair "
                       f"(ValidationError: {a.key} Extra inputs are not permitted)")
        else:
            message = (f"deprecated {a.key!r} and its replacement {b.key!r} are both set: DeepSpeed raises "
                       "AssertionError (Cannot provide deprecated parameter ... together)")
        fix = None
        if same and kind == "alias":
            fix = Fix(f"delete the redundant {a.key!r}", jfix.delete_member(text, parent, a))
        yield Finding(a.key_span, message, fix=fix,
                      related=(Related(ctx.source.path, b.key_span, f"{b.key!r} set here"),))
