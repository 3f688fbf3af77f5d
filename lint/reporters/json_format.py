"""The JSON report, a contract other tools rely on (version 1): 1-based lines and columns."""
from __future__ import annotations

import json

from rlhf_lint.reporters.escape import unicode_json


def _pos(p) -> dict:
    return {"line": p.line, "column": p.column}


def _related(r, result) -> dict:
    from rlhf_lint.reporters.positions import related_range

    out = {"path": r.path, "message": r.message}
    got = related_range(result, r) if result is not None else None
    if got is not None:
        out["start"], out["end"] = _pos(got[0]), _pos(got[1])
    return out


def diagnostic_dict(d, source=None, result=None) -> dict:
    fix = None
    if d.fix is not None:
        edits = []
        for e in d.fix.edits:
            if source is not None:
                edits.append({"start": _pos(source.position(e.start)), "end": _pos(source.position(e.end)),
                              "content": e.content})
            else:
                edits.append({"start": {"offset": e.start}, "end": {"offset": e.end}, "content": e.content})
        fix = {"applicability": d.fix.applicability.value, "message": d.fix.message, "edits": edits}
    return {
        "code": d.code,
        "name": d.name,
        "severity": d.severity.label,
        "message": d.message,
        "path": d.path,
        "start": _pos(d.start),
        "end": _pos(d.end),
        "fix": fix,
        "related": [_related(r, result) for r in d.related],
    }


def render_json(result) -> str:
    return "".join(iter_json(result))


def iter_json(result):
    """The report of ``json.dumps(payload, indent=2)`` a diagnostic at a time, the same bytes, so the CLI writes
    it as it goes (memory flat in findings). A path or message with a lone surrogate (a file name byte that is not
    UTF-8) has it escaped as the text report shows it (``\\xff``): strict JSON readers refuse lone surrogates."""
    sources = getattr(result, "sources", {}) or {}
    yield '{\n  "version": 1,\n  "diagnostics": ['
    first = True
    for d in result.diagnostics:
        text = json.dumps(unicode_json(diagnostic_dict(d, sources.get(d.path), result)), indent=2)
        yield ("\n" if first else ",\n") + "\n".join("    " + line for line in text.split("\n"))
        first = False
    summary = json.dumps({"files": result.files_checked, "fixed": result.fixed}, indent=2)
    yield ("]" if first else "\n  ]") + ',\n  "summary": ' + summary.replace("\n", "\n  ") + "\n}\n"
