"""Forks and unreleased code: openrlhf-source / verl-source read a checkout statically instead of a release table."""
from __future__ import annotations

import os

import pytest

from lintutil import run
from rlhf_lint.engine.config import Config, ConfigError, config_from_mapping
from rlhf_lint.engine.runner import build_project
from rlhf_lint.frameworks import forks

# a fork's CLI: a real flag of OpenRLHF plus two flags of its own; a call with non-literal arguments is skipped
FORK_CLI = '''import argparse

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--actor.model_name_or_path", type=str, default=None)
    parser.add_argument("--reward.model_name_or_path", type=str, default=None)
    parser.add_argument("--ds.zero_stage", type=int, default=2)
    parser.add_argument("--fork.reward_shaping", type=str, default="none", choices=["none", "length"])
    parser.add_argument("--fork.use_magic", action="store_true", default=False)
    parser.add_argument(*NAMES, type=int)
    args = parser.parse_args()
'''

FORK_SCRIPT = """#!/usr/bin/env bash
python3 -m openrlhf.cli.train_ppo_ray \\
  --actor.model_name_or_path meta-llama/Llama-3-8B \\
  --reward.model_name_or_path OpenRLHF/RM \\
  --ds.zero_stage 3 \\
  --fork.reward_shaping length \\
  --fork.use_magic \\
  --fork.rewrd_shaping length
"""


def _openrlhf_fork(tmp_path):
    cli = tmp_path / "third_party" / "OpenRLHF" / "openrlhf" / "cli"
    cli.mkdir(parents=True)
    (cli / "train_ppo_ray.py").write_text(FORK_CLI)
    (tmp_path / "train.sh").write_text(FORK_SCRIPT)
    (tmp_path / "pyproject.toml").write_text('[tool.rlhf-lint]\nopenrlhf-source = "third_party/OpenRLHF"\n')
    config = config_from_mapping({"openrlhf-source": "third_party/OpenRLHF"}, str(tmp_path / "pyproject.toml"))
    return config


def test_argparse_rows_are_read_statically():
    rows = {r[0]: r for r in forks.argparse_rows(FORK_CLI)}
    assert rows["--fork.use_magic"][2:5] == ["store_true", "bool", False]
    assert rows["--fork.reward_shaping"][5] == ["none", "length"]
    assert rows["--ds.zero_stage"][3:5] == ["int", 2]
    assert len(rows) == 5  # the call with *NAMES names no literal flag


def test_fork_flags_replace_the_release_table(tmp_path):
    config = _openrlhf_fork(tmp_path)
    result = run([tmp_path / "train.sh"], ["O001"], config)
    found = [(d.code, d.start.line, d.severity.name.lower(), d.message) for d in result.diagnostics]
    # the fork's own flags pass; its typo is still an error, with the fork's flag as the hint
    assert [(c, line) for c, line, _, _ in found] == [("O001", 8)]
    code, line, severity, message = found[0]
    assert severity == "error"
    assert "checkout third_party/OpenRLHF" in message and "set by openrlhf-source" in message
    assert "did you mean `--fork.reward_shaping`?" in message


def test_without_the_source_the_fork_flags_are_unknown(tmp_path):
    _openrlhf_fork(tmp_path)
    result = run([tmp_path / "train.sh"], ["O001"], config_from_mapping({"openrlhf-version": "0.11.0"}))
    assert sorted(d.start.line for d in result.diagnostics if d.code == "O001") == [6, 7, 8]


def test_fork_table_is_cached_by_file_stats(tmp_path):
    _openrlhf_fork(tmp_path)
    root = str(tmp_path / "third_party" / "OpenRLHF")
    first = forks.openrlhf_flags(root)
    assert forks.openrlhf_flags(root) is first  # unchanged files: read once
    path = os.path.join(root, "openrlhf", "cli", "train_ppo_ray.py")
    with open(path, "a") as fh:
        fh.write('    parser.add_argument("--fork.extra", type=int, default=1)\n')
    os.utime(path, ns=(1, 1))
    changed = forks.openrlhf_flags(root)
    assert changed is not first and any(r[0] == "--fork.extra" for r in changed["train_ppo_ray"])


def test_missing_source_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigError, match="no such folder"):
        config_from_mapping({"verl-source": "third_party/verl"}, str(tmp_path / "pyproject.toml"))
    with pytest.raises(ConfigError, match="must be a path"):
        config_from_mapping({"openrlhf-source": 3}, str(tmp_path / "pyproject.toml"))


VERL_GENERATED = """actor_rollout_ref:
  rollout:
    name: vllm
    gpu_memory_utilization: 0.5
    fork_sampler: none
trainer:
  nnodes: 1
  n_gpus_per_node: 8
"""

VERL_SCRIPT = """#!/usr/bin/env bash
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.fork_sampler=nucleus \\
    actor_rollout_ref.rollout.fork_samplr=nucleus \\
    trainer.nnodes=1
"""


def test_verl_fork_keys(tmp_path):
    folder = tmp_path / "third_party" / "verl" / "verl" / "trainer" / "config"
    folder.mkdir(parents=True)
    (folder / "_generated_ppo_trainer.yaml").write_text(VERL_GENERATED)
    (tmp_path / "run.sh").write_text(VERL_SCRIPT)
    config = config_from_mapping({"verl-source": "third_party/verl"}, str(tmp_path / "pyproject.toml"))
    result = run([tmp_path / "run.sh"], ["V001"], config)
    found = [(d.start.line, d.severity.name.lower(), d.message) for d in result.diagnostics]
    assert [(line, sev) for line, sev, _ in found] == [(4, "error")]
    assert "verl checkout third_party/verl" in found[0][2] or "checkout third_party/verl" in found[0][2]
    assert "did you mean `actor_rollout_ref.rollout.fork_sampler`?" in found[0][2]


