"""Z006 orz-unreachable-flag-branch: a conditional expression's flag-dependent branch can never be taken."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.orz._common import _configs


@rule("Z006", "orz-unreachable-flag-branch", Severity.WARNING, kinds={"python"})
def orz_unreachable_flag_branch(ctx):
    """A conditional expression's flag-dependent branch can never be taken.

    ## What it does
    Finds conditional expressions (`a if test else b`) whose test is fixed by the class body (it does not depend on
    a module-level environment flag such as `DEBUG_MODE`) while the branch it excludes does depend on the flag.
    Conditionals chain to the right, so `0.75 if use_grpo else 0.7 if not DEBUG_MODE else 0.5` with
    `use_grpo = True` is 0.75 whatever DEBUG_MODE says.

    ## Why it matters
    Open-Reasoner-Zero shipped exactly this: the DEBUG_MODE value of `gpu_memory_utilization` in orz_7b_grpo.py was
    unreachable, so debug runs on 8 GPUs used 0.75 and ran out of memory (issue #6, fixed in commit 8fe8ab1).

    ## Example
    ```python
    use_grpo: bool = True
    gpu_memory_utilization: float = 0.75 if use_grpo else 0.7 if not DEBUG_MODE else 0.5
    ```

    ## Fix
    Write the flag test where it is meant to apply, e.g. `0.75 if not DEBUG_MODE else 0.5`.

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/issues/6
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/commit/8fe8ab1
    """
    from rlhf_lint.readers.python import node_span

    for config in _configs(ctx):
        for dead in config.dead_branches:
            span = node_span(ctx.source, dead.dead)
            where = f"{dead.field}: " if dead.field else ""
            flags = ", ".join(sorted(dead.flags))
            yield Finding(span, f"{where}this branch depends on {flags} but is never taken: the test "
                                f"`{dead.test_text}` is always {dead.test_value}")
