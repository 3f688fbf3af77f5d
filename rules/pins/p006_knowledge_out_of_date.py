"""P006 knowledge-out-of-date: the repository targets a release newer than rlhf-lint's tables cover."""
from __future__ import annotations

from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule


@rule("P006", "knowledge-out-of-date", Severity.INFO, scope="project", when="versions")
def knowledge_out_of_date(ctx):
    """The repository targets a release newer than rlhf-lint's tables cover.

    ## What it does
    Compares the release each framework targets (its `<framework>-version` setting, else an exact pin in the
    repository) with the newest release of the table rlhf-lint judges it by: OpenRLHF's flags, DeepSpeed's and
    verl's config keys, and the requirements of openrlhf, verl, trl, deepspeed and vllm releases. Reports once per
    repository, naming each release past the edge and the command that refreshes the tables.

    ## Why it matters
    Frameworks ship every few weeks. Past the edge, a flag or key that is new in the targeted release is not in the
    table: those findings become warnings that say so (O001, D001, D002, D013, V001), no rename or removal is
    offered, and conflicts a newer release's own pins would cause stay silent until the tables are refreshed.

    ## Example
    ```
    openrlhf==0.11.2   # the flag table ends at 0.11.0
    ```

    ## Fix
    Refresh the tables from the package index (`python -m rlhf_lint.schemas.build --all`), or upgrade rlhf-lint.

    ## References
    https://github.com/OpenRLHF/OpenRLHF/releases
    https://github.com/deepspeedai/DeepSpeed/releases
    """
    from rlhf_lint.frameworks.edge import REFRESH_COMMAND, label, stale_knowledge

    stale = stale_knowledge(ctx.project)
    if not stale:
        return
    parts = [f"{label(s.target.package)} {s.target.version} ({s.target.origin}) is newer than the newest release "
             f"of rlhf-lint's {s.what}, {s.newest}" for s in stale]
    message = ("; ".join(parts) + ": checks that rest on those tables are warnings without rewrites, and what a "
               "newer release changed stays unseen; refresh "
               f"them with `{REFRESH_COMMAND}`")
    first = next((s for s in stale if s.target.span is not None), stale[0])
    related = tuple(Related(s.target.path, s.target.span, f"{label(s.target.package)} {s.target.version} here")
                    for s in stale if s is not first and s.target.path and s.target.span is not None)
    yield Finding(first.target.span, message, related=related, path=first.target.path)
