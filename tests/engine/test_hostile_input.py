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
