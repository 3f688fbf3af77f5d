"""SARIF, GitHub and GitLab reports are written as they are made (issue 17): the pieces join into the document a
whole build gives, and writing them holds no more memory for many findings than for a few."""
from __future__ import annotations

import json
import tracemalloc
from collections.abc import Sequence

import pytest

from rlhf_lint.engine.report import Diagnostics, LineIndexes, Report
from rlhf_lint.engine.runner import Result
from rlhf_lint.model import Diagnostic, Edit, Fix, Position, Related, Severity, Span
from rlhf_lint.readers.source import LineIndex
from rlhf_lint.reporters import render, render_chunks

FORMATS = ("sarif", "github", "gitlab", "json", "text")


def _diag(path: str, line: int, code: str, message: str, *, fix: bool = False, related: str | None = None,
          excerpt: str = "same line") -> Diagnostic:
    start = line * 10
    return Diagnostic(
        code, "name", Severity.WARNING if code != "D012" else Severity.ERROR, message, path, Span(start, start + 3),
        Position(line, 1), Position(line, 4),
        fix=Fix("set it", (Edit(start, start + 3, "new"),)) if fix else None,
        related=(Related(related, Span(5, 9), "named here"),) if related else (),
        source_line=excerpt)


def _group(g: int, files: int = 5, per_file: int = 4) -> tuple[list, dict]:
    diagnostics, sources = [], {}
    for f in range(files):
        path = f"repo{g:05d}/f{f}.json"
        sources[path] = LineIndex(path, list(range(0, 400, 10)), 400)
        for i in range(per_file):
            # two findings of one code on identical lines of a file: their fingerprints are numbered :1 and :2
            diagnostics.append(_diag(path, 1 + i % 2 + (i // 2) * 3, ("D012", "D001")[i % 2 and g % 3 == 0],
                                     f"found-{g}-{f}-{i}", fix=i == 0,
                                     related=f"repo{g:05d}/f{(f + 1) % files}.json" if i == 1 else None,
                                     excerpt="dup line" if i < 2 else f"line {i}"))
    return diagnostics, sources


def _report(groups: int) -> Report:
    report = Report()
    for g in reversed(range(groups)):  # arrival order is not sort order
        report.add(*_group(g))
    return report


def _streamed(fmt: str, result) -> str:
    return "".join(render_chunks(fmt, result))


@pytest.mark.parametrize("fmt", FORMATS)
def test_streamed_report_equals_the_one_built_from_a_plain_list(fmt):
    report = _report(12)
    run = Result(diagnostics=Diagnostics(report), sources=LineIndexes(report))
    # a plain list in the same order: no compact report, no forgetting a file once past it
    plain = Result(diagnostics=list(Diagnostics(report)), sources=dict(LineIndexes(report).items()))
    streamed = _streamed(fmt, run)
    assert streamed == render(fmt, plain)
    assert streamed.count("found-") == len(plain.diagnostics) == 12 * 5 * 4
    if fmt in ("sarif", "gitlab", "json"):
        # one JSON document, byte for byte what dumping it whole with indent=2 gives
        assert streamed == json.dumps(json.loads(streamed), indent=2) + "\n"


def test_streamed_sarif_lists_the_rules_of_the_codes_reported_and_numbers_fingerprints_per_file():
    report = _report(4)
    log = json.loads(_streamed("sarif", Result(diagnostics=Diagnostics(report), sources=LineIndexes(report))))
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["D001", "D012"]
    assert all(run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])
    prints = [r["partialFingerprints"]["rlhfLint/v1"] for r in run["results"]]
    assert len(set(prints)) == len(prints)
    # the second "dup line" of a file, where both are of one code
    assert sum(p.endswith(":2") for p in prints) == sum(5 for g in range(4) if g % 3)
    fixed = [r for r in run["results"] if "fixes" in r]
    assert len(fixed) == 4 * 5 and fixed[0]["fixes"][0]["artifactChanges"][0]["replacements"][0]["deletedRegion"]
    assert [loc["physicalLocation"]["region"]["startLine"] for r in run["results"]
            for loc in r.get("relatedLocations", [])] == [1] * 4 * 5


@pytest.mark.parametrize("fmt", ["sarif", "gitlab"])
def test_empty_reports_are_the_whole_built_documents(fmt):
    streamed = _streamed(fmt, Result(diagnostics=Diagnostics(Report()), sources=LineIndexes(Report())))
    assert streamed == json.dumps(json.loads(streamed), indent=2) + "\n"
    assert (json.loads(streamed)["runs"][0]["results"] if fmt == "sarif" else json.loads(streamed)) == []


class _OnePass(Sequence):
    """Diagnostics that may be iterated once and never counted, listed or indexed."""

    ordered_by_path = True

    def __init__(self, report: Report) -> None:
        self._report = report
        self._iterated = False

    def codes(self):
        return set(self._report.codes)

    def __iter__(self):
        assert not self._iterated, "iterated twice"
        self._iterated = True
        return iter(self._report)

    def __len__(self):
        raise AssertionError("len() called")

    def __getitem__(self, item):
        raise AssertionError("indexed")


@pytest.mark.parametrize("fmt", ["sarif", "github", "gitlab", "json"])
def test_reporters_read_the_diagnostics_once_without_counting_them(fmt):
    report = _report(3)
    chunks = render_chunks(fmt, Result(diagnostics=_OnePass(report), sources=LineIndexes(report)))
    pieces = list(chunks)
    assert len(pieces) >= 3 * 5 * 4  # a piece per diagnostic at least: nothing was joined whole


def _peak_writing(fmt: str, groups: int) -> int:
    report = _report(groups)
    result = Result(diagnostics=Diagnostics(report), sources=LineIndexes(report))
    written = 0
    tracemalloc.start()
    try:
        for piece in render_chunks(fmt, result):
            written += len(piece)  # a sink: the pieces are dropped once written
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written > groups * 5 * 4 * 100
    return peak


@pytest.mark.parametrize("fmt", ["sarif", "github", "gitlab"])
def test_memory_while_writing_stays_flat_in_the_number_of_findings(fmt):
    _peak_writing(fmt, 2)  # first use: imports, the rules' pages
    small = _peak_writing(fmt, 25)  # 500 findings
    large = _peak_writing(fmt, 200)  # 4,000 findings
    # built whole, the document grows with the findings (measured: 4,000 findings peak at 6-9x the peak of 500 for
    # SARIF and GitLab, 6x for GitHub); written piece by piece only the group being read is held (about 1.1-1.4x)
    assert large < small * 2, (small, large)
