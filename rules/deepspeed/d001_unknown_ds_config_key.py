"""D001 unknown-ds-config-key: a key DeepSpeed does not know, in a section it validates: the job fails at start-up."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _unknown_keys


@rule("D001", "unknown-ds-config-key", Severity.ERROR, kinds=KINDS, fixable=True)
def unknown_ds_config_key(ctx):
    """A key DeepSpeed does not know, in a section it validates: the job fails at start-up.

    ## What it does
    Checks every key of the sections DeepSpeed parses with pydantic models that forbid extra fields
    (`zero_optimization` and its offload blocks, `fp16`/`bf16` since DeepSpeed 0.17.1, `tensorboard`, `wandb`,
    `compile`, `hybrid_engine`, `tensor_parallel`, ...) against the key table of DeepSpeed 0.19.6. Aliases
    (`stage3_prefetch_bucket_size` / `prefetch_bucket_size`) count as known. Keys DeepSpeed's own docs list but its
    code rejects (`grad_hooks`, `bf16.check_overflow`) are named as such. The `compile` section follows the
    DeepSpeed release: `enabled`/`backend`/`kwargs` in 0.13.2 to 0.14.3, not read in 0.14.4 to 0.16.5, DeepCompile
    keys since 0.16.6; with the release unknown, a key only an older release accepted is a warning.

    ## Why it matters
    `deepspeed.initialize()` raises `ValidationError ... Extra inputs are not permitted` after the model has been
    loaded, often minutes into a multi-node launch.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "overlap_com": true}}
    ```

    ## Fix
    When exactly one valid key is close to the typo, the fix renames it (safe: the file cannot run as it is).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config_utils.py
    https://github.com/deepspeedai/DeepSpeed/issues/1302
    https://github.com/deepspeedai/DeepSpeed/pull/6976
    """
    yield from _unknown_keys(ctx, strict=True)
