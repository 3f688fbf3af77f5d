"""F010 internal-error."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule


@rule("F010", "internal-error", Severity.ERROR, scope="project")
def internal_error(ctx):
    """The linter itself failed on a file: a bug in a parser, job builder, rule or fixer, not in your file.

    ## What it does
    When one of rlhf-lint's own parsers, job builders, rules or fixers raises an exception on a file, the run goes
    on with every other rule and file, and this diagnostic names the file, the part that failed and the exception.
    Findings of the failed part for that file are missing.

    ## Why it matters
    One bug must not hide every other finding of a run, and must not pass silently either: the exit code is 2
    and the report says which checks are incomplete.

    ## Example
    `F010 internal error in rule D102 unknown-ds-config-key: KeyError: 'zero_optimization' (checks of this rule
    on this file are incomplete; run with --debug for the traceback and please report it)`

    ## Fix
    Run `rlhf-lint --debug PATH` to see the traceback and report it with the file that triggers it. Until fixed,
    `--ignore` the failing rule, or exclude the file.
    """
    # reported by the engine, which is where the exceptions are caught
    return iter(())
