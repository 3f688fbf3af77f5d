"""GitLab code quality report (artifacts:reports:codequality): a JSON array of issues with description, check_name,
fingerprint (the SARIF one: code, path, flagged line's text), severity and location.path/lines.begin/end. A path
byte that is not UTF-8 is ``\xff`` in location.path (JSON holds Unicode only) and its real byte in the fingerprint."""
from __future__ import annotations

import json
import os

from rlhf_lint.reporters.sarif import Fingerprints, indented_items

# an error is a launch that fails or runs out of memory: critical; blocker is left for nothing we can know
_SEVERITY = {"error": "critical", "warning": "minor", "info": "info"}


def _path(path: str) -> str:
    # GitLab matches location.path against the repository's files: relative, with forward slashes
    rel = os.path.relpath(os.path.abspath(path))
    return (path if rel.startswith("..") else rel).replace(os.sep, "/")


def render_gitlab(result) -> str:
    return "".join(iter_gitlab(result))


def _issue(d, fingerprints) -> dict:
    path = _path(d.path)
    return {
        "type": "issue",
        "description": f"{d.code} {d.message}",
        "check_name": f"{d.code} {d.name}",
        "fingerprint": fingerprints(d, path),
        "severity": _SEVERITY[d.severity.label],
        "categories": ["Bug Risk"],
        "location": {"path": path, "lines": {"begin": d.start.line, "end": d.end.line}},
    }


def iter_gitlab(result):
    """``json.dumps(issues, indent=2)`` an issue at a time, the same bytes (the CLI writes them as they come)."""
    fingerprints = Fingerprints(result.diagnostics)
    yield "["
    yield from indented_items((_issue(d, fingerprints) for d in result.diagnostics), "")
    yield "\n"
