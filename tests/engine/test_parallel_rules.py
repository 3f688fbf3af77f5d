"""One repository is one group: its rules run in this process and forked ones that inherit the parsed project, so
a ~900-file repository uses every core (before: one). The findings are those of a serial run, byte for byte; a
process that dies costs the rule it was running on that file an internal error, never the run; small groups and
fixing runs never fork."""
import json
import os
import sys

import pytest

from lintutil import ROOT, temporary_rule
from rlhf_lint.engine import runner
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint
from rlhf_lint.model import Finding, Severity

sys.path.insert(0, os.path.join(ROOT, "bench"))
from corpus import generate  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="rule workers are forked")
FILES = 160  # one repository of generated launches, ds_configs, YAML, ORZ configs, requirements
THRESHOLD = 100  # the tests lower runner.RULE_PARALLEL_MIN to keep the group small


@pytest.fixture(autouse=True)
def _two_cores(monkeypatch):
    monkeypatch.setattr(runner, "available_cpus", lambda: 2)
    monkeypatch.setattr(runner, "RULE_PARALLEL_MIN", THRESHOLD)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("one_repo")
    generate(str(root), FILES, seed=3, per_repo=FILES)  # one repository marker: one group
    return root


def _report(result) -> str:
    """Everything a diagnostic carries, in report order (the JSON reporter's input)."""
    return "\n".join(repr(d) for d in result.diagnostics)


def _pids(monkeypatch, tmp_path):
    """Record the process id of every rule run (forked processes inherit the patch and append to the file)."""
    log = tmp_path / "pids"
    real = runner._run_rule

    def logged(rule, ctx, project):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        return real(rule, ctx, project)

    monkeypatch.setattr(runner, "_run_rule", logged)
    return lambda: set(log.read_text().split()) if log.exists() else set()


def test_rules_shared_with_forked_processes_give_the_serial_findings(repo, monkeypatch, tmp_path):
    serial = lint([str(repo)], Config(), Options(jobs=1))
    pids = _pids(monkeypatch, tmp_path)
    parallel = lint([str(repo)], Config(), Options(jobs=2))
    assert len(pids()) == 3  # the parent and one forked process in each of the two rounds ran rules
    assert _report(parallel) == _report(serial)
    assert {d.code for d in serial.diagnostics} >= {"D020", "M008", "O010", "P001", "V021", "Z003"}
    assert parallel.files_checked == serial.files_checked == FILES


def test_the_json_report_is_identical_for_one_and_two_processes(repo, monkeypatch, tmp_path):
    from rlhf_lint.cli.entry import main  # the console script's fast path, as a user runs it

    outputs = []
    for jobs in ("1", "2"):
        monkeypatch.setenv("RLHF_LINT_JOBS", jobs)
        out = str(tmp_path / f"report-{jobs}.json")
        with pytest.raises(SystemExit):
            main(["--no-cache", "--format", "json", "--output", out, str(repo)])
        with open(out, "rb") as fh:
            outputs.append(fh.read())
    assert outputs[0] == outputs[1] and json.loads(outputs[0])


def _killer(victim: str, parent: int):
    def kill_in_child(ctx):
        """Test rule whose run kills a forked process on one file (a crash in C code, the OOM killer)."""
        if ctx.source.name == victim and os.getpid() != parent:
            os._exit(9)
        if ctx.source.name == victim:
            yield Finding(None, "checked in the parent")
    return kill_in_child


