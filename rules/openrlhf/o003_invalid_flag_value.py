"""O003 invalid-flag-value."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _invocations, _judged


@rule("O003", "invalid-flag-value", Severity.ERROR, kinds=SHELL)
def invalid_flag_value(ctx):
    """A flag value that argparse of the targeted release rejects: not an int, not a float, or not a valid choice.

    ## What it does
    Applies each flag's `type` (int, float) and `choices` the way argparse does, on values the linter can
    resolve (a literal, or a shell variable with a known value).

    ## Why it matters
    `--ds.param_dtype fp32` or `--zero_stage two` stop the launch with `invalid choice` / `invalid int value`.
    Inside a `read -r -d '' cmd <<EOF` heredoc, quotes are not removed, so `--param_dtype "bf16"` passes the
    six characters `"bf16"` and is rejected as well.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --ds.param_dtype fp32 ...
    ```

    ## Fix
    Use one of the listed choices or a number; remove quotes inside heredoc command bodies.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py
    - https://docs.python.org/3/library/argparse.html#choices
    """
    from rlhf_lint.frameworks.openrlhf import convert

    for inv in _invocations(ctx):
        for use in inv.uses:
            if use.spec is None or use.spec.is_switch:
                continue
            for word in use.values:
                if not word.known:
                    continue
                _, error = convert(use.spec, word.text)
                if error is None:
                    continue
                note = ""
                if getattr(word, "literal_quotes", False) and any(q in word.text for q in "\"'"):
                    note = " (the quotes are part of the value: bash does not remove quotes from an expanded variable)"
                yield _judged(inv, word.span, f"{use.spec.flag}: {error}{note}")
