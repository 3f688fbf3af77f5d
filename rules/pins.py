"""P: requirements pins and version compatibility (facts in schemas/pins/, readers in rlhf_lint.readers.pins)."""
from __future__ import annotations

import os

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Related, Severity
from rlhf_lint.engine.project import declares_pins
from rlhf_lint.engine.registry import rule


def _where(project, path: str, span) -> str:
    source = project.sources.get(path)
    shown = os.path.relpath(path, project.config.root) if os.path.isabs(path) else path
    if source is None or span is None:
        return shown
    return f"{shown}:{source.position(span.start).line}"


@rule("P001", "conflicting-pins", Severity.ERROR, scope="project", fixable=True)
def conflicting_pins(ctx):
    """Pinned versions that cannot be installed together.

    ## What it does
    Gathers the pins installed together (one requirements file with its `-r`/`-c` includes, one pyproject extra,
    one Dockerfile stage, one `pip install` command) and adds what each pinned framework release itself requires
    (vLLM's exact torch, torchvision and transformers range; OpenRLHF's, verl's and TRL's pins). A package whose
    constraints admit no common version is reported on the pin as written, with the other end as related.
    A framework release whose own pins contradict each other (`openrlhf[vllm]==0.9.5`: transformers 5.3.0 and a
    vLLM that needs transformers<5) is reported as uninstallable.

    ## Why it matters
    pip either refuses the whole install (`ResolutionImpossible`) or, across separate commands, silently replaces
    the earlier pin, so the versions that run are not the ones written down.

    ## Example
    ```
    vllm==0.7.2
    torch==2.6.0   # vllm 0.7.2 requires torch==2.5.1
    ```

    ## Fix
    When the other side needs one exact version, the pin is rewritten to it (unsafe: it changes the environment).
    Otherwise choose versions that agree; the message names the requirement that disagrees.

    ## References
    https://pypi.org/project/vllm/0.7.2/
    https://github.com/OpenRLHF/OpenRLHF/blob/v0.9.5/requirements.txt
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/main/docker/Dockerfile
    """
    if not declares_pins(ctx.project):
        return
    from rlhf_lint.frameworks.versions import conflicts

    project = ctx.project
    for conflict in conflicts(project):
        a, b = conflict.first, conflict.second
        name = conflict.package
        if a.direct and b.direct:
            yield Finding(b.root.span, f"{b.text} conflicts with {a.text} ({_where(project, a.root.path, a.root.span)}):"
                                       f" no version of {name} satisfies both",
                          related=(Related(a.root.path, a.root.span, f"{a.text} pinned here"),), path=b.root.path)
            continue
        if a.direct or b.direct:
            direct, implied = (a, b) if a.direct else (b, a)
            fix = None
            if implied.exact and direct.root.version_span is not None and direct.root.exact:
                fix = Fix(f"pin {name} to {implied.exact}, the version {implied.root.name} requires",
                          (Edit.replace(direct.root.version_span, implied.exact),), Applicability.UNSAFE)
            related = ()
            if implied.root is not direct.root:
                related = (Related(implied.root.path, implied.root.span, f"{implied.why()}"),)
            yield Finding(direct.root.span, f"{direct.text} cannot be installed with {implied.root.display()}: "
                                            f"{implied.why()}", fix=fix, related=related, path=direct.root.path)
            continue
        if a.root is b.root:
            yield Finding(a.root.span, f"{a.root.display()} cannot be installed: its own requirements contradict "
                                       f"each other: {a.why()}; but {b.why()}", path=a.root.path)
            continue
        yield Finding(b.root.span, f"{b.root.display()} cannot be installed with {a.root.display()}: {b.why()}; but "
                                   f"{a.why()}", related=(Related(a.root.path, a.root.span, a.why()),),
                      path=b.root.path)


