"""P005 installed-version-mismatch: the installed version of a package differs from the repository's exact pin."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule


@rule("P005", "installed-version-mismatch", Severity.WARNING, scope="project")
def installed_version_mismatch(ctx):
    """The installed version of a package differs from the repository's exact pin.

    ## What it does
    Reported by `rlhf-lint env --against PATH` only: for every watched package (torch, vLLM, DeepSpeed,
    transformers, flash-attn, OpenRLHF, verl, TRL, ...) it compares the version importlib.metadata reports with the
    version the repository pins (directly, or through a pinned framework release). Linting files alone never
    reports it, because the files say nothing about the machine.

    ## Why it matters
    A job launched from a stale environment runs other code than the one reviewed: the known-bad and conflict
    checks on the repository's pins then describe a different stack.

    ## Example
    requirements.txt pins `deepspeed==0.15.0`; the environment has 0.16.3 installed.

    ## Fix
    Reinstall from the repository's pins (`pip install -r requirements.txt`), or update the pin to what was tested.

    ## References
    https://github.com/OpenRLHF/OpenRLHF/issues/821
    """
    return iter(())
