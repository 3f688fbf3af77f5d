"""P001 conflicting-pins: pinned versions that cannot be installed together."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.pins._common import _where


@rule("P001", "conflicting-pins", Severity.ERROR, scope="project", when="pins", fixable=True)
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
