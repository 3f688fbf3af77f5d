"""A report that cannot be written is the tool's error, not a finding: a full disk or ``--output /dev/full`` is one
line on stderr and exit 2 (``--exit-zero`` or not); a closed pipe (``rlhf-lint . | head``) ends the run quietly
with the exit code it would have had; a reporter that fails is an internal error, exit 2. Never a traceback."""
import os
import subprocess
import sys

import pytest

from lintutil import run_cli

DS = '{"train_batch_size": 8, "bogus": 1}\n'
full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "ds_config.json").write_text(DS)
    return tmp_path


def _cli(*args, cwd, stdout, stdin=None):
    return subprocess.run([sys.executable, "-m", "rlhf_lint", "--no-cache", *args], cwd=cwd, stdout=stdout,
                          stdin=stdin, stderr=subprocess.PIPE, text=True, timeout=120,
                          env=dict(os.environ, NO_COLOR="1"))


@full
@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "gitlab", "github"])
def test_output_to_a_full_device_is_exit_2_with_one_line(repo, fmt):
    proc = run_cli("--exit-zero", "--output-format", fmt, "--output", "/dev/full", ".", cwd=repo)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "rlhf-lint: error: cannot write the report to /dev/full: No space left on device\n"


@full
@pytest.mark.parametrize("args", [["."], ["--diff", "."], ["--add-noqa", "."]])
def test_stdout_on_a_full_device_is_exit_2_with_one_line(repo, args):
    (repo / "train.sh").write_text("deepspeed train.py \\  \n  --deepspeed ds_config.json\n")  # S001: a fix
    with open("/dev/full", "w") as devfull:
        proc = _cli("--exit-zero", *args, cwd=repo, stdout=devfull)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "rlhf-lint: error: cannot write the report to standard output: No space left on device" in proc.stderr


@full
def test_stdin_fix_on_a_full_device_is_exit_2(repo):
    with open(repo / "ds_config.json") as stdin, open("/dev/full", "w") as devfull:
        proc = _cli("-", "--stdin-filename", "ds_config.json", "--fix", cwd=repo, stdout=devfull, stdin=stdin)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "rlhf-lint: error: cannot write the report to standard output: No space left on device\n"


@pytest.mark.parametrize("args, code", [(["."], 1), (["--exit-zero", "."], 0), (["--format", "sarif", "."], 1),
                                        (["--diff", "--unsafe-fixes", "."], 1)])
def test_a_closed_pipe_ends_quietly_with_the_runs_own_exit_code(repo, args, code):
    (repo / "train.sh").write_text("deepspeed train.py \\  \n  --deepspeed ds_config.json\n")
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first byte: every write fails with EPIPE
    try:
        proc = _cli(*args, cwd=repo, stdout=write)
    finally:
        os.close(write)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr == "", proc.stderr


def test_a_failing_reporter_is_an_internal_error(repo, monkeypatch, capsys):
    from rlhf_lint.cli.entry import main
    from rlhf_lint.reporters import sarif

    def broken(result):
        yield "{"
        raise ValueError("reporter bug")

    monkeypatch.setattr(sarif, "iter_sarif", broken)
    monkeypatch.chdir(repo)
    with pytest.raises(SystemExit) as exc:
        main(["--no-cache", "--exit-zero", "--format", "sarif", "."])
    assert exc.value.code == 2
    assert "rlhf-lint: internal error: ValueError: reporter bug" in capsys.readouterr().err
