import os
import re

from lintutil import ROOT
from rlhf_lint.cli.rules import rules_reference
from rlhf_lint.engine.registry import REGISTRY

REQUIRED_SECTIONS = ("What it does", "Why it matters", "Example", "Fix")


def test_rules_reference_is_current():
    with open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8") as fh:
        committed = fh.read()
    assert committed == rules_reference(), "docs/rules.md is stale: run `python -m rlhf_lint.cli.rules > docs/rules.md`"


def test_every_rule_is_documented():
    for rule in REGISTRY.all():
        sections = rule.sections()
        missing = [s for s in REQUIRED_SECTIONS if not sections.get(s, "").strip()]
        assert not missing, f"{rule.code} lacks {missing}"
        assert re.match(r"^[A-Z]", rule.summary), rule.code


def test_every_family_but_files_cites_references():
    for rule in REGISTRY.all():
        if rule.family != "F":
            assert rule.references(), f"{rule.code} {rule.name} cites no URL under References"