@rule("P002", "known-bad-version", Severity.WARNING, scope="project", fixable=True)
def known_bad_version(ctx):
    """A pinned version is known to break training, alone or with a setting the repository uses.

    ## What it does
    Checks every exact pin (written, or implied by a framework pin) against schemas/pins/known_bad.tsv: each row
    names the affected versions, the symptom, the versions that work and the issue threads. Some facts apply only
    under a setting actually used by a launch script or ds_config of the repository (DeepSpeed 0.16.0-0.16.7 only
    with ZeRO offload; transformers up to 4.37 only with ZeRO-3), or with another pinned package (DeepSpeed
    before 0.16.4 only with torch 2.6 or later); those say why they apply and point at the setting.
    The severity is the fact's own: error when the job crashes, warning when it misbehaves.

    ## Why it matters
    A 34B DPO run on transformers 4.38.1 ran out of memory at initialisation and, downgraded to 4.37.2, crashed in
    the rotary embedding: hours of queueing for a fact that was already in an issue thread.

    ## Example
    ```
    transformers==4.38.1
    deepspeed==0.13.2
    ```

    ## Fix
    The pin is rewritten to the nearest release (newer first) that no applicable fact hits and the other pins
    admit, keeping the line's style. Unsafe: it changes the environment.

    ## References
    https://github.com/OpenRLHF/OpenRLHF/issues/226
    https://github.com/OpenRLHF/OpenRLHF/issues/193
    https://github.com/huggingface/transformers/issues/29484
    https://github.com/deepspeedai/DeepSpeed/issues/5242
    https://github.com/deepspeedai/DeepSpeed/pull/7258
    https://github.com/deepspeedai/DeepSpeedExamples/pull/957
    https://github.com/deepspeedai/DeepSpeed/issues/7718
    """
    if not declares_pins(ctx.project):
        return
    from rlhf_lint.frameworks.versions import WHEN_LABELS, known_bad_hits

    project = ctx.project
    for hit in known_bad_hits(project):
        fact = hit.fact
        name = fact.package
        if hit.constraint.direct:
            head = f"{name} {hit.version} is known-bad: {fact.symptom}"
        else:
            head = f"{hit.pin.display()} installs {name} {hit.version} ({hit.constraint.why()}), known-bad: {fact.symptom}"
        why = ""
        if fact.when:
            why = f" Applies because {WHEN_LABELS.get(fact.when, fact.when)}"
            if hit.reason is not None:
                why += f" ({_where(project, hit.reason.path, hit.reason.span)})"
            why += "."
        elif fact.with_ and hit.reason is not None:
            why = f" Applies with {fact.with_} ({_where(project, hit.reason.path, hit.reason.span)})."
        message = f"{head}. Works: {fact.works}.{why} See {fact.source.split()[0]}"
        fix = None
        if hit.target is not None and hit.pin.version_span is not None:
            fix = Fix(f"pin {name} to {hit.target}", (Edit.replace(hit.pin.version_span, hit.target),),
                      Applicability.UNSAFE)
        related = (hit.reason,) if hit.reason is not None and hit.reason.path in project.sources else ()
        yield Finding(hit.pin.span, message, fix=fix, related=related, severity=Severity.parse(fact.severity),
                      path=hit.pin.path)


@rule("P003", "unpinned-critical", Severity.INFO, scope="project")
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
    if not declares_pins(ctx.project):
        return
    from rlhf_lint.frameworks.versions import CRITICAL_PACKAGES, constraints, install_sets, is_training_repository, pinned_version

    project = ctx.project
    for s in install_sets(project):
        cons = constraints(s)
        if not is_training_repository(project, cons):
            continue
        for pin in s.pins:
            if pin.name not in CRITICAL_PACKAGES or pin.group != s.id or pin.specifier or pin.url or pin.constraint:
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


@rule("P004", "flash-attn-no-prebuilt-wheel", Severity.WARNING, scope="project", fixable=True)
def flash_attn_no_prebuilt_wheel(ctx):
    """The pinned flash-attn release has no prebuilt wheel for the pinned torch.

    ## What it does
    Compares an exact flash-attn pin with the torch version of the same install (written, or required by the
    pinned vLLM) using schemas/pins/flash_attn_wheels.tsv: the torch major.minor versions each flash-attn release
    publishes wheels for.

    ## Why it matters
    Without a matching wheel, `pip install flash-attn` compiles from source (nvcc, a long build, often killed for
    memory) or picks a wheel built against another torch, which fails at import with `undefined symbol`.

    ## Example
    ```
    vllm==0.8.5
    flash-attn==2.7.0.post2   # wheels for torch 2.1-2.5; vllm 0.8.5 needs torch 2.6.0
    ```

    ## Fix
    The pin moves to the nearest flash-attn release with wheels for that torch (unsafe).

    ## References
    https://github.com/Dao-AILab/flash-attention/issues/931
    https://github.com/Dao-AILab/flash-attention/issues/853
    https://github.com/OpenRLHF/OpenRLHF/issues/252
    """
    if not declares_pins(ctx.project):
        return
    from rlhf_lint.frameworks.versions import wheel_gaps

    project = ctx.project
    for gap in wheel_gaps(project):
        torch = gap.torch
        where = f"pinned at {_where(project, torch.root.path, torch.root.span)}" if torch.direct else torch.why()
        if gap.row.flash_attn is None:
            message = (f"this flash-attn wheel ({gap.pin.version}) was built for torch {gap.row.torch[0]}; torch "
                       f"{torch.exact} ({where}) is installed with it: it fails at import with `undefined symbol`")
        else:
            message = (f"flash-attn {gap.pin.version} publishes wheels for torch {', '.join(gap.row.torch)} only; "
                       f"torch {torch.exact} ({where}) gets none: pip compiles it from source or a wheel for another "
                       f"torch fails at import with `undefined symbol`")
        fix = None
        if gap.target is not None:
            fix = Fix(f"pin flash-attn to {gap.target}", (Edit.replace(gap.pin.version_span, gap.target),),
                      Applicability.UNSAFE)
        related = ()
        if torch.root is not gap.pin:
            related = (Related(torch.root.path, torch.root.span, f"torch {torch.exact}: {where}"),)
        yield Finding(gap.pin.span, message, fix=fix, related=related, path=gap.pin.path)


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
