"""Z002 orz-packing-max-len-too-small."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.orz._common import _configs, _fix_literal, _location, _per_scenario


@rule("Z002", "orz-packing-max-len-too-small", Severity.ERROR, kinds={"python"}, fixable=True)
def orz_packing_max_len_too_small(ctx):
    """The packing length `packing_max_len` is smaller than `prompt_max_len + generate_max_len`.

    ## What it does
    Evaluates the three fields (references such as `generate_max_len + prompt_max_len` included) and reports a
    packing budget that cannot hold one prompt with its longest generation.

    ## Why it matters
    ORZ always packs samples and asserts `packing_max_len >= prompt_max_len + generate_max_len` before training.

    ## Example
    ```python
    prompt_max_len: int = 2048
    generate_max_len: int = 8000
    packing_max_len: int = 8192
    ```

    ## Fix
    Set `packing_max_len` to the sum (unsafe fix: a larger packing length needs more activation memory).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L110
    """
    for config in _configs(ctx):
        def check(scenario):
            packing = scenario.get("packing_max_len")
            prompt, generate = scenario.get("prompt_max_len"), scenario.get("generate_max_len")
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (packing, prompt, generate)):
                return
            if packing >= prompt + generate:
                return
            r = scenario.values.get("packing_max_len")
            span, related = _location(ctx, config, r)
            need = prompt + generate
            msg = (f"packing_max_len = {packing} is smaller than prompt_max_len + generate_max_len = "
                   f"{prompt} + {generate} = {need}: ORZ asserts it is at least that")
            fix = _fix_literal(ctx, r, need, f"set packing_max_len to {need}")
            yield (span, msg), lambda sfx: Finding(span, msg + sfx, fix=fix, related=related)
        yield from _per_scenario(config, check)
