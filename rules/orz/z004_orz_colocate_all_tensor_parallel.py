"""Z004 orz-colocate-all-tensor-parallel."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.orz._common import _configs, _location, _per_scenario


@rule("Z004", "orz-colocate-all-tensor-parallel", Severity.ERROR, kinds={"python"})
def orz_colocate_all_tensor_parallel(ctx):
    """Everything is colocated (`colocate_all = True`) with `vllm_tensor_parallel_size > 1`, which ORZ's vLLM engines refuse.

    ## What it does
    Reports a config that colocates everything (vLLM engines share GPUs with the training models) while each engine
    spans several GPUs.

    ## Why it matters
    ORZ's `create_vllm_engines` asserts "colocate_with_actor is not supported when tensor_parallel_size > 1"; a
    colocated engine gets a fraction of one GPU in the placement group and cannot span several.

    ## Example
    ```python
    colocate_all: bool = True
    vllm_tensor_parallel_size: int = 4
    ```

    ## Fix
    Use `vllm_tensor_parallel_size = 1` with `colocate_all`, or `colocate_all = False` with separate vLLM GPUs (as
    ORZ's 32B config does).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py
    """
    for config in _configs(ctx):
        def check(scenario):
            tp = scenario.get("vllm_tensor_parallel_size")
            if scenario.get("colocate_all") is True and isinstance(tp, int) and tp > 1:
                r = scenario.values.get("vllm_tensor_parallel_size")
                span, related = _location(ctx, config, r)
                msg = (f"colocate_all = True with vllm_tensor_parallel_size = {tp}: ORZ supports colocated vLLM "
                       "engines only with tensor parallel size 1")
                yield (span, msg), lambda sfx: Finding(span, msg + sfx, related=related)
        yield from _per_scenario(config, check)
