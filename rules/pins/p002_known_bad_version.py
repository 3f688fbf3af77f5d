"""P002 known-bad-version: a pinned version is known to break training, alone or with a setting the repository uses."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.pins._common import _where


@rule("P002", "known-bad-version", Severity.WARNING, scope="project", when="pins", fixable=True)
def known_bad_version(ctx):
    """A pinned version is known to break training, alone or with a setting the repository uses.

    ## What it does
    Checks every exact pin (written, or implied by a framework pin) against schemas/pins/known_bad.tsv: each row
    names the affected versions, the symptom, the versions that work and the issue threads. Some facts apply only
    under a setting actually used by a launch script or ds_config of the repository (DeepSpeed 0.16.0-0.16.7 only
    with ZeRO offload; transformers up to 4.37 only with ZeRO-3; LLaMA-Factory 0.9.5 only when `llamafactory-cli`
    is given a JSON config), or with another pinned package (DeepSpeed before 0.16.4 only with torch 2.6 or later);
    those say why they apply and point at the setting.
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
    https://github.com/hiyouga/LlamaFactory/issues/10316
    """
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
