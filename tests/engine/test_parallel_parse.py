"""One repository is one group, checked by one process: its files are parsed by worker processes when the run has
cores to spare (before: ~900 files of one repository ran on one core). The findings are those of a serial run; a
worker that dies while parsing costs that file an internal error, not the run."""
import os

import pytest

from rlhf_lint.engine import runner
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="parsing workers are forked")
PARSE_PARALLEL_MIN = 200  # the tests lower the threshold (runner.PARSE_PARALLEL_MIN) to keep their trees small


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch):
    monkeypatch.setattr(runner, "PARSE_PARALLEL_MIN", PARSE_PARALLEL_MIN)


def _repo(root, n):
    (root / ".git").mkdir()
    for i in range(n):
        kind = i % 4
        if kind == 0:
            (root / f"ds_{i}.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 4}}\n')
        elif kind == 1:
            (root / f"run_{i}.sh").write_text(f"#!/bin/bash\nZ=ds_{i - 1}.json\ndeepspeed --num_gpus 8 train.py "
                                              "--deepspeed $Z --zero_stage 3 \\\n  --bf16\n")
        elif kind == 2:
            (root / f"ppo_{i}.yaml").write_text("trainer:\n  nnodes: 1\ndata:\n  train_batch_size: 7\n"
                                                "algorithm:\n  adv_estimator: grpo\n")
        else:
            (root / f"requirements-{i}.txt").write_text("vllm==0.7.2\ntorch==2.6.0\n")


def _key(result):
    return [(d.path, d.code, d.start, d.end, d.message) for d in result.diagnostics]


def test_parallel_parsing_gives_the_serial_findings(tmp_path, monkeypatch):
    _repo(tmp_path, PARSE_PARALLEL_MIN + 40)
    monkeypatch.setattr(runner, "available_cpus", lambda: 2)
    parallel = lint([str(tmp_path)], Config(), Options(jobs=2))
    serial = lint([str(tmp_path)], Config(), Options(jobs=1))
    assert _key(parallel) == _key(serial) and {d.code for d in serial.diagnostics} >= {"P001", "V003"}
    assert parallel.files_checked == serial.files_checked == PARSE_PARALLEL_MIN + 40


def test_a_parser_that_kills_its_worker_costs_only_that_file(tmp_path, monkeypatch):
    _repo(tmp_path, PARSE_PARALLEL_MIN + 40)
    real = runner.parse_source

    def dying(source):
        if source.path.endswith("ppo_6.yaml") and os.getpid() != parent:
            os._exit(9)
        return real(source)

    parent = os.getpid()
    monkeypatch.setattr(runner, "parse_source", dying)
    monkeypatch.setattr(runner, "available_cpus", lambda: 2)
    result = lint([str(tmp_path)], Config(), Options(jobs=2))
    f010 = [d for d in result.diagnostics if d.code == "F010"]
    assert [os.path.basename(d.path) for d in f010] == ["ppo_6.yaml"] and "worker process died" in f010[0].message
    assert result.files_checked == PARSE_PARALLEL_MIN + 40
    assert any(d.code == "P001" for d in result.diagnostics)
