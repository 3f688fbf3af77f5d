"""A file that kills its worker process (a crash in C code, the out-of-memory killer) costs its own group an F010
diagnostic; every other group is still checked and reported (before: BrokenProcessPool, exit 2, no report)."""
import os

import pytest

from rlhf_lint.engine import runner
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint


def _repos(root, count):
    for i in range(count):
        repo = root / f"repo{i}"
        (repo / ".git").mkdir(parents=True)
        (repo / "ds_config.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 4}}\n')
        (repo / "boom.json" if i == 7 else repo / "other.json").write_text("{}\n")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the test makes forked workers die")
def test_a_group_that_kills_its_worker_is_f010_and_the_others_are_reported(tmp_path, monkeypatch):
    _repos(tmp_path, 40)
    real = runner.lint_group

    def dying(items, *args):
        if any(path.endswith("boom.json") for path, _ in items):
            os._exit(9)  # what a segfault or the OOM killer looks like to the pool
        return real(items, *args)

    monkeypatch.setattr(runner, "lint_group", dying)  # forked workers inherit the patch
    monkeypatch.setattr(runner, "available_cpus", lambda: 2)
    result = lint([str(tmp_path)], Config(), Options(jobs=2))
    crashed = [d for d in result.diagnostics if d.code == "F010"]
    assert {os.path.basename(d.path) for d in crashed} == {"ds_config.json", "boom.json"}
    assert all("repo7" in d.path and "worker process died" in d.message for d in crashed)
    stage = [d for d in result.diagnostics if d.code != "F010"]
    assert {d.path.split(os.sep)[-2] for d in stage} == {f"repo{i}" for i in range(40) if i != 7}
    assert result.files_checked == 78


def test_results_stream_in_any_order_and_match_a_serial_run(tmp_path, monkeypatch):
    _repos(tmp_path, 40)
    monkeypatch.setattr(runner, "available_cpus", lambda: 2)
    parallel = lint([str(tmp_path)], Config(), Options(jobs=2))
    serial = lint([str(tmp_path)], Config(), Options(jobs=1))
    key = [(d.path, d.code, d.start) for d in parallel.diagnostics]
    assert key == [(d.path, d.code, d.start) for d in serial.diagnostics] and key
    assert parallel.files_checked == serial.files_checked == 80