def test_a_rule_that_kills_its_process_costs_only_that_rule_on_that_file(repo, monkeypatch, tmp_path):
    victim = sorted(p for p in os.listdir(repo / "repo_0000" / "configs") if p.endswith(".json"))[-1]
    with temporary_rule("F902", "test-kill", Severity.ERROR, _killer(victim, os.getpid())):
        serial = lint([str(repo)], Config(), Options(jobs=1, extend_select=["F902"]))
        pids = _pids(monkeypatch, tmp_path)
        real = runner._fork_finish
        # the parent takes no chunk itself, so the victim surely runs in a child (then again alone in another)
        monkeypatch.setattr(runner, "_fork_finish", lambda run, results, here: real(run, results, False))
        result = lint([str(repo)], Config(), Options(jobs=2, extend_select=["F902"]))
    assert len(pids()) >= 3
    f010 = [d for d in result.diagnostics if d.code == "F010"]
    assert [os.path.basename(d.path) for d in f010] == [victim]
    assert "rule F902 test-kill" in f010[0].message and "worker process died" in f010[0].message
    # everything else, the other rules on the victim included, is as in a serial run
    kept = [repr(d) for d in result.diagnostics if d.code != "F010"]
    assert kept == [repr(d) for d in serial.diagnostics if d.code != "F902"]
    assert result.files_checked == FILES and result.internal_errors == 1


def test_small_groups_and_fixing_runs_never_fork(repo, monkeypatch, tmp_path):
    def no_fork():
        raise AssertionError("forked")

    monkeypatch.setattr(runner, "RULE_PARALLEL_MIN", FILES + 1)
    monkeypatch.setattr(os, "fork", no_fork)
    small = lint([str(repo)], Config(), Options(jobs=2))
    monkeypatch.setattr(runner, "RULE_PARALLEL_MIN", THRESHOLD)
    diff = lint([str(repo)], Config(), Options(jobs=2, diff=True))
    assert small.diagnostics and diff.diagnostics and runner.RULE_WORKERS["n"] == 1
    assert [repr(d) for d in diff.diagnostics] == [repr(d) for d in lint([str(repo)], Config(), Options(
        jobs=1, diff=True)).diagnostics]


def test_rule_workers_are_capped_at_the_cores(repo, monkeypatch, tmp_path):
    seen = []
    real = runner._rules_parallel

    def spy(project, rules, workers, *rest):
        seen.append(workers)
        return real(project, rules, workers, *rest)

    monkeypatch.setattr(runner, "_rules_parallel", spy)
    lint([str(repo)], Config(), Options(jobs=16))
    assert seen == [2]


def test_when_no_process_can_be_forked_this_one_runs_every_rule(repo, monkeypatch):
    def no_more_processes():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    serial = lint([str(repo)], Config(), Options(jobs=1))
    monkeypatch.setattr(os, "fork", no_more_processes)
    result = lint([str(repo)], Config(), Options(jobs=2))
    assert _report(result) == _report(serial) and result.internal_errors == 0


def test_a_file_rule_that_reads_the_jobs_is_run_again_once_they_are_built(repo, monkeypatch, tmp_path):
    from rlhf_lint.engine.registry import REGISTRY, Rule

    def count_jobs(ctx):
        """Test rule on shell scripts that reads every job of the project (a cross-file fact)."""
        yield Finding(None, f"{len(ctx.project.jobs)} jobs")

    REGISTRY.load()
    rule = Rule(code="S901", name="test-count-jobs", severity=Severity.INFO, func=count_jobs,
                kinds=frozenset({"shell"}), docstring=count_jobs.__doc__)
    REGISTRY.add(rule)
    try:
        result = lint([str(repo)], Config(), Options(jobs=2, extend_select=["S901"]))
        serial = lint([str(repo)], Config(), Options(jobs=1, extend_select=["S901"]))
    finally:
        del REGISTRY.rules[rule.code], REGISTRY.by_name[rule.name]
    found = [(d.path, d.message) for d in result.diagnostics if d.code == "S901"]
    # forked before the jobs were built, a child hands the rule back; whichever process runs it again has every
    # job, so each script sees the count a serial run sees
    assert found and found == [(d.path, d.message) for d in serial.diagnostics if d.code == "S901"]
    assert len({message for _, message in found}) == 1 and result.internal_errors == 0
