"""P001 conflicting-pins: pinned versions that cannot be installed together."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.pins._common import _where


@rule("P001", "conflicting-pins", Severity.ERROR, scope="project", when="pins", fixable=True)
def conflicting_pins(ctx):
    """Pinned versions that cannot be installed together.

    ## What it does
    Gathers the pins one install resolves at once (one requirements file with its `-r`/`-c` includes, one
    pyproject extra, one `pip install` command with the files its `-r`/`-c` name) and adds what each pinned
    framework release itself requires (vLLM's exact torch, torchvision and transformers range; OpenRLHF's, verl's
    and TRL's pins). A package whose constraints admit no common version is reported on the pin as written, with
    the other end as related. A framework release whose own pins contradict each other (`openrlhf[vllm]==0.9.5`:
    transformers 5.3.0 and a vLLM that needs transformers<5) is reported as uninstallable.
    The `pip install` commands of one Dockerfile stage install one after another: a later pin of a package simply
    replaces the earlier one, and a later pin that breaks a requirement of a package an earlier command installed
    is a warning. uv's `[tool.uv] override-dependencies` replace every other requirement on their package and
    `constraint-dependencies` join them.

    ## Why it matters
    pip refuses an install whose requirements contradict each other (`ResolutionImpossible`). A later, separate
    `pip install` does not re-resolve what is already installed: it installs its pins anyway with only a resolver
    warning, and the earlier package runs with a dependency it does not support.

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
    https://pip.pypa.io/en/stable/topics/dependency-resolution/
    https://docs.astral.sh/uv/reference/settings/#override-dependencies
    https://github.com/OpenRLHF/OpenRLHF/blob/v0.9.5/requirements.txt
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/main/docker/Dockerfile
    """
    from rlhf_lint.frameworks.versions import breaks, conflicts

    project = ctx.project
    for b in breaks(project):
        earlier, later = b.earlier, b.later
        where = _where(project, earlier.root.path, earlier.root.span)
        what = later.text if later.direct else f"{later.text}, which {later.root.display()} brings ({later.why()}),"
        yield Finding(later.root.span, f"{what} breaks a requirement of {earlier.root.display()}, which an earlier "
                                       f"pip command installed ({where}): {earlier.why()}. pip installs it anyway, "
                                       f"with a resolver warning", related=(Related(earlier.root.path,
                                                                                    earlier.root.span, earlier.why()),),
                      severity=Severity.WARNING, path=later.root.path)
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
