"""D017 nvme-offload-without-path: an offload device of nvme with no `nvme_path`."""
from __future__ import annotations

from rlhf_lint.readers.json import JValue
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _device, _doc


@rule("D017", "nvme-offload-without-path", Severity.ERROR, kinds=KINDS)
def nvme_offload_without_path(ctx):
    """An offload device of nvme with no `nvme_path`.

    ## What it does
    Reports `offload_param` / `offload_optimizer` with `"device": "nvme"` whose `nvme_path` is missing or null.

    ## Why it matters
    DeepSpeed fails when it sets up the swapper: `"nvme_path" in DeepSpeed Config cannot be None if remote device
    is nvme`.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}
    ```

    ## Fix
    Add `"nvme_path": "/local_nvme"` pointing at a fast local disk.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/partition_parameters.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    for what in ("param", "optimizer"):
        device, node = _device(doc, what)
        if device != "nvme":
            continue
        path = doc.lookup(f"zero_optimization.offload_{what}.nvme_path")
        if path is None or (isinstance(path, JValue) and path.value in (None, "")):
            yield Finding(node.span, f"offload_{what} uses nvme but sets no nvme_path: DeepSpeed raises "
                                     "'nvme_path ... cannot be None if remote device is nvme'")
