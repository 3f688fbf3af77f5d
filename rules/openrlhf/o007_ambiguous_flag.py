"""O007 ambiguous-flag: an abbreviated flag that matches several flags of the targeted release: argparse exits."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _invocations


@rule("O007", "ambiguous-flag", Severity.ERROR, kinds=SHELL)
def ambiguous_flag(ctx):
    """An abbreviated flag that matches several flags of the targeted release: argparse exits.

    ## What it does
    argparse accepts a unique prefix of a flag (`--vllm.gpu_mem`), and exits with `ambiguous option` when the
    prefix matches more than one flag.

    ## Why it matters
    The launch fails; an abbreviation that was unique can become ambiguous when a release adds flags.

    ## Example
    `--actor.eps` matches `--actor.eps_clip` and `--actor.eps_clip_low_high` in v0.11.0.

    ## Fix
    Write the flag in full.

    ## References
    - https://docs.python.org/3/library/argparse.html#allow-abbrev
    """
    for inv in _invocations(ctx):
        for use in inv.uses:
            if use.match == "ambiguous":
                shown = ", ".join(use.candidates[:6]) + (" ..." if len(use.candidates) > 6 else "")
                outside = inv.outside_note
                if outside:  # a newer release may define the word as a flag of its own
                    yield Finding(use.flag_span, f"`{use.written}` is ambiguous in the flag table of OpenRLHF "
                                                 f"{inv.version} (it could be {shown}), but {outside}: that release "
                                                 f"may differ", severity=Severity.WARNING)
                    continue
                yield Finding(use.flag_span, f"`{use.written}` is ambiguous in {inv.release_phrase}: it could be "
                                             f"{shown}")
