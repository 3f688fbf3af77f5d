"""Shell rules S001-S006 beyond the fixture snapshots (tests/rules/test_rule_snapshots.py): fixed scripts still parse,
which findings have no fix, safe versus unsafe fixes, rule documentation."""
import os
import shutil
import subprocess

import pytest

from lintutil import ROOT
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.registry import REGISTRY
from rlhf_lint.engine.runner import Options, lint

HERE = os.path.join(ROOT, "tests", "fixtures", "shell")

# after --fix --unsafe-fixes: what is left (no automatic fix exists for these)
LEFT_AFTER_FIX = {
    "S001_bad.sh": [("S001", 7, 4)],  # the line before ends in a comment: a backslash cannot go there
    "S001_hydra_bad.sh": [("S001", 4, 33)],  # where the comment should go is for the author to say
    "S005_bad.sh": [("S005", 2, 19)],  # inside a heredoc quotes do not help
    "S006_bad.sh": [("S006", 4, 21)],  # a value with a blank cannot be passed through a heredoc
    "S008_bad.sh": [("S008", 13, 24)],  # in single quotes a `$` would not expand
}


def _diags(path, code, **options):
    result = lint([str(path)], Config(), Options(select=[code], **options))
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(HERE) if n.endswith(".fixed.sh")))
def test_fixed_script_parses_and_keeps_only_findings_without_a_fix(name, tmp_path):
    """The snapshot harness checks the exact file after --fix; here: bash still parses it, and what is left is what
    no automatic fix can do."""
    target = tmp_path / name.replace(".fixed", "")
    shutil.copy(os.path.join(HERE, name), target)
    assert subprocess.run(["bash", "-n", str(target)], capture_output=True).returncode == 0
    assert _diags(target, name[:4], fix=True, unsafe_fixes=True) == LEFT_AFTER_FIX.get(target.name, [])


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
    for code in ("S001", "S002", "S003", "S004", "S005", "S006", "S007", "S008"):
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


def test_s001_crlf_continuation_runs_as_one_command_only_after_the_fix(tmp_path):
    """bash itself shows the bug and the fix: with CR-LF the launch gets one argument and `--lr` runs as a command
    (shellcheck SC1017); after S001's fix (whitespace removal included) it gets all of its arguments."""
    import subprocess

    from lintutil import fix_copy

    stub = "deepspeed() { echo \"ARGS $#\"; }\n"  # LF: a CR after `}` would be a syntax error of its own
    script = tmp_path / "launch.sh"
    script.write_bytes(("#!/bin/bash\r\n" + stub + "deepspeed train.py \\\r\n   --lr 1e-5 \\  \r\n"
                        "   --zero_stage 3\r\n").encode())
    before = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert "ARGS 2" in before.stdout and "command not found" in before.stderr  # train.py and a CR
    (tmp_path / "fixed").mkdir()
    text, result = fix_copy(script, tmp_path / "fixed", ["S001"])
    assert "\r" not in text and [d.code for d in result.diagnostics] == []
    after = subprocess.run(["bash", str(tmp_path / "fixed" / "launch.sh")], capture_output=True, text=True)
    assert after.stdout.strip() == "ARGS 5" and after.stderr == ""


def test_unset_variable_is_not_reported_when_a_name_may_come_from_elsewhere(tmp_path):
    # eval and `set -a` may set any name; a sourced file outside the repository is not read
    for preamble in ("eval \"$(cat env.txt)\"", "set -a", "source /etc/profile.d/cluster.sh",
                     "export $(grep -v '^#' .env | xargs)", "declare -x \"$name=1\"",
                     "source \"$(dirname \"$0\")/env.sh\""):
        target = tmp_path / "run.sh"
        target.write_text(f"#!/bin/bash\n{preamble}\npython3 -m verl.trainer.main_ppo data.train_files=$train\n")
        assert _diags(target, "S007") == [], preamble
    target.write_text("#!/bin/bash\nset -x\npython3 -m verl.trainer.main_ppo data.train_files=$train\n")
    assert _diags(target, "S007") == [("S007", 3, 51)]
