"""Shell rules S001-S006 on fixtures: exact diagnostics, and the exact file after --fix (which must pass bash -n)."""
import os
import shutil
import subprocess

import pytest

from rlhf_lint.engine.config import Config
from rlhf_lint.engine.registry import REGISTRY
from rlhf_lint.engine.runner import Options, lint

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "shell")

EXPECTED = {
    "S001_bad.sh": [("S001", 3, 14), ("S001", 5, 4), ("S001", 7, 4)],
    # verl's examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh pattern: `\  # note`, and an orphaned Hydra override
    "S001_hydra_bad.sh": [("S001", 4, 33), ("S001", 7, 5)],
    "S002_bad.sh": [("S002", 1, 17)],
    "S003_bad.sh": [("S003", 1, 7), ("S003", 2, 46), ("S003", 3, 10), ("S003", 3, 33)],
    "S004_bad.sh": [("S004", 2, 4)],
    "S005_bad.sh": [("S005", 2, 19), ("S005", 5, 29), ("S005", 5, 51)],
    "S006_bad.sh": [("S006", 3, 16), ("S006", 4, 21), ("S006", 5, 16)],
}
# after --fix --unsafe-fixes: what is left (no automatic fix exists for these)
LEFT_AFTER_FIX = {
    "S001_bad.sh": [("S001", 7, 4)],  # the line before ends in a comment: a backslash cannot go there
    "S001_hydra_bad.sh": [("S001", 4, 33)],  # where the comment should go is for the author to say
    "S005_bad.sh": [("S005", 2, 19)],  # inside a heredoc quotes do not help
    "S006_bad.sh": [("S006", 4, 21)],  # a value with a blank cannot be passed through a heredoc
}


def _diags(path, code, **options):
    result = lint([str(path)], Config(), Options(select=[code], **options))
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_fixture(name):
    assert _diags(os.path.join(HERE, name), name[:4]) == EXPECTED[name]


@pytest.mark.parametrize("code", sorted({n[:4] for n in EXPECTED}))
def test_good_fixture(code):
    assert _diags(os.path.join(HERE, f"{code}_good.sh"), code) == []


def test_hydra_good_fixture():
    assert _diags(os.path.join(HERE, "S001_hydra_good.sh"), "S001") == []


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if os.path.exists(os.path.join(HERE, n[:-3] + ".fixed.sh"))))
def test_fix_result(name, tmp_path):
    target = tmp_path / name
    shutil.copy(os.path.join(HERE, name), target)
    lint([str(target)], Config(), Options(select=[name[:4]], fix=True, unsafe_fixes=True))
    with open(os.path.join(HERE, name[:-3] + ".fixed.sh"), encoding="utf-8") as fh:
        assert target.read_text() == fh.read()
    assert subprocess.run(["bash", "-n", str(target)], capture_output=True).returncode == 0
    # a second run changes nothing, and only the findings without a fix remain
    before = target.read_text()
    assert _diags(target, name[:4], fix=True, unsafe_fixes=True) == LEFT_AFTER_FIX.get(name, [])
    assert target.read_text() == before


def test_safe_fix_only_without_unsafe(tmp_path):
    target = tmp_path / "s.sh"
    shutil.copy(os.path.join(HERE, "S001_bad.sh"), target)
    lint([str(target)], Config(), Options(select=["S001"], fix=True))
    lines = target.read_text().splitlines()
    assert lines[2] == "   --lr 1e-5 \\" and lines[3] == "   --zero_stage 3"  # the missing backslash needs --unsafe-fixes


def test_duplicate_flag_suggestion_is_display_only(tmp_path):
    result = lint([os.path.join(HERE, "S002_bad.sh")], Config(), Options(select=["S002"]))
    (diag,) = result.diagnostics
    assert diag.fix is not None and diag.fix.applicability.value == "display"
    assert diag.related and diag.related[0].span is not None


def test_rule_docs_complete():
    for code in ("S001", "S002", "S003", "S004", "S005", "S006"):
        rule = REGISTRY.get(code)
        sections = rule.sections()
        for heading in ("What it does", "Why it matters", "Example", "Fix", "References"):
            assert sections.get(heading), (code, heading)
        assert rule.references()


def test_syntax_error_is_reported_by_f003(tmp_path):
    target = tmp_path / "broken.sh"
    target.write_text("#!/bin/bash\nOPENRLHF_PATH=<ROOT_PATH>\n")
    result = lint([str(target)], Config(), Options())
    assert [(d.code, d.start.line, d.start.column) for d in result.diagnostics] == [("F003", 2, 15)]
