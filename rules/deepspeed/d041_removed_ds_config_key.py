"""D041 removed-ds-config-key: a ds_config key whose feature a DeepSpeed release removed and now refuses."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import ds_keys, ds_version_origin, version_tuple
from rlhf_lint.fixers import json as jfix
from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.frameworks.edge import edge_note
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _lookup_member, _past_edge


@rule("D041", "removed-ds-config-key", Severity.ERROR, kinds=KINDS, fixable=True)
def removed_ds_config_key(ctx):
    """A ds_config key whose feature a DeepSpeed release removed: the release refuses the config at start-up.

    ## What it does
    Reports the keys DeepSpeed lists as removed features (`nebula`, `compression_training`, `quantize_training`,
    `sparse_attention`, `zero_optimization.mics_shard_size` since 0.19.7; `amp`, `elasticity`,
    `curriculum_learning`, `progressive_layer_drop`, `eigenvalue`, `sparse_gradients`, `graph_harvesting`,
    `zero_optimization.zeropp_loco_param` since 0.19.8; the list is `removed` in schemas/ds_config_keys.json, read
    off each release's `runtime/config.py`). An error when the DeepSpeed version is configured or pinned at or
    after the removal; a warning when it is unknown (the newest release the tables cover is assumed).

    ## Why it matters
    `_reject_removed_config_keys` raises DeepSpeedConfigError for the key's mere presence, even in a block that
    says `"enabled": false`: a config that started on 0.19.6 fails on 0.19.8 before any training.

    ## Example
    ```json
    {"train_batch_size": 8, "amp": {"enabled": false}}
    ```

    ## Fix
    Delete the key (unsafe: on an older DeepSpeed the block may have been in use; move to what DeepSpeed's message
    names, e.g. `bf16` for `amp`).

    ## References
    https://github.com/deepspeedai/DeepSpeed/issues/8489
    https://github.com/deepspeedai/DeepSpeed/blob/v0.19.8/deepspeed/runtime/config.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    removed = ds_keys().get("removed") or {}
    if not removed:
        return
    version, origin = ds_version_origin(ctx)
    edge = _past_edge(ctx)
    text = ctx.source.text
    for dotted, info in removed.items():
        member = _lookup_member(doc, dotted)
        if member is None:
            continue
        if version_tuple(version) < version_tuple(info["since"]):
            continue  # the targeted release still accepts it
        parent_path = dotted.rpartition(".")[0]
        parent = doc.lookup(parent_path) if parent_path else doc.root
        message = (f"{member.key!r} was removed in DeepSpeed {info['since']}: {info['raises']} at start-up, even "
                   f"in a disabled block")
        if origin == "assumed":
            message += f" (the DeepSpeed version is unknown: {version} assumed; set deepspeed-version or pin it)"
            severity = Severity.WARNING
        else:
            message += f" (DeepSpeed {version}{'' if origin == 'configured' else ', ' + origin})"
            severity = None
        note = info["message"].split(". See ")[0].strip()
        if note:
            message += f". DeepSpeed says: {note}"
        fix = Fix(f"delete {member.key!r}", jfix.delete_member(text, parent, member), Applicability.UNSAFE)
        if edge is not None:  # a release newer than the table may have brought the key back: say so, delete nothing
            message += f"; but {edge_note('deepspeed', *edge)}: that release may differ"
            fix, severity = None, Severity.WARNING
        yield Finding(member.key_span, message, fix=fix, severity=severity)