def _vendored_verl(root, fsdp_workers: str):
    package = root / "verl"
    (package / "trainer" / "config").mkdir(parents=True)
    (package / "workers").mkdir()
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        VERL_GENERATED.replace("actor_rollout_ref:\n", "actor_rollout_ref:\n  actor:\n    strategy: fsdp\n"))
    (package / "trainer" / "main_ppo.py").write_text("# the trainer's entry point\n")
    (package / "workers" / "fsdp_workers.py").write_text(fsdp_workers)


def test_a_verl_package_in_the_repository_is_read_as_its_checkout(tmp_path):
    # TinyZero, rllm, PRIME carry a modified verl: `python3 -m verl.trainer.main_ppo` run there imports it, so its
    # keys decide (fork_sampler exists only there) and a misspelt one is an error, without any configuration
    _vendored_verl(tmp_path, "cpu_offload = None if role == 'actor' else CPUOffload(offload_params=True)\n")
    (tmp_path / "run.sh").write_text(VERL_SCRIPT)
    result = run([tmp_path], ["V001"], Config(root=str(tmp_path)))
    found = [(d.start.line, d.severity.name.lower(), d.message) for d in result.diagnostics]
    assert [(line, sev) for line, sev, _ in found] == [(4, "error")]
    assert "vendored in the repository" in found[0][2]
    project, _ = build_project([str(tmp_path)], Config(root=str(tmp_path)))
    (job,) = [j for j in project.jobs if j.framework == "verl"]  # the package's own defaults are no job
    # its workers' code, not its version file (rllm's says 0.1), says the reference is offloaded to the CPU
    assert job.value("verl.inference_cpu_offload") is True


def test_a_vendored_verl_without_the_forced_offload_keeps_the_reference_on_the_gpu(tmp_path):
    _vendored_verl(tmp_path, "cpu_offload=CPUOffload(offload_params=self.config.model.fsdp_config.param_offload)\n")
    (tmp_path / "run.sh").write_text(VERL_SCRIPT)
    project, _ = build_project([str(tmp_path)], Config(root=str(tmp_path)))
    (job,) = [j for j in project.jobs if j.framework == "verl"]
    assert job.value("verl.inference_cpu_offload") is False


def test_two_vendored_verl_copies_are_ambiguous_and_read_as_releases(tmp_path):
    for name in ("a", "b"):
        _vendored_verl(tmp_path / name, "\n")
    (tmp_path / "run.sh").write_text(VERL_SCRIPT)
    project, _ = build_project([str(tmp_path)], Config(root=str(tmp_path)))
    jobs = [j for j in project.jobs if j.path.endswith("run.sh")]
    assert len(jobs) == 1 and jobs[0].verl.fork is None


def test_verl_hydra_defaults_list_is_composed(tmp_path):
    folder = tmp_path / "verl" / "trainer" / "config"
    (folder / "rollout").mkdir(parents=True)
    (folder / "ppo_trainer.yaml").write_text("defaults:\n  - rollout@actor_rollout_ref.rollout: rollout\n"
                                             "  - _self_\ntrainer:\n  nnodes: 1\n")
    (folder / "rollout" / "rollout.yaml").write_text("defaults:\n  - base\nname: vllm\n")
    (folder / "rollout" / "base.yaml").write_text("temperature: 1.0\n")
    keys = forks.verl_keys(str(tmp_path))
    assert keys["actor_rollout_ref.rollout.name"] == "vllm"
    assert keys["actor_rollout_ref.rollout.temperature"] == 1.0
    assert keys["actor_rollout_ref"] == {} and keys["trainer.nnodes"] == 1


DS_ZERO_CONFIG = '''from pydantic import Field


class DeepSpeedZeroConfig(DeepSpeedConfigModel):
    stage: int = 0
    fork_bucket_size: int = Field(1, alias="fork_bucket")
'''


def test_deepspeed_fork_fields_count_as_known(tmp_path):
    zero = tmp_path / "ds_fork" / "deepspeed" / "runtime" / "zero"
    zero.mkdir(parents=True)
    (zero / "config.py").write_text(DS_ZERO_CONFIG)
    (tmp_path / "ds_config.json").write_text(
        '{"train_micro_batch_size_per_gpu": 1,\n "zero_optimization": {"stage": 3, "fork_bucket_size": 5,\n'
        '  "fork_bucket": 5, "overlap_com": true}}\n')
    config = config_from_mapping({"deepspeed-source": "ds_fork"}, str(tmp_path / "pyproject.toml"))
    result = run([tmp_path / "ds_config.json"], ["D001"], config)
    found = [(d.start.line, d.severity.name.lower(), d.message) for d in result.diagnostics]
    assert [(line, sev) for line, sev, _ in found] == [(3, "error")]
    assert "'overlap_com'" in found[0][2] and "deepspeed-source" in found[0][2]
    # without the checkout, the fork's fields are unknown keys
    plain = run([tmp_path / "ds_config.json"], ["D001"], config_from_mapping({}))
    assert len([d for d in plain.diagnostics if d.code == "D001"]) == 3


def test_cli_exits_2_on_a_missing_checkout(tmp_path):
    from lintutil import run_cli

    (tmp_path / "pyproject.toml").write_text('[tool.rlhf-lint]\nopenrlhf-source = "third_party/OpenRLHF"\n')
    (tmp_path / "train.sh").write_text(FORK_SCRIPT)
    proc = run_cli("train.sh", cwd=tmp_path)
    assert proc.returncode == 2
    assert "openrlhf-source" in proc.stderr and "no such folder" in proc.stderr
