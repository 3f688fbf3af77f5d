"""P003 unpinned-critical."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.pins._common import _where


@rule("P003", "unpinned-critical", Severity.INFO, scope="project", when="pins")
def unpinned_critical(ctx):
    """A critical package (torch, vllm, deepspeed, transformers) is listed without any version in a training repository.

    ## What it does
    Reports a requirement of one of these packages with no version specifier, when nothing else in the same
    install constrains it (a constraints file, or a pinned framework that requires an exact version), in a
    repository that trains: it has a ds_config or a launch, or the same install names a training framework.

    ## Why it matters
    These four decide memory use, numerics and which other pins can be installed; an unpinned one moves under the
    job whenever the image is rebuilt, and the known-bad checks cannot see it.

    ## Example
    ```
    deepspeed
    transformers==4.46.3
    ```

    ## Fix
    Pin the version the job was tested with (`deepspeed==0.15.0`). The message names a version pinned elsewhere in
    the repository when there is one.

    ## References
    https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/requirements.txt
    """
    from rlhf_lint.frameworks.versions import CRITICAL_PACKAGES, constraints, install_sets, is_training_repository, pinned_version

    project = ctx.project
    for s in install_sets(project):
        cons = constraints(s)
        if not is_training_repository(project, cons):
            continue
        for pin in s.pins:
            if pin.name not in CRITICAL_PACKAGES or not s.declares(pin) or pin.specifier or pin.url or pin.constraint:
                continue
            if any(str(c.specifier) for c in cons.get(pin.name, [])):
                continue
            hint = ""
            elsewhere = pinned_version(project, pin.name)
            if elsewhere is not None:
                version, setting = elsewhere
                hint = f"; the repository pins {version} in {_where(project, setting.path, setting.span)}"
            yield Finding(pin.span, f"{pin.name} is not pinned: every install may resolve a different release{hint}",
                          path=pin.path)
