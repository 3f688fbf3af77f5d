"""SARIF 2.1.0 for GitHub code scanning: every rule that ran is described, every diagnostic is a result."""
from __future__ import annotations

import json
import os

from rlhf_lint import __version__

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
INFO_URI = "https://pypi.org/project/rlhf-lint/"


def _uri(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path)) if os.path.isabs(path) else path
    if rel.startswith(".."):
        rel = os.path.abspath(path)
        return "file://" + rel.replace(os.sep, "/")
    return rel.replace(os.sep, "/").removeprefix("./")


def _rule_descriptor(rule) -> dict:
    refs = rule.references()
    descriptor = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.sections().get("What it does", rule.summary) or rule.summary},
        "help": {"text": rule.markdown(), "markdown": rule.markdown()},
        "defaultConfiguration": {"level": _LEVEL[rule.severity.label]},
        "properties": {"tags": [rule.family], "fixable": rule.fixable},
    }
    if refs:
        descriptor["helpUri"] = refs[0]
    return descriptor


def render_sarif(result) -> str:
    from rlhf_lint.engine.registry import REGISTRY

    codes = sorted({d.code for d in result.diagnostics})
    rules = [REGISTRY.get(c) for c in codes]
    index = {c: i for i, c in enumerate(codes)}
    results = []
    for d in result.diagnostics:
        region = {"startLine": d.start.line, "startColumn": d.start.column,
                  "endLine": d.end.line, "endColumn": max(d.end.column, d.start.column if d.end.line == d.start.line else 1)}
        if d.span is not None and d.span.start == d.span.end:
            region["endColumn"] = region["startColumn"]
        res = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _LEVEL[d.severity.label],
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(d.path)}, "region": region}}],
        }
        if d.related:
            res["relatedLocations"] = [
                {"id": i, "message": {"text": r.message},
                 "physicalLocation": {"artifactLocation": {"uri": _uri(r.path)}}}
                for i, r in enumerate(d.related)
            ]
        results.append(res)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "rlhf-lint", "version": __version__, "informationUri": INFO_URI,
                                "rules": [_rule_descriptor(r) for r in rules if r is not None]}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"
