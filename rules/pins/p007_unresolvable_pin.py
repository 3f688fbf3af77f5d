"""P007 unresolvable-pin: a requirement installs from a git URL, a local path or a URL archive: its release is unknown."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule


@rule("P007", "unresolvable-pin", Severity.INFO, scope="project", when="pin files")
def unresolvable_pin(ctx):
    """A requirement installs from a git URL, a local path or a URL archive: its release is unknown.

    ## What it does
    Reports each requirement whose version cannot be read from what is written: a git URL (at a commit, a tag or a
    branch), a local path (`-e .`, `./third_party/verl`), a URL archive without a version in its name. The message
    says why, and what the checks of that package fall back to.

    ## Why it matters
    rlhf-lint reads versions from pins (configuration > pin > inference). A pin it cannot resolve is not silently
    skipped: the checks of that package fall back to the `<package>-version` setting, or to inference, and the user
    should know which.

    ## Example
    ```
    verl @ git+https://github.com/volcengine/verl@3f2a1b9c
    -e .
    ```

    ## Fix
    Set the release in `[tool.rlhf-lint]` (`verl-version = "0.4.1"`), or for a fork point rlhf-lint at its checkout
    (`verl-source = "third_party/verl"`).

    ## References
    https://pip.pypa.io/en/stable/topics/vcs-support/
    https://peps.python.org/pep-0440/#direct-references
    """
    from rlhf_lint.frameworks.edge import LABELS, target_version, unresolvable_pins

    project = ctx.project
    for item in unresolvable_pins(project):
        fallback = ""
        if item.name in LABELS:  # a package with a <name>-version setting
            known = target_version(project, item.name)
            if known is not None:
                fallback = f"; checks of {item.name} use {known.version} ({known.origin})"
            else:
                fallback = f"; checks of {item.name} do not know its release (set {item.name}-version to say it)"
        yield Finding(item.span, f"`{item.text}` is {item.why}{fallback}", path=item.path)
