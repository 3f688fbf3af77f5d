"""Adopting the gate on a repository with many findings: --add-noqa (inline suppressions where the format has
comments) and a baseline file (--baseline FILE [--write-baseline]) that hides accepted findings, keyed by code,
path and a fingerprint of the line's text, not its number, so new findings still fail."""
import json

import pytest

from lintutil import run_cli

SCRIPT = ("#!/bin/bash\n"
          "deepspeed --num_gpus 2 train.py --deepspeed ds.json --lr 1 --lr 2\n"
          "deepspeed --num_gpus 2 train.py \\\n"
          "  --zero_stage 2 --zero_stage 3 \\\n"
          "  --bf16\n")
PINS = "vllm==0.6.3\ntorch==2.1.0\n"
ORZ = '''from dataclasses import dataclass

from orz.exps.examples.ppo.ppo_base_exp import BasePPOExpConfig


@dataclass
class NoEnginesConfig(BasePPOExpConfig):
    vllm_num_engines: int = 0  # keep
    note: str = """a
multi-line string"""
'''
ACCELERATE = ("compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n  offload_optimizer: cpu\n"
              "  zero3_save_16bit_model: false\n  zero_stage: 3\ndistributed_type: DEEPSPEED\n")
DS = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "overlap_com": true}\n}\n'


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "run.sh").write_text(SCRIPT)
    (tmp_path / "requirements.txt").write_text(PINS)
    (tmp_path / "orz_config.py").write_text(ORZ)
    (tmp_path / "accelerate.yaml").write_text(ACCELERATE)
    (tmp_path / "ds_config.json").write_text(DS)
    return tmp_path


def report(repo, *args):
    proc = run_cli("--no-cache", "--output-format", "json", *args, ".", cwd=repo)
    assert proc.returncode in (0, 1), proc.stderr
    return proc, [(d["path"], d["code"], d["start"]["line"]) for d in json.loads(proc.stdout)["diagnostics"]]


def test_add_noqa_suppresses_findings_in_files_with_comments(repo):
    _, before = report(repo)
    assert {p for p, _c, _l in before} == {"run.sh", "requirements.txt", "orz_config.py", "accelerate.yaml",
                                           "ds_config.json"}, before
    proc = run_cli("--add-noqa", ".", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "requirements.txt").read_text() == "vllm==0.6.3\ntorch==2.1.0  # rlhf-lint: ignore[P001]\n"
    script = (repo / "run.sh").read_text()
    assert "--lr 1 --lr 2  # rlhf-lint: ignore[S002]\n" in script
    assert "--zero_stage 2 --zero_stage 3 \\\n" in script  # never after a continuation: left, and said so
    assert "run.sh:4: no suppression comment added" in proc.stderr
    assert "ds_config.json: this format has no comments" in proc.stderr
    assert "vllm_num_engines: int = 0  # keep  # rlhf-lint: ignore[Z001]" in (repo / "orz_config.py").read_text()
    assert (repo / "ds_config.json").read_text() == DS
    _, after = report(repo)
    assert sorted(after) == sorted(d for d in before if d[0] == "ds_config.json" or d[:2] == ("run.sh", "S002")
                                   and d[2] == 4)
    again = run_cli("--add-noqa", ".", cwd=repo)  # idempotent: nothing new to add
    assert again.stdout.startswith("Added 0 suppression comments")


@pytest.mark.parametrize("other", ["--diff", "--statistics"])
def test_add_noqa_refuses_options_it_cannot_honour_and_writes_nothing(repo, other):
    # --diff promises that nothing is written; --add-noqa prints no report for --statistics to count
    before = {p.name: p.read_bytes() for p in repo.iterdir()}
    proc = run_cli("--no-cache", "--add-noqa", other, ".", cwd=repo)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("rlhf-lint: error: --add-noqa ") and other in proc.stderr
    assert proc.stdout == ""
    assert {p.name: p.read_bytes() for p in repo.iterdir()} == before


