"""A001 accelerate-ds-config-file-conflict."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import _cfg


@rule("A001", "accelerate-ds-config-file-conflict", Severity.ERROR, kinds={"yaml"}, fixable=True)
def accelerate_ds_config_file_conflict(ctx):
    """A `deepspeed_config_file` is set together with fields accelerate refuses beside it.

    ## What it does
    Reports, in an accelerate config whose `deepspeed_config` names a `deepspeed_config_file`, the entries
    `gradient_accumulation_steps`, `gradient_clipping`, `zero_stage`, `offload_*_device`, `offload_*_nvme_path`,
    `zero3_save_16bit_model` and a top-level `mixed_precision`.

    ## Why it matters
    accelerate raises "When using `deepspeed_config_file`, the following accelerate config variables will be
    ignored" when the DeepSpeed plugin is built: those values belong in the ds_config file.

    ## Example
    ```yaml
    deepspeed_config:
      deepspeed_config_file: ds_z3.json
      zero_stage: 3
    distributed_type: DEEPSPEED
    ```

    ## Fix
    Delete the entry and set the value in the ds_config file (unsafe fix: check the file says what you meant).

    ## References
    https://github.com/huggingface/accelerate/blob/16cb6eb8/src/accelerate/utils/dataclasses.py#L1507
    https://github.com/huggingface/accelerate/blob/main/docs/source/usage_guides/deepspeed.md
    """
    from rlhf_lint.frameworks.accelerate import deepspeed_keys
    from rlhf_lint.fixers.yaml import delete_entry, node_span

    cfg = _cfg(ctx)
    if cfg is None or "deepspeed_config_file" not in cfg.deepspeed or not cfg.uses_deepspeed:
        return
    refused = deepspeed_keys()["ignored_with_config_file"]
    entries = [cfg.deepspeed[k] for k in cfg.deepspeed if k in refused]
    if "mixed_precision" in cfg.top:
        entries.append(cfg.top["mixed_precision"])
    for entry in sorted(entries, key=lambda e: e.key_node.start_mark.index):
        edit = delete_entry(ctx.source.text, entry.key_node, entry.value_node)
        fix = Fix(f"delete {entry.key}", (edit,), Applicability.UNSAFE) if edit is not None else None
        yield Finding(node_span(entry.key_node), f"{entry.key} cannot be set beside deepspeed_config_file: accelerate "
                                                 "refuses it; set it in the ds_config file", fix=fix)
