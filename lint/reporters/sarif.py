"""SARIF 2.1.0 for GitHub code scanning: every rule that ran is described, every diagnostic is a result.

Paths inside the working folder are relative URIs against ``%SRCROOT%`` (percent-encoded from the file name's bytes,
so a byte that is not UTF-8 is ``%FF``), so the log means the same on any checkout; ``partialFingerprints`` hash
the code, the path and the flagged line's text (not its number), so code scanning follows a finding across commits
that move it."""
from __future__ import annotations

import hashlib
import json
import os
from urllib.parse import quote_from_bytes

from rlhf_lint import __version__
from rlhf_lint.reporters.escape import unicode_json, utf8_bytes

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
INFO_URI = "https://pypi.org/project/rlhf-lint/"
SRCROOT = "%SRCROOT%"
FINGERPRINT = "rlhfLint/v1"


def _quote_path(path: str, safe: str) -> str:
    # the name's own bytes (os.fsencode undoes surrogateescape): a quoted str would refuse an undecodable byte
    return quote_from_bytes(os.fsencode(path.replace(os.sep, "/")), safe=safe)


def _file_uri(absolute: str) -> str:
    # a Windows path (C:\\x) is file:///C:/x
    return "file://" + _quote_path(absolute if absolute.startswith(os.sep) else os.sep + absolute, safe="/:")


def _location(path: str) -> dict:
    """An artifactLocation: relative to %SRCROOT% (the working folder) when inside it, else an absolute file URI."""
    rel = os.path.relpath(os.path.abspath(path))
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return {"uri": _file_uri(os.path.abspath(path))}
    return {"uri": _quote_path(rel, safe="/"), "uriBaseId": SRCROOT}


def _region(start, end, empty: bool = False) -> dict:
    end_column = end.column if end.line > start.line else max(end.column, start.column)
    if empty:
        end_column = start.column
    return {"startLine": start.line, "startColumn": start.column, "endLine": end.line, "endColumn": end_column}


def _rule_descriptor(rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.sections().get("What it does", rule.summary) or rule.summary},
        "help": {"text": rule.markdown(), "markdown": rule.markdown()},
        "helpUri": rule.url,
        "defaultConfiguration": {"level": _LEVEL[rule.severity.label]},
        "properties": {"tags": [rule.family], "fixable": rule.fixable},
    }


def fingerprint(d, uri: str, seen: dict) -> str:
    """code + URI + the flagged line with its whitespace collapsed; ``:n`` numbers identical ones in a file."""
    excerpt = " ".join((d.source_line or "").split()) or d.message
    digest = hashlib.sha256(utf8_bytes("\0".join((d.code, uri, excerpt)))).hexdigest()
    seen[digest] = seen.get(digest, 0) + 1
    return f"{digest[:32]}:{seen[digest]}"


def _fixes(d, sources) -> list:
    index = sources.get(d.path)
    if d.fix is None or index is None or d.fix.applicability.value == "display":
        return []
    replacements = []
    for e in d.fix.edits:
        start, end = index.position(e.start), index.position(e.end)
        replacement = {"deletedRegion": _region(start, end, empty=e.start == e.end)}
        if e.content:
            replacement["insertedContent"] = {"text": e.content}
        replacements.append(replacement)
    return [{"description": {"text": d.fix.message},
             "artifactChanges": [{"artifactLocation": _location(d.path), "replacements": replacements}],
             "properties": {"applicability": d.fix.applicability.value}}]


def render_sarif(result) -> str:
    return "".join(iter_sarif(result))


def _codes(diagnostics) -> list[str]:
    """The codes reported, sorted: from a run's compact report without decoding it (rlhf_lint.engine.report),
    else from a first pass over the diagnostics."""
    codes = getattr(diagnostics, "codes", None)
    return sorted(codes() if codes is not None else {d.code for d in diagnostics})


class Fingerprints:
    """``fingerprint`` over a whole report. When the diagnostics come ordered by path (a run's report), what is
    counted for a file is dropped once the next path starts: memory stays flat in the number of findings. (Two
    spellings of one file in one run, which discovery does not yield, would each be numbered from 1.)"""

    def __init__(self, diagnostics) -> None:
        self._ordered = bool(getattr(diagnostics, "ordered_by_path", False))
        self._path = None
        self._seen: dict = {}

    def __call__(self, d, uri: str) -> str:
        if self._ordered and d.path != self._path:
            self._path = d.path
            self._seen.clear()
        return fingerprint(d, uri, self._seen)


def indented_items(items, indent: str):
    """``json.dumps(list, indent=2)``'s items of a list whose own line starts at ``indent``, each with its leading
    newline and comma, then the closing bracket: the same bytes as the whole list dumped in place. Lone surrogates
    (an undecodable file-name byte) are escaped first: no JSON reader takes them (rlhf_lint.reporters.escape)."""
    first = True
    inner = indent + "  "
    for item in items:
        text = json.dumps(unicode_json(item), indent=2).replace("\n", "\n" + inner)
        yield ("\n" if first else ",\n") + inner + text
        first = False
    yield "]" if first else "\n" + indent + "]"


def _result(d, index, fingerprints, sources, result, related_range) -> dict:
    location = _location(d.path)
    res = {
        "ruleId": d.code,
        "ruleIndex": index[d.code],
        "level": _LEVEL[d.severity.label],
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": location,
            "region": _region(d.start, d.end, empty=d.span is not None and d.span.start == d.span.end)}}],
        "partialFingerprints": {FINGERPRINT: fingerprints(d, location["uri"])},
    }
    if d.related:
        related = []
        for i, r in enumerate(d.related):
            physical = {"artifactLocation": _location(r.path)}
            got = related_range(result, r)
            if got is not None:
                physical["region"] = _region(*got, empty=r.span.start == r.span.end)
            related.append({"id": i, "message": {"text": r.message}, "physicalLocation": physical})
        res["relatedLocations"] = related
    fixes = _fixes(d, sources)
    if fixes:
        res["fixes"] = fixes
    return res


def iter_sarif(result):
    """The log of ``json.dumps(log, indent=2)`` in pieces, the same bytes: the envelope with the rules of the codes
    reported, then the results one at a time as the diagnostics are read (the CLI writes them as they come)."""
    from rlhf_lint.engine.registry import REGISTRY
    from rlhf_lint.reporters.positions import related_range

    sources = getattr(result, "sources", None) or {}
    codes = _codes(result.diagnostics)
    rules = [REGISTRY.get(c) for c in codes]
    index = {c: i for i, c in enumerate(codes)}
    root = os.path.abspath(os.getcwd())
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "rlhf-lint", "version": __version__, "informationUri": INFO_URI,
                                "rules": [_rule_descriptor(r) for r in rules if r is not None]}},
            "originalUriBaseIds": {SRCROOT: {"uri": _file_uri(root).rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": [],
        }],
    }
    # "results" is the run's last key and the only one of that name (a string value holds its quotes escaped)
    head, tail = json.dumps(log, indent=2).rsplit('"results": []', 1)
    yield head + '"results": ['
    fingerprints = Fingerprints(result.diagnostics)
    yield from indented_items((_result(d, index, fingerprints, sources, result, related_range)
                               for d in result.diagnostics), "      ")
    yield tail + "\n"
