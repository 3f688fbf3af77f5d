"""D013 deprecated-ds-config-key: a deprecated ds_config key: renamed, ignored, or removed."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import ds_keys
from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JValue
from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _lookup_member, _past_edge


@rule("D013", "deprecated-ds-config-key", Severity.WARNING, kinds=KINDS, fixable=True)
def deprecated_ds_config_key(ctx):
    """A deprecated ds_config key: renamed, ignored, or removed.

    ## What it does
    Reports `zero_optimization.cpu_offload`, `cpu_offload_param`, `cpu_offload_use_pin_memory`,
    `stage3_gather_fp16_weights_on_model_save`, `legacy_stage1`, the legacy `bfloat16` section, the boolean form of
    `zero_optimization`, top-level `allgather_size`, and `aio.thread_count` (renamed `intra_op_parallelism` in 0.16.4
    and silently ignored since).

    ## Why it matters
    Some still work with a warning, some are silently ignored (`aio.thread_count`, `cpu_offload_use_pin_memory`,
    `bfloat16` next to `bf16`), and `legacy_stage1: true` raises at initialize().

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "cpu_offload": true}}
    ```

    ## Fix
    Safe rewrites where the meaning is unchanged: `cpu_offload: true` -> `"offload_optimizer": {"device": "cpu"}`,
    renames of `bfloat16` and `stage3_gather_fp16_weights_on_model_save`, deletion of keys with no effect. The
    `aio.thread_count` rename is unsafe (the value starts to take effect).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/config.py
    https://github.com/deepspeedai/DeepSpeed/pull/7056
    """
    doc = _doc(ctx)
    if doc is None:
        return
    text = ctx.source.text
    edge = _past_edge(ctx)
    zero = doc.root.get("zero_optimization")
    if isinstance(zero, JValue) and isinstance(zero.value, bool):
        yield Finding(zero.span, f"boolean zero_optimization is deprecated ({'true means stage 1' if zero.value else 'false means stage 0'}): "
                                 f"write {{\"stage\": {1 if zero.value else 0}}}",
                      fix=Fix("use the object form", (jfix.set_value(zero, {"stage": 1 if zero.value else 0}),)))
    for dotted, info in ds_keys()["deprecated"].items():
        member = _lookup_member(doc, dotted)
        if member is None:
            continue
        parent_path = dotted.rpartition(".")[0]
        parent = doc.lookup(parent_path) if parent_path else doc.root
        replacement = info.get("replacement")
        repl_member = _lookup_member(doc, replacement) if replacement else None
        message, fix, severity = f"{member.key!r}: {info['message']}", None, None
        value = member.value.to_python()
        if info.get("error_if_true"):
            if value is True:
                severity = Severity.ERROR
            else:
                fix = Fix(f"delete {member.key!r}", jfix.delete_member(text, parent, member))
        elif dotted == "bfloat16" and repl_member is not None:
            message = "'bfloat16' is ignored because 'bf16' is present (legacy name, read only when bf16 is absent)"
            fix = Fix("delete the ignored 'bfloat16' section", jfix.delete_member(text, parent, member))
        elif repl_member is not None:
            if dotted == "aio.thread_count":
                message += f"; {replacement.rpartition('.')[2]!r} is already set"
                fix = Fix(f"delete the ignored {member.key!r}", jfix.delete_member(text, parent, member))
            else:
                continue  # both spellings: D014 reports the conflict
        elif info["fix"] == "rename":
            new = replacement.rpartition(".")[2]
            fix = Fix(f"rename {member.key!r} to {new!r}", (jfix.rename_key(member, new),),
                      Applicability(info["applicability"]))
        elif info["fix"] == "offload_device" and isinstance(value, bool):
            new = replacement.rpartition(".")[2]
            if value:
                content = f"{jfix.dumps(new)}: {jfix.format_value({'device': 'cpu'}, '', '', '', False)}"
                fix = Fix(f"replace with \"{new}\": {{\"device\": \"cpu\"}}",
                          (Edit(member.key_span.start, member.value.span.end, content),))
            else:
                fix = Fix(f"delete {member.key!r} (false is the default)", jfix.delete_member(text, parent, member))
        elif info["fix"] == "delete":
            fix = Fix(f"delete {member.key!r}", jfix.delete_member(text, parent, member))
        if edge is not None:  # a newer release may treat the key otherwise: no rewrite on the table's word
            from rlhf_lint.frameworks.edge import edge_note

            message += f"; {edge_note('deepspeed', *edge)}"
            fix, severity = None, None
        yield Finding(member.key_span, message, fix=fix, severity=severity)
