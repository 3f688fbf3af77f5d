"""docs/comparison.md names, for each behaviour, the test that holds it: every test file and test function it names
must exist, so the table cannot point at a test that was renamed or removed."""
import os
import re

from lintutil import ROOT

DOC = os.path.join(ROOT, "docs", "comparison.md")


def _references():
    """(file, [function, ...]) for each `tests/...py` reference; `::name` after a file (or alone, continuing the
    previous file) names a function in it."""
    text = open(DOC, encoding="utf-8").read()
    refs = []
    for row in text.splitlines():
        current = None
        for token in re.findall(r"`([^`]+)`", row):
            file_part, _, func = token.partition("::")
            if file_part.startswith("tests/") and file_part.endswith(".py"):
                current = file_part
                refs.append((current, [func] if func else []))
            elif not file_part and func and current is not None:
                refs[-1][1].append(func)
    return refs


def test_every_named_test_exists():
    refs = _references()
    assert len(refs) >= 14  # one or more per row of issue 16's points
    missing = []
    for path, functions in refs:
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            missing.append(path)
            continue
        source = open(full, encoding="utf-8").read()
        missing += [f"{path}::{f}" for f in functions if not re.search(rf"^def {re.escape(f)}\(", source, re.M)]
    assert missing == []
