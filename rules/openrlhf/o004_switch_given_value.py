"""O004 switch-given-value."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Fix, Severity, Span
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _invocations, _judged, _literal_at


@rule("O004", "switch-given-value", Severity.ERROR, kinds=SHELL, fixable=True)
def switch_given_value(ctx):
    """A value after an on/off switch (`--ds.packing_samples true`): argparse rejects the stray word.

    ## What it does
    OpenRLHF's booleans are `store_true` switches that take no value. A word after one (`true`, `1`,
    `False`) is a stray positional argument and argparse exits with `unrecognized arguments`; `--flag=true`
    exits with `ignored explicit argument`.

    ## Why it matters
    The launch fails; and `--flag false` would not have meant off even if it were accepted.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --ds.packing_samples true ...
    ```

    ## Fix
    A `true`/`1`/`yes` value is removed (safe: the switch alone means on). For `false`/`0`/`no`, an unsafe fix
    removes the switch with its value (off is the default).

    ## References
    - https://docs.python.org/3/library/argparse.html#action
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py
    """
    for inv in _invocations(ctx):
        for use in inv.uses:
            if use.spec is None or not use.spec.is_switch:
                continue
            word = use.values[0] if use.explicit and use.values else (use.extra[0] if use.extra else None)
            if word is None or not (word.known or use.explicit):
                continue  # an unread word after a switch ("$@") may be more flags, not a value
            text = word.text if word.known else "<unknown>"
            fix = None
            if word.known and text.lower() in ("true", "1", "yes", "on"):
                start = use.flag_span.end
                between = ctx.source.text[start : word.span.start] if ctx.source is not None else ""
                if between in ("=", " ", "\t") or (between and between.strip(" \t") == ""):
                    fix = Fix(f"remove the value `{text}` of the switch {use.spec.flag}",
                              (Edit.delete(Span(start, word.span.end)),), Applicability.SAFE)
            meaning = "off" if word.known and text.lower() in ("false", "0", "no", "off") else "on"
            if meaning == "off" and not use.explicit and use.spec.action == "store_true" \
                    and use.spec.default is False and _literal_at(ctx.source, use.flag_span, use.written) \
                    and all(w.path == inv.path for w in use.arg.values):
                from rlhf_lint.fixers.shell import remove_flag

                edits = remove_flag(ctx.source.text, inv.command, use.arg)
                if edits:
                    fix = Fix(f"remove the switch {use.spec.flag} (off is its default)", edits, Applicability.UNSAFE)
            message = f"{use.spec.flag} is a switch and takes no value; argparse exits on `{text}`"
            tail = "; to turn it off, leave the switch out" if meaning == "off" else ""
            yield _judged(inv, word.span, message, fix=fix, tail=tail)
