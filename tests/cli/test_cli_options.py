"""ruff-like command-line options: stdin with --stdin-filename, --statistics, --exit-zero, --output-format,
--show-fixes."""
import json
import subprocess
import sys
import os

import pytest

from lintutil import run_cli

DS = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "overlap_com": true}\n}\n'
FIXED = DS.replace('"overlap_com"', '"overlap_comm"')
TWO_ERRORS = ('{\n  "zero_optimization": {"stage": 2, "overlap_com": true},\n'
              '  "fp16": {"enabled": true}, "bf16": {"enabled": true}\n}\n')


def run_stdin(data: str, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rlhf_lint", *args], input=data.encode(), cwd=cwd,
                          env=dict(os.environ, NO_COLOR="1"), capture_output=True, timeout=120)


def test_stdin_reports_under_the_given_name(tmp_path):
    proc = run_stdin(DS, "-", "--stdin-filename", "configs/ds_config.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode()
    assert out.startswith("configs/ds_config.json:3:37: D001 error")
    assert not (tmp_path / "configs").exists()
    implied = run_stdin(DS, "--stdin-filename", "configs/ds_config.json", cwd=tmp_path)  # no path: stdin
    assert implied.stdout == proc.stdout and implied.returncode == 1


def test_stdin_kind_comes_from_the_filename(tmp_path):
    text = 'echo "unterminated\n'
    as_shell = run_stdin(text, "-", "--stdin-filename", "run.sh", cwd=tmp_path)
    assert as_shell.returncode == 1 and as_shell.stdout.startswith(b"run.sh:1:6: F003 error")
    as_unknown = run_stdin(text, "-", "--stdin-filename", "notes.txt", cwd=tmp_path)
    assert b"F003" not in as_unknown.stdout and b"F001" in as_unknown.stdout


def test_stdin_fix_prints_the_fixed_text_only(tmp_path):
    proc = run_stdin(DS, "-", "--stdin-filename", "ds_config.json", "--fix", cwd=tmp_path)
    assert proc.stdout.decode() == FIXED
    assert proc.returncode == 0, proc.stderr  # nothing left after the fix
    assert b"Fixed 1" in proc.stderr
    unchanged = run_stdin('{"train_batch_size": 8}\n', "-", "--stdin-filename", "ds_config.json", "--fix")
    assert unchanged.stdout == b'{"train_batch_size": 8}\n'


def test_stdin_uses_the_configuration_of_the_filename(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "rlhf-lint.toml").write_text('ignore = ["D001"]\n')
    assert run_stdin(DS, "-", "--stdin-filename", "sub/ds_config.json", cwd=tmp_path).returncode == 0
    assert run_stdin(DS, "-", "--stdin-filename", "ds_config.json", cwd=tmp_path).returncode == 1


def test_stdin_is_checked_alone(tmp_path):
    proc = run_stdin(DS, "-", "other.json", cwd=tmp_path)
    assert proc.returncode == 2 and b"standard input" in proc.stderr


def test_statistics_counts_per_code(tmp_path):
    (tmp_path / "a.json").write_text(TWO_ERRORS)
    (tmp_path / "ds_config.json").write_text(TWO_ERRORS)
    proc = run_cli("--statistics", ".", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == ["2\tD001\t[*] unknown-ds-config-key", "2\tD012\t    fp16-and-bf16-enabled"]
    as_json = json.loads(run_cli("--statistics", "--output-format", "json", ".", cwd=tmp_path).stdout)
    assert as_json[0] == {"code": "D001", "name": "unknown-ds-config-key", "count": 2, "fixable": True,
                          "safe_fixes": 2, "unsafe_fixes": 0}


def test_statistics_marks_unsafe_fixes_as_the_report_does(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "k": 1, "k": 2}\n')  # D004: an unsafe fix
    report = run_cli("--select", "D004", ".", cwd=tmp_path).stdout
    assert "D004 error" in report and "[unsafe fix]" in report
    proc = run_cli("--statistics", "--select", "D004", ".", cwd=tmp_path)
    assert proc.stdout == "1\tD004\t[unsafe fix] duplicate-ds-config-key\n"
    (row,) = json.loads(run_cli("--statistics", "--select", "D004", "--output-format", "json", ".",
                                cwd=tmp_path).stdout)
    assert row["fixable"] is True and (row["safe_fixes"], row["unsafe_fixes"]) == (0, 1)


def test_statistics_of_a_code_with_safe_and_unsafe_fixes_shows_both_marks():
    from rlhf_lint.cli.check import render_statistics
    from rlhf_lint.model import Applicability, Diagnostic, Edit, Fix, Position, Severity

    def diag(code, applicability):
        fix = Fix("f", (Edit(0, 1, "x"),), applicability) if applicability else None
        return Diagnostic(code=code, name=code.lower(), severity=Severity.ERROR, message="m", path="p", span=None,
                          start=Position(1, 1), end=Position(1, 2), fix=fix)

    text = render_statistics([diag("X001", Applicability.SAFE), diag("X001", Applicability.UNSAFE),
                              diag("X001", Applicability.DISPLAY), diag("X002", None)], "text")
    assert text.splitlines() == ["3\tX001\t[*] [unsafe fix] x001", "1\tX002\t                 x002"]


@pytest.mark.parametrize("fmt", ["sarif", "github", "gitlab"])
def test_statistics_refuses_formats_that_list_findings(tmp_path, fmt):
    (tmp_path / "ds_config.json").write_text(TWO_ERRORS)
    proc = run_cli("--statistics", "--output-format", fmt, ".", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("rlhf-lint: error: --statistics prints counts as text or JSON"), proc.stderr


def test_exit_zero_keeps_findings_but_not_usage_errors(tmp_path):
    (tmp_path / "ds_config.json").write_text(DS)
    proc = run_cli("--exit-zero", ".", cwd=tmp_path)
    assert proc.returncode == 0 and "D001" in proc.stdout
    assert run_cli("--exit-zero", "--select", "ZZZ", ".", cwd=tmp_path).returncode == 2


@pytest.mark.parametrize("spelling", [["--output-format", "json"], ["--output-format=json"], ["--format", "json"]])
def test_output_format_is_an_alias_of_format(tmp_path, spelling):
    (tmp_path / "ds_config.json").write_text(DS)
    proc = run_cli(*spelling, ".", cwd=tmp_path)
    assert json.loads(proc.stdout)["diagnostics"][0]["code"] == "D001"


def test_show_fixes_lists_the_fixes_applied(tmp_path):
    (tmp_path / "ds_config.json").write_text(DS)
    proc = run_cli("--fix", "--show-fixes", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Fixed 1 finding:\n- ds_config.json:\n    1 x D001 (unknown-ds-config-key)\n" in proc.stdout
    assert (tmp_path / "ds_config.json").read_text() == FIXED
    (tmp_path / "ds_config.json").write_text(DS)
    dry = run_cli("--diff", "--show-fixes", ".", cwd=tmp_path)
    assert "Would fix 1 finding:" in dry.stderr and dry.returncode == 1
    assert (tmp_path / "ds_config.json").read_text() == DS
