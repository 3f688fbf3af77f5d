"""F004 input-over-bounds: part of a file was not read because it is over one of the reader's bounds."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule


@rule("F004", "input-over-bounds", Severity.WARNING, when="over bounds",
      kinds={"json", "ds_config", "shell", "python", "yaml", "requirements", "pyproject_toml", "setup_cfg", "dockerfile",
             "unparsed"})
def input_over_bounds(ctx):
    """Part of a file was not read because it is over one of the reader's bounds, so its checks are incomplete.

    ## What it does
    Reports what a reader skipped and which bound it met: YAML whose aliases and merge keys (`<<`) expand past
    200,000 nodes, a shell value that expands past its size limit, a pin file with more pins than are compared.
    The bounds keep a run on a stranger's pull request to seconds and megabytes whatever the file holds.

    ## Why it matters
    A 1 KB YAML file whose merge keys double over 25 levels expands to 2^25 entries: reading it took 51 s and
    800 MB. The file's other checks are incomplete, and this warning says so instead of staying silent.

    ## Example
    ```yaml
    a1: &a1 {<<: [*a0, *a0], k1: 1}
    a2: &a2 {<<: [*a1, *a1], k2: 1}
    # ... 25 levels
    ```

    ## Fix
    Write the configuration out, or exclude generated files from linting.
    """
    for span, message in ctx.source.skipped:
        yield Finding(span, message)
