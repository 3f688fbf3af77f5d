"""D040 ds-default-changed."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import precision_section, ds_version_origin
from rlhf_lint.fixers import json as jfix
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _device, _doc, _enabled, checks


def _default_applies(doc, when: str, ctx) -> bool:
    if when == "always":
        return True
    if when == "bf16":
        return _enabled(doc, precision_section(doc), ctx)[0] is True
    if when in ("offload_optimizer", "offload_param"):
        return _device(doc, when.split("_")[1])[0] in ("cpu", "nvme")
    return False


@rule("D040", "ds-default-changed", Severity.INFO, kinds=KINDS, default_enabled=False)
def ds_default_changed(ctx):
    """The config relies on a DeepSpeed default that changed between releases, and the DeepSpeed version is unknown.

    ## What it does
    Off by default (enable with `--extend-select D040`). When no DeepSpeed version is configured
    (`deepspeed-version`) and the repository pins none exactly, reports each absent key whose default changed:
    `gradient_clipping` (0.0 -> 1.0 in 0.19.3), `bf16.check_grad_overflow` with bf16 (false -> true in 0.19.3),
    `offload_optimizer.pin_memory` / `offload_param.pin_memory` with cpu/nvme offload (false -> true in 0.19.5).
    With a known version the default is known, so nothing is reported.

    ## Why it matters
    The same file trains differently on two installs: clipping at 1.0 appears, overflow checks cost a sync, pinned
    offload buffers need host RAM and a high `ulimit -l` (OOM after upgrading is the documented symptom).

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Fix
    Write the value you want explicitly, or pin DeepSpeed.

    ## References
    https://github.com/deepspeedai/DeepSpeed/pull/8068
    https://github.com/deepspeedai/DeepSpeed/pull/8035
    https://github.com/deepspeedai/DeepSpeed/pull/8207
    """
    doc = _doc(ctx)
    if doc is None:
        return
    version, origin = ds_version_origin(ctx)
    if origin != "assumed":
        return
    for row in checks()["changed_defaults"]:
        key = row["key"]
        parent = key.rpartition(".")[0]
        if not _default_applies(doc, row["when"], ctx) or doc.lookup(key) is not None:
            continue
        if parent == "bf16" and precision_section(doc) == "bfloat16":
            parent = "bfloat16"
        anchor = doc.lookup(parent) if parent else None
        span = anchor.span if anchor is not None else None
        yield Finding(span, f"{key} is not set: its default changed from {jfix.dumps(row['old'])} to "
                            f"{jfix.dumps(row['new'])} in DeepSpeed {row['since']}, and the DeepSpeed version is "
                            f"unknown ({version} assumed): set it explicitly")
