"""The rule index (lint/engine/rule_index.py) lets a run select rules and import only the rule modules of the file
kinds present; a stale row would hide a rule or run it on the wrong files, so it must equal what the modules define."""
from __future__ import annotations

import subprocess
import sys

import pytest

from lintutil import assert_generated_file_current
from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import REGISTRY, Registry, Rule


def test_index_file_is_current():
    assert_generated_file_current("rlhf_lint.engine.registry", "engine/rule_index.py", "--write-index")


def test_index_knows_every_rule_without_importing_rule_modules():
    code = ("import sys\nfrom rlhf_lint.engine.registry import REGISTRY\nrules = REGISTRY.known()\n"
            "print(len(rules), sum(r.func is None for r in rules), "
            "sorted(m for m in sys.modules if m.startswith('rlhf_lint.rules.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    count, undefined, modules = out.stdout.split(" ", 2)
    assert int(count) == len(REGISTRY.all()) and int(undefined) == int(count)
    assert modules.strip() == "[]"


def test_a_rule_that_differs_from_its_index_row_is_refused():
    reg = Registry()
    reg.add(Rule("F901", "indexed", Severity.ERROR, frozenset({"json"}), module="m"))
    with pytest.raises(RuntimeError, match="rule index"):
        reg.define(Rule("F901", "indexed", Severity.WARNING, frozenset({"json"}), module="m", func=lambda ctx: ()))
    reg.define(Rule("F901", "indexed", Severity.ERROR, frozenset({"json"}), module="m", func=lambda ctx: (),
                    docstring="Doc."))
    assert reg.get("F901").func is not None and reg.get("F901").docstring == "Doc."


def test_documentation_of_an_indexed_rule_imports_its_module():
    rule = REGISTRY.get("D001")
    assert rule.summary and rule.sections().get("Why it matters")


def test_a_rule_needing_an_unknown_fact_is_refused():
    import pytest

    from rlhf_lint.engine.registry import Registry, Rule
    from rlhf_lint.model import Severity

    registry = Registry()
    with pytest.raises(ValueError, match="cannot need 'gpu'"):
        registry.add(Rule("D999", "test-rule", Severity.INFO, frozenset({"json"}), when="gpu"))
    registry.add(Rule("M999", "test-rule", Severity.INFO, frozenset(), scope="job", when="gpu"))
    assert registry.rules["M999"].when == "gpu"


def test_every_fact_a_rule_may_need_is_answered_by_the_project():
    """registry.FACTS (what @rule(when=...) accepts) and Project.has (what answers it) name the same facts."""
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.project import Project
    from rlhf_lint.engine.registry import FACTS
    from rlhf_lint.frameworks.jobs import Job
    from rlhf_lint.readers.source import Source

    project = Project([], Config())
    project.unreadable = []
    job = Job(name="j", path="t.sh", span=None, framework="deepspeed")
    source = Source.from_text("t.json", "{}", kind="json")
    for scope, facts in FACTS.items():
        for fact in facts:
            answer = project.has(fact, job=job if scope == "job" else None, source=source if scope == "file" else None)
            assert answer in (True, False), (scope, fact)
    import pytest

    with pytest.raises(ValueError):
        project.has("no such fact")