def test_add_noqa_merges_into_an_existing_directive(tmp_path):
    (tmp_path / "requirements.txt").write_text("vllm==0.6.3\ntorch==2.1.0  # rlhf-lint: ignore[P002]\n")
    run_cli("--add-noqa", ".", cwd=tmp_path)
    assert (tmp_path / "requirements.txt").read_text().endswith("torch==2.1.0  # rlhf-lint: ignore[P002, P001]\n")


def test_add_noqa_leaves_a_line_inside_a_yaml_block_scalar(tmp_path):
    from rlhf_lint.engine.noqa import _same_meaning, _with_directive

    text = "a: |\n  x\n  y\nb: 1\n"
    new, at = _with_directive(text, 2, ["S002"])
    assert not _same_meaning("yaml", text, new, at)
    new, at = _with_directive(text, 4, ["S002"])
    assert _same_meaning("yaml", text, new, at)
    heredoc = "cat <<EOF\nline\nEOF\necho hi\n"
    new, at = _with_directive(heredoc, 2, ["S002"])
    assert not _same_meaning("shell", heredoc, new, at)
    new, at = _with_directive(heredoc, 4, ["S002"])
    assert _same_meaning("shell", heredoc, new, at)
    code = 'x = """a\nb"""\ny = 1\n'
    assert not _same_meaning("python", code, *_with_directive(code, 1, ["Z001"]))


def test_baseline_hides_accepted_findings_and_new_ones_still_fail(repo):
    proc = run_cli("--baseline", ".rlhf-lint-baseline.json", "--write-baseline", ".", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((repo / ".rlhf-lint-baseline.json").read_text())
    assert {e["path"] for e in data["findings"]} >= {"ds_config.json", "run.sh"}
    assert all(set(e) == {"code", "path", "fingerprint", "count"} for e in data["findings"])
    clean = run_cli("--baseline", ".rlhf-lint-baseline.json", ".", cwd=repo)
    assert clean.returncode == 0 and "accepted in .rlhf-lint-baseline.json not shown" in clean.stderr
    # lines inserted above: the accepted findings move, and stay accepted
    (repo / "ds_config.json").write_text(DS.replace("{\n", '{\n  "steps_per_print": 10,\n', 1))
    assert run_cli("--baseline", ".rlhf-lint-baseline.json", ".", cwd=repo).returncode == 0
    # a new finding fails, and only it is shown
    (repo / "run.sh").write_text(SCRIPT + "deepspeed --num_gpus 2 train.py --seed 1 --seed 2\n")
    new = run_cli("--baseline", ".rlhf-lint-baseline.json", ".", cwd=repo)
    assert new.returncode == 1
    assert [line.split(" ")[0] for line in new.stdout.splitlines() if " S002 " in line and line.startswith("run.sh")] == ["run.sh:6:33:"]


def test_baseline_counts_each_accepted_copy(repo):
    run_cli("--baseline", "b.json", "--write-baseline", ".", cwd=repo)
    (repo / "run.sh").write_text(SCRIPT + SCRIPT.splitlines(keepends=True)[1])  # the same bad line once more
    proc = run_cli("--baseline", "b.json", ".", cwd=repo)
    assert proc.returncode == 1 and proc.stdout.count(": S002 ") == 1


def test_baseline_is_read_relative_to_its_own_folder(repo):
    run_cli("--baseline", "b.json", "--write-baseline", ".", cwd=repo)
    assert run_cli("--baseline", f"{repo.name}/b.json", repo.name, cwd=repo.parent).returncode == 0


def test_baseline_errors_are_usage_errors(repo):
    assert run_cli("--write-baseline", ".", cwd=repo).returncode == 2
    missing = run_cli("--baseline", "missing.json", ".", cwd=repo)
    assert missing.returncode == 2 and "cannot read baseline missing.json" in missing.stderr
    (repo / "bad.json").write_text("[]")
    assert run_cli("--baseline", "bad.json", ".", cwd=repo).returncode == 2
