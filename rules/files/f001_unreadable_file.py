"""F001 unreadable-file: a file could not be read or decoded, so nothing in it was checked."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule


@rule("F001", "unreadable-file", Severity.ERROR, scope="project", when="unreadable files")
def unreadable_file(ctx):
    """A file could not be read or decoded, so nothing in it was checked.

    ## What it does
    Reports files named on the command line or found in a folder that could not be opened, are not UTF-8 text
    (a UTF-16 or UTF-32 file is named as such: bash and Python do not run it either), contain NUL bytes (binary),
    or are of a type rlhf-lint does not know when named explicitly; a symlink to a file outside the paths being
    checked (not read, so that a link committed to a repository cannot put another file's content in a report);
    a folder that cannot be listed or is nested too deep to walk.

    ## Why it matters
    A launch script that silently went unchecked is worse than one that failed loudly: the job still runs.

    ## Example
    `rlhf-lint model.safetensors` reports `F001 cannot check: binary file (contains NUL bytes)`.

    ## Fix
    Point rlhf-lint at text files, or exclude the path (`--exclude`, `exclude = [...]` in configuration).
    """
    for item in getattr(ctx.project, "unreadable", []):
        if item.code == "F001":
            yield Finding(None, item.message, path=item.path, position=item.position)
