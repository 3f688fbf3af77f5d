"""O002 unknown-module: the OpenRLHF entry module does not exist in the targeted release."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _invocations, _k


@rule("O002", "unknown-module", Severity.ERROR, kinds=SHELL)
def unknown_module(ctx):
    """The OpenRLHF entry module does not exist in the targeted release.

    ## What it does
    Checks `python -m openrlhf.cli.X` / `deepspeed --module openrlhf.cli.X` against the modules each release ships:
    `openrlhf.cli.train_ppo` was removed after v0.6.1.post1; KTO, KD, PRM, batch_inference and interactive_chat after
    v0.9.5; before v0.3.6 OpenRLHF ran `examples/train_*.py` scripts instead of modules.

    ## Why it matters
    Python stops with `No module named ...` on every rank after the launcher has started them all.

    ## Example
    `deepspeed --module openrlhf.cli.train_kto ...` with `openrlhf==0.10.0` pinned.

    ## Fix
    Pin a release that has the module, or move to its successor (`train_ppo_ray` for `train_ppo`).

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/pull/882
    - https://github.com/OpenRLHF/OpenRLHF/commit/6a981c8c
    - https://github.com/OpenRLHF/OpenRLHF/issues/846
    """
    for inv in _invocations(ctx, missing_module=True):
        if inv.module_ok:
            continue
        k = inv.k or _k()
        span = inv.entry_span or inv.command.span
        if inv.outside_note:  # a module of a release the tables lack
            known = f"; known in {inv.module_lifetime}" if inv.module_lifetime else ""
            yield Finding(span, f"`{inv.entry}` is not a module of OpenRLHF {inv.version}{known}, but "
                                f"{inv.outside_note}: that release may have it", severity=Severity.WARNING)
        elif not inv.module_lifetime:
            import difflib

            names = sorted({m["entry"] for m in k.modules if m["kind"] == "module"})
            close = difflib.get_close_matches(inv.entry, names, n=1, cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            yield Finding(span, f"no OpenRLHF release has a module `{inv.entry}`{hint}")
        else:
            yield Finding(span, f"`{inv.entry}` does not exist in {inv.release_phrase}; it exists in "
                                f"{inv.module_lifetime}")
