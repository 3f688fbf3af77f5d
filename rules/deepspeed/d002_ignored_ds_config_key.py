"""D002 ignored-ds-config-key."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _unknown_keys


@rule("D002", "ignored-ds-config-key", Severity.WARNING, kinds=KINDS, fixable=True)
def ignored_ds_config_key(ctx):
    """A key DeepSpeed does not know, in a section it reads with `dict.get`: silently ignored.

    ## What it does
    Checks keys at the top level and in the sections DeepSpeed reads without validation (`optimizer`, `scheduler`,
    `data_types`, `aio`, `activation_checkpointing`, `flops_profiler`, `checkpoint`, ...) against DeepSpeed's key
    table. Free-form blocks (`optimizer.params`, `scheduler.params`, `pipeline`, `amp`, ...) are not checked, and
    neither are comment keys (`"_comment"`, `"//"`, `"description"`), the usual way to annotate a JSON file.

    ## Why it matters
    A typo such as `gradient_acumulation_steps` is never reported by DeepSpeed: the job runs with the default and
    the setting you wrote has no effect.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 4, "gradient_clipp1ng": 1.0}
    ```

    ## Fix
    When one valid key is close, the fix renames it. It is marked unsafe: the value starts to take effect.

    ## References
    https://github.com/deepspeedai/DeepSpeed/issues/653
    https://github.com/deepspeedai/DeepSpeed/issues/774
    https://github.com/deepspeedai/DeepSpeed/issues/1809
    """
    yield from _unknown_keys(ctx, strict=False)
