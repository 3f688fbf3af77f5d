"""Z001 orz-zero3-without-vllm: zeRO-3 is set while no vLLM engine is configured, which ORZ refuses at start-up."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.orz._common import _configs, _location, _per_scenario


@rule("Z001", "orz-zero3-without-vllm", Severity.ERROR, kinds={"python"})
def orz_zero3_without_vllm(ctx):
    """ZeRO-3 is set while no vLLM engine is configured, which ORZ refuses at start-up.

    ## What it does
    Evaluates `zero_stage` and `vllm_num_engines` of each ORZ config class (override or inherited default) and
    reports `zero_stage = 3` with `vllm_num_engines <= 0`.

    ## Why it matters
    ORZ's `_validate_args` asserts "ZeRO-3 is only supported when vLLM enabled"; the assertion fires after the Ray
    cluster is up, so the whole start-up is wasted.

    ## Example
    ```python
    @dataclass
    class PPOExpConfig(BasePPOExpConfig):
        zero_stage: int = 3
        vllm_num_engines: int = 0
    ```

    ## Fix
    Give the experiment vLLM engines (`vllm_num_engines >= 1`) or use ZeRO stage 2.

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L104
    """
    for config in _configs(ctx):
        def check(scenario):
            stage, engines = scenario.get("zero_stage"), scenario.get("vllm_num_engines")
            if stage == 3 and isinstance(engines, int) and engines <= 0:
                r = scenario.values.get("vllm_num_engines")
                span, related = _location(ctx, config, r)
                msg = f"zero_stage = 3 with vllm_num_engines = {engines}: ORZ supports ZeRO-3 only with vLLM engines"
                yield (span, msg), lambda sfx: Finding(span, msg + sfx, related=related)
        yield from _per_scenario(config, check)
