"""O006 mixed-flag-eras."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _invocations, _judged, _k


@rule("O006", "mixed-flag-eras", Severity.ERROR, kinds=SHELL)
def mixed_flag_eras(ctx):
    """A command mixes pre-v0.10.2 flat flags with v0.10.2+ dotted flags: no OpenRLHF release accepts both.

    ## What it does
    Counts flat flags that v0.10.2 renamed (`--zero_stage`) and dotted flags (`--ds.zero_stage`) in one command.

    ## Why it matters
    v0.10.2 replaced every flat flag with a dotted one and kept no aliases, so a half-migrated script fails
    with `unrecognized arguments` on every release. Unknown-flag (O001) reports and fixes each flag; this rule
    names the cause once.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --ds.zero_stage 3 --vllm_num_engines 4
    ```

    ## Fix
    Migrate the remaining flags (O001 fixes one-to-one renames) and pin the release you migrated to.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/commit/ed62d0e2
    """
    k = _k()
    for inv in _invocations(ctx):
        flat, dotted = [], []
        for use in inv.uses:
            if "." in use.written[2:]:
                dotted.append(use)
            elif any(r["dotted"] and r["new"] for r in k.renames_of(inv.cli, use.written)):
                flat.append(use)
        if flat and dotted:
            minority = flat if inv.tag >= k.index("v0.10.2") else dotted
            yield _judged(inv, minority[0].flag_span,
                          f"this command mixes {len(flat)} flat flag(s) of OpenRLHF <= v0.10.1.post2 (e.g. "
                          f"`{flat[0].written}`) with {len(dotted)} dotted flag(s) of v0.10.2+ (e.g. "
                          f"`{dotted[0].written}`); no release accepts both")
