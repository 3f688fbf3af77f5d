"""F002 file-too-large: a file is larger than rlhf-lint reads (10 MiB) and was skipped."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule


@rule("F002", "file-too-large", Severity.WARNING, scope="project", when="unreadable files")
def file_too_large(ctx):
    """A file is larger than rlhf-lint reads (10 MiB) and was skipped.

    ## What it does
    Reports files over the size limit instead of reading them. Real launch scripts and configs are kilobytes.

    ## Why it matters
    Bounding input keeps pre-commit fast and memory flat; the message says the file was not checked.

    ## Example
    A 50 MB JSON dump named `ds_config_dump.json` is skipped with this warning.

    ## Fix
    Exclude generated data from linting.
    """
    for item in getattr(ctx.project, "unreadable", []):
        if item.code == "F002":
            yield Finding(None, item.message, path=item.path)
