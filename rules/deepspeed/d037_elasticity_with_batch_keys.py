"""D037 elasticity-with-batch-keys: elastic training enabled while the config also sets batch sizes."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import KINDS, _doc, _is_true


@rule("D037", "elasticity-with-batch-keys", Severity.ERROR, kinds=KINDS)
def elasticity_with_batch_keys(ctx):
    """Elastic training enabled while the config also sets batch sizes.

    ## What it does
    Reports each of `train_batch_size`, `train_micro_batch_size_per_gpu`, `gradient_accumulation_steps` when
    `elasticity.enabled` is true and `elasticity.ignore_non_elastic_batch_info` is not true.

    ## Why it matters
    DeepSpeed raises `ElasticityConfigError: One or more batch related parameters were found in your ds_config ...
    These parameters *will not be used* since elastic training is enabled` while it builds the config.

    ## Example
    ```json
    {"train_batch_size": 64, "elasticity": {"enabled": true, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4]}}
    ```

    ## Fix
    Remove the batch keys (elasticity chooses them), or set `"ignore_non_elastic_batch_info": true`.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py#L755-L768
    https://www.deepspeed.ai/docs/config-json/#elastic-training-config-v01-and-v02
    """
    doc = _doc(ctx)
    if doc is None or not _is_true(doc, "elasticity.enabled") or _is_true(doc, "elasticity.ignore_non_elastic_batch_info"):
        return
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        member = doc.root.member(key)
        if member is not None:
            yield Finding(member.key_span, f"{key} is set while elasticity is enabled: DeepSpeed raises "
                                           "ElasticityConfigError (set ignore_non_elastic_batch_info to keep it)")
