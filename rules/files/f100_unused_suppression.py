"""F100 unused-suppression: an inline `# rlhf-lint: ignore[...]` comment suppresses nothing."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule


@rule("F100", "unused-suppression", Severity.WARNING, scope="project")
def unused_suppression(ctx):
    """An inline `# rlhf-lint: ignore[...]` comment suppresses nothing.

    ## What it does
    Reports suppression comments whose rules reported nothing on that line (or in that file for `ignore-file`),
    and suppressions that name codes that do not exist.

    ## Why it matters
    Stale suppressions hide the next real finding on that line and make reviewers trust a line they should not.

    ## Example
    ```bash
    deepspeed train.py --zero_stage 3  # rlhf-lint: ignore[D101]
    ```

    ## Fix
    Delete the comment, or correct the code it names.
    """
    # decided by the engine after all other rules ran (it needs to know what was suppressed)
    return iter(())
