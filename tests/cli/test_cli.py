"""The command line: default and `check` commands, exit codes, `rules` and `rule`, --version, --diff."""

import subprocess

import pytest

from lintutil import run_cli


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "ds_config.json").write_text('{\n  "train_batch_size": 8,,\n}\n')
    (tmp_path / "ok.json").write_text('{"name": "not a deepspeed file"}\n')
    return tmp_path


def test_default_command_text_output_and_exit_code(repo):
    proc = run_cli("ds_config.json", cwd=repo)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "ds_config.json:2:25: F003 error invalid JSON: expected a double-quoted key or '}'"
    assert lines[1] == '      "train_batch_size": 8,,'
    assert lines[2] == " " * 28 + "^"
    assert lines[-1] == "Checked 1 file: 1 error, 0 warnings, 0 infos."
    assert "\x1b[" not in proc.stdout


def test_check_subcommand_and_clean_exit(repo):
    proc = run_cli("check", "ok.json", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "Checked 1 file: 0 errors, 0 warnings, 0 infos."


def test_fail_on_and_ignore(repo):
    assert run_cli("--ignore", "F003", ".", cwd=repo).returncode == 0
    assert run_cli("--select", "parse-error", "--fail-on", "error", ".", cwd=repo).returncode == 1


def test_usage_and_config_errors_exit_2(repo):
    assert run_cli("--format", "xml", ".", cwd=repo).returncode == 2
    (repo / "rlhf-lint.toml").write_text("gpus-per-node = 'many'\n")
    proc = run_cli(".", cwd=repo)
    assert proc.returncode == 2 and "gpus-per-node must be a whole number" in proc.stderr


def test_rules_and_rule_docs():
    proc = run_cli("rules")
    assert proc.returncode == 0 and "F003  parse-error" in proc.stdout
    doc = run_cli("rule", "F003")
    assert doc.returncode == 0 and doc.stdout.startswith("# F003 parse-error")
    assert "## Why it matters" in doc.stdout
    assert run_cli("rule", "Q123").returncode == 2


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and "rlhf-lint" in proc.stdout


def test_diff_prints_a_patch_and_writes_nothing(tmp_path):
    script = tmp_path / "train.sh"
    original = "deepspeed train.py \\\n  --deepspeed ds.json \\  \n  --bf16\n"  # blanks after the backslash
    script.write_text(original)
    proc = run_cli("--diff", "--select", "S001", "train.sh", cwd=tmp_path)
    assert script.read_text() == original
    assert proc.stdout.startswith("--- a/train.sh\n+++ b/train.sh\n")
    assert "-  --deepspeed ds.json \\  \n+  --deepspeed ds.json \\\n" in proc.stdout
    assert "S001" not in proc.stdout and "Would fix" not in proc.stdout  # stdout is the patch alone
    assert proc.stderr.rstrip().endswith("Would fix 1 (nothing written).")
    assert proc.returncode == 1  # fixes pending, as ruff


def test_diff_output_applies_with_git_apply(tmp_path):
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "train.sh"
    script.write_text(SCRIPT_WITH_FIX)
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8,, }\n')  # F003: reported, nothing to fix
    proc = run_cli("--diff", "--no-cache", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (tmp_path / "p.patch").write_text(proc.stdout)
    applied = subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr + proc.stdout
    assert "\\  \n" not in script.read_text()
    again = run_cli("--diff", "--no-cache", ".", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == "", again.stdout  # nothing left to fix; F003 is not a fix
    assert "F003" in again.stderr


# -- both entry paths: the fast parser (rlhf_lint.cli.entry) and click's application ----------------------------
def _fast(args):
    from rlhf_lint.cli.entry import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code


def _click(args):
    from click.testing import CliRunner

    from rlhf_lint.cli.app import main

    result = CliRunner().invoke(main, ["check", *args], prog_name="rlhf-lint")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(params=["fast", "click"])
def cli(request, monkeypatch, capsys):
    """Run a check command line in-process through one entry path: (exit code, stdout, stderr)."""
    monkeypatch.setenv("NO_COLOR", "1")

    def invoke(*args, cwd):
        monkeypatch.chdir(cwd)
        args = ["--no-cache", *map(str, args)]
        if request.param == "click":
            return _click(args)
        capsys.readouterr()
        code = _fast(args)
        out = capsys.readouterr()
        return code, out.out, out.err

    return invoke


SCRIPT_WITH_FIX = "deepspeed train.py \\\n  --deepspeed ds.json \\  \n  --bf16\n"  # S001: blanks after the backslash


def test_unsafe_fixes_without_fix_writes_nothing(cli, tmp_path):
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT_WITH_FIX)
    code, out, err = cli("--unsafe-fixes", "--select", "S001", "train.sh", cwd=tmp_path)
    assert script.read_text() == SCRIPT_WITH_FIX
    assert code == 1 and "S001" in out and "Fixed" not in out, out + err
    code, out, err = cli("--unsafe-fixes", "--fix", "--select", "S001", "train.sh", cwd=tmp_path)
    assert script.read_text() != SCRIPT_WITH_FIX, out + err


@pytest.mark.parametrize("name, content, expected", [
    ("missing.toml", None, "cannot read configuration file missing.toml: No such file or directory"),
    ("broken.toml", "select = [\n", "broken.toml: invalid TOML"),
    ("latin1.toml", b"gpu = '\xe9'\n", "latin1.toml: invalid TOML"),
])
def test_unusable_config_file_is_a_one_line_error(cli, tmp_path, name, content, expected):
    if content is not None:
        (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    (tmp_path / "ok.json").write_text("{}\n")
    code, out, err = cli("--config", name, "ok.json", cwd=tmp_path)
    assert code == 2, out + err
    assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert out == ""


@pytest.mark.parametrize("args, config, expected", [
    (["--select", "ZZZ"], None, "unknown rule selector 'ZZZ' in --select"),
    (["--select", "D,Q9"], None, "unknown rule selector 'Q9' in --select"),
    (["--ignore", "no-such-rule"], None, "unknown rule selector 'no-such-rule' in --ignore"),
    (["--extend-select", "X1"], None, "unknown rule selector 'X1' in --extend-select"),
    ([], 'select = ["DD"]\n', "unknown rule selector 'DD' in select of"),
    ([], 'ignore = ["F003", "F999"]\n', "unknown rule selector 'F999' in ignore of"),
    ([], '[per-file-ignores]\n"legacy/*" = ["nope"]\n', "unknown rule selector 'nope' in per-file-ignores"),
])
def test_selector_matching_no_rule_is_a_usage_error(cli, tmp_path, args, config, expected):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8,, }\n')
    if config is not None:
        (tmp_path / "rlhf-lint.toml").write_text(config)
    code, out, err = cli(*args, "ds_config.json", cwd=tmp_path)
    assert code == 2, out + err
    assert expected in err, err
    assert out == ""  # nothing was checked


def test_unknown_configuration_key_is_an_error_naming_key_and_file(cli, tmp_path):
    (tmp_path / "ok.json").write_text("{}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.rlhf-lint]\nfail_on = "error"\n')
    code, out, err = cli("ok.json", cwd=tmp_path)
    assert code == 2, out + err
    assert "unknown key 'fail_on'" in err and "pyproject.toml" in err and "did you mean 'fail-on'" in err, err


def test_diff_exit_code_is_whether_fixes_are_pending(cli, tmp_path):
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT_WITH_FIX)
    code, out, err = cli("--diff", "--select", "S001", "train.sh", cwd=tmp_path)
    assert code == 1 and out.startswith("--- a/train.sh") and "Would fix 1" in err and "Would fix" not in out
    script.write_text("deepspeed train.py --bf16\n")
    code, out, err = cli("--diff", "--select", "S001", "train.sh", cwd=tmp_path)
    assert (code, out) == (0, ""), err
