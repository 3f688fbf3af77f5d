"""Z003 orz-packing-micro-batch."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.orz._common import _configs, _fix_literal, _location, _per_scenario


@rule("Z003", "orz-packing-micro-batch", Severity.ERROR, kinds={"python"}, fixable=True)
def orz_packing_micro_batch(ctx):
    """A micro batch size (`micro_train_batch_size`, `micro_forward_batch_size`) is not 1, which ORZ's sample packing requires.

    ## What it does
    Reports either micro batch size when it evaluates to a number other than 1 (the base default is 8 for training
    and 32 for forward passes, so a config that does not override them fails too).

    ## Why it matters
    ORZ packs several samples into one sequence of `packing_max_len` tokens; its `_validate_args` asserts both micro
    batch sizes are 1 and stops the run after start-up.

    ## Example
    ```python
    micro_train_batch_size: int = 2
    ```

    ## Fix
    Set the field to 1 (unsafe fix: the packing length, not the micro batch, then sets the tokens per step).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L113
    """
    for config in _configs(ctx):
        def check(scenario):
            for name in ("micro_train_batch_size", "micro_forward_batch_size"):
                value = scenario.get(name)
                if not isinstance(value, int) or isinstance(value, bool) or value == 1:
                    continue
                r = scenario.values.get(name)
                span, related = _location(ctx, config, r)
                inherited = "" if r is None or r.path == ctx.source.path else f" ({r.origin or 'inherited'})"
                msg = f"{name} = {value}{inherited}: ORZ packs samples and requires a micro batch of 1"
                fix = _fix_literal(ctx, r, 1, f"set {name} to 1")
                yield (span, msg), (lambda s, m, f, rel: lambda sfx: Finding(s, m + sfx, fix=f, related=rel))(
                    span, msg, fix, related)
        yield from _per_scenario(config, check)
