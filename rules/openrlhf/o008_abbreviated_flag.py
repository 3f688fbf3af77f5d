"""O008 abbreviated-flag: a flag written as an abbreviation that argparse expands today but may not tomorrow."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _invocations, _judged, _literal_at


@rule("O008", "abbreviated-flag", Severity.WARNING, kinds=SHELL, fixable=True)
def abbreviated_flag(ctx):
    """A flag written as an abbreviation that argparse expands today but may not tomorrow.

    ## What it does
    Reports flags that match a longer flag only by prefix (argparse `allow_abbrev`), with a safe fix that writes
    the flag in full.

    ## Why it matters
    The next release that adds a flag with the same prefix turns the abbreviation into an `ambiguous option`
    error; a full flag also greps and reads better.

    ## Example
    `--vllm.gpu_mem 0.5` is `--vllm.gpu_memory_utilization 0.5`.

    ## Fix
    Replaced with the full flag (safe).

    ## References
    - https://docs.python.org/3/library/argparse.html#allow-abbrev
    """
    for inv in _invocations(ctx):
        for use in inv.uses:
            if use.match != "prefix":
                continue
            full = use.spec.flag
            fix = None
            if _literal_at(ctx.source, use.flag_span, use.written):
                fix = Fix(f"write `{full}` in full", (Edit.replace(use.flag_span, full),), Applicability.SAFE)
            # outside the table, no fix: a newer release may define the word as a flag of its own
            yield _judged(inv, use.flag_span, f"`{use.written}` is an abbreviation of `{full}`", fix=fix)
