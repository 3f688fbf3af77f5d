"""Run the O rules on one fixture script and apply their fixes, the way the runner does."""
from __future__ import annotations

import os
import re

from rlhf_lint.engine.config import Config
from rlhf_lint.model import Applicability
from rlhf_lint.engine.project import Context, Project
from rlhf_lint.engine.registry import REGISTRY

from rlhf_lint.engine.project import parse_source
from rlhf_lint.readers.source import Source

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "openrlhf")
VERSION_RE = re.compile(r"#\s*openrlhf-version:\s*(\S+)")


def fixture(name: str) -> str:
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as fh:
        return fh.read()


def config_for(text: str) -> Config:
    m = VERSION_RE.search(text)
    return Config(versions={"openrlhf": m.group(1)} if m else {})


def findings(path: str, text: str, config: Config | None = None, prefix: str = "O"):
    """[(code, line, column, finding)] sorted by position."""
    config = config or config_for(text)
    source = Source.from_text(path, text, kind="shell")
    parse_source(source)
    assert source.parse_error is None, source.parse_error
    project = Project([source], config)
    out = []
    for rule in REGISTRY.all():
        if not rule.code.startswith(prefix):
            continue
        for finding in rule.run(Context(project, source=source)):
            pos = source.position(finding.span.start)
            out.append((rule.code, pos.line, pos.column, finding))
    return sorted(out, key=lambda t: (t[1], t[2], t[0]))


def codes(path: str, text: str, config: Config | None = None):
    return [(c, line, col) for c, line, col, _ in findings(path, text, config)]


def fix_all(path: str, text: str, unsafe: bool = False, rounds: int = 5) -> str:
    from rlhf_lint.fixers.text import apply_edits, compatible_fixes

    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
    config = config_for(text)
    for _ in range(rounds):
        fixes = [f.fix for *_, f in findings(path, text, config) if f.fix and f.fix.applicability in allowed]
        if not fixes:
            return text
        text = apply_edits(text, [e for fx in compatible_fixes(fixes) for e in fx.edits])
    raise AssertionError("fixes did not converge")
