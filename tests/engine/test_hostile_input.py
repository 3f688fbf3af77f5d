"""Hostile input from pull requests of strangers: the environment (RLHF_LINT_JOBS), folders that cannot be listed,
files that cannot be opened. Output escaping is tested in tests/reporters/test_terminal_escaping.py."""
import os

import pytest

from lintutil import run_cli
from rlhf_lint.engine import runner
from rlhf_lint.engine.config import ConfigError
from rlhf_lint.engine.runner import Options, worker_count


# -- RLHF_LINT_JOBS ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5", "2e3"])
def test_bad_rlhf_lint_jobs_is_a_configuration_error_exit_2(tmp_path, value):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}\n')
    proc = run_cli("--no-cache", ".", cwd=tmp_path, env={"RLHF_LINT_JOBS": value})
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert "rlhf-lint: error: RLHF_LINT_JOBS must be a whole number" in proc.stderr
    assert repr(value) in proc.stderr


def test_empty_or_valid_rlhf_lint_jobs_is_accepted(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}\n')
    for value in ("", " 3 "):
        proc = run_cli("--no-cache", "-q", ".", cwd=tmp_path, env={"RLHF_LINT_JOBS": value})
        assert proc.returncode in (0, 1) and "error" not in proc.stderr, (value, proc.stderr)


def test_bad_rlhf_lint_jobs_raises_config_error_for_library_callers(monkeypatch):
    monkeypatch.setenv("RLHF_LINT_JOBS", "abc")
    with pytest.raises(ConfigError, match="RLHF_LINT_JOBS"):
        worker_count(Options(), groups=500, files=500)


def test_workers_are_capped_at_the_cores_available(monkeypatch):
    monkeypatch.setattr(runner, "available_cpus", lambda: 2)
    monkeypatch.setenv("RLHF_LINT_JOBS", "100000")
    assert worker_count(Options(), groups=500, files=500) == 2
    assert worker_count(Options(jobs=100000), groups=500, files=500) == 2
    monkeypatch.setenv("RLHF_LINT_JOBS", "1")
    assert worker_count(Options(), groups=500, files=500) == 1
    monkeypatch.delenv("RLHF_LINT_JOBS")
    assert worker_count(Options(), groups=500, files=500) == 2


def test_available_cpus_follows_the_affinity_mask(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert runner.available_cpus() == 2
    monkeypatch.delattr(os, "sched_getaffinity")
    assert runner.available_cpus() == 64
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert runner.available_cpus() == 1


# -- folders that cannot be listed, files that cannot be opened ----------------------------------------------------
def _deny_scandir(monkeypatch, denied):
    """Make os.scandir (what os.walk and the reader use) fail with EACCES for ``denied``: running as root, chmod 000
    denies nothing, so the permission error is simulated."""
    real_scandir = os.scandir
    denied = os.path.realpath(denied)

    def scandir(path="."):
        if os.path.realpath(os.fspath(path)) == denied:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)


def _check(capsys, *paths):
    from rlhf_lint.cli.check import run_check

    rc = run_check([str(p) for p in paths], no_cache=True)
    return rc, capsys.readouterr()


def test_a_folder_that_cannot_be_listed_is_f001_and_fails_the_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "notes.json").write_text('{"a": 1}\n')
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "train.sh").write_text("deepspeed train.py\n")
    _deny_scandir(monkeypatch, tmp_path / "secret")
    rc, out = _check(capsys, tmp_path)
    assert rc == 1, out
    secret = os.path.join(str(tmp_path), "secret")
    assert (f"{secret}:1:1: F001 error cannot list folder: Permission denied; its files were not checked"
            in out.out), out.out
    assert "Checked 1 file:" in out.out and "1 error" in out.out


def test_a_root_folder_that_cannot_be_listed_is_f001_not_checked_0_files_exit_0(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.sh").write_text("deepspeed train.py\n")
    _deny_scandir(monkeypatch, tmp_path)
    rc, out = _check(capsys, tmp_path)
    assert rc == 1, out
    assert f"{tmp_path}:1:1: F001 error cannot list folder: Permission denied" in out.out
    assert "Checked 0 files: 1 error" in out.out


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads folders whatever their mode; the monkeypatched tests above always run")
def test_a_folder_without_permissions_is_f001_for_real(tmp_path, capsys):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "train.sh").write_text("deepspeed train.py\n")
    os.chmod(secret, 0)
    try:
        rc, out = _check(capsys, tmp_path)
    finally:
        os.chmod(secret, 0o755)
    assert rc == 1 and f"{secret}:1:1: F001 error cannot list folder: Permission denied" in out.out


def _deny_open(monkeypatch, module, denied):
    real_open = open

    def fake_open(path, *args, **kwargs):
        if os.path.basename(os.fspath(path)) in denied:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(module, "open", fake_open, raising=False)


def _deny_os_open(monkeypatch, denied):
    """os.open (what rlhf_lint.readers.source.read_regular opens files with) fails with EACCES for ``denied``."""
    real_open = os.open

    def fake_open(path, *args, **kwargs):
        if os.path.basename(os.fspath(path)) in denied:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


def test_files_that_cannot_be_opened_are_f001(tmp_path, monkeypatch, capsys):
    from rlhf_lint.engine import discovery

    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}\n')
    (tmp_path / "launch").write_text("#!/bin/bash\ndeepspeed train.py\n")  # a script known by its shebang only
    _deny_open(monkeypatch, discovery, {"ds_config.json", "launch"})
    _deny_os_open(monkeypatch, {"ds_config.json", "launch"})
    rc, out = _check(capsys, tmp_path)
    assert rc == 1, out
    for name in ("ds_config.json", "launch"):
        assert f"{tmp_path / name}:1:1: F001 error cannot read: Permission denied" in out.out, out.out
