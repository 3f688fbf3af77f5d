"""Output formats. Each renderer takes a runner Result and returns the text to print."""
from __future__ import annotations


def render(fmt: str, result, *, show_fixes: bool = False, quiet: bool = False, fixing: bool = False,
           color: bool = False, dry_run: bool = False, width: int | None = None) -> str:
    return "".join(render_chunks(fmt, result, show_fixes=show_fixes, quiet=quiet, fixing=fixing, color=color,
                                 dry_run=dry_run, width=width))


def render_chunks(fmt: str, result, **options):
    """The report in pieces to write as they come, a diagnostic at a time (a run's diagnostics are read back one
    group at a time, rlhf_lint.engine.report): no format is built whole."""
    if fmt == "json":
        from rlhf_lint.reporters.json_format import iter_json

        return iter_json(result)
    if fmt == "sarif":
        from rlhf_lint.reporters.sarif import iter_sarif

        return iter_sarif(result)
    if fmt == "github":
        from rlhf_lint.reporters.github import iter_github

        return iter_github(result)
    if fmt == "gitlab":
        from rlhf_lint.reporters.gitlab import iter_gitlab

        return iter_gitlab(result)
    from rlhf_lint.reporters.text import iter_text

    return iter_text(result, **options)
