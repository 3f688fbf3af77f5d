"""The edge of the tables (frameworks/edge.py): newest release per table, one precedence for versions, pins that
cannot be resolved."""
from __future__ import annotations

import pytest

from lintutil import run
from rlhf_lint.engine.config import config_from_mapping
from rlhf_lint.frameworks import edge
from rlhf_lint.schemas import load


def test_newest_known_reads_each_table():
    tags = [t for t in load("openrlhf/openrlhf.json")["tags"] if t != "HEAD"]
    assert edge.newest_known("openrlhf") == tags[-1].lstrip("v")
    assert edge.newest_known("deepspeed") == load("ds_config_keys.json")["deepspeed"]["version"]
    assert edge.newest_known("verl") not in (None, "main")  # "main" is a snapshot, not a release
    assert edge.newest_known("unknown-framework") is None


@pytest.mark.parametrize("version, newest, past", [
    ("0.11.2", "0.11.0", True), ("0.99.0", "0.11.0", True), ("v0.11.0", "0.11.0", False),
    ("0.10.4", "0.11.0", False), ("0.11.0.post1", "0.11.0", True), ("not-a-version", "0.11.0", False),
    ("0.11.2", None, False), ("0.19.8+cu121", "0.19.6", True),
])
def test_is_past(version, newest, past):
    assert edge.is_past(version, newest) is past


def _write(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)


def test_configuration_wins_over_a_pin(tmp_path):
    _write(tmp_path, {"requirements.txt": "torch==2.6.0\nverl==0.4.1\n", "run.sh": "python3 -m verl.trainer.main_ppo trainer.nnodes=1\n"})
    from rlhf_lint.engine.runner import build_project

    project, _ = build_project([str(tmp_path)], config_from_mapping({}, str(tmp_path / "pyproject.toml")))
    pinned = edge.target_version(project, "verl")
    assert (pinned.version, pinned.how, pinned.origin) == ("0.4.1", "pin", "pinned in requirements.txt:2")
    project, _ = build_project([str(tmp_path)], config_from_mapping({"verl-version": "0.3.0"}))
    configured = edge.target_version(project, "verl")
    assert (configured.version, configured.how, configured.origin) == ("0.3.0", "config", "set by verl-version")
    assert edge.target_version(project, "trl") is None


@pytest.mark.parametrize("text, why", [
    ("git+https://github.com/volcengine/verl@3f2a1b9c0d", "at commit 3f2a1b9c0d"),
    ("verl @ git+https://github.com/volcengine/verl.git@v0.4.1", "at 'v0.4.1'"),
    ("git+https://github.com/huggingface/trl.git", "without a commit"),
    (".", "a local path"),
    (".[dev]", "a local path"),
    ("..", "a local path"),
    ("./third_party/OpenRLHF", "a local path"),
    ("file:///opt/src/deepspeed", "a local path"),
    ("https://example.com/x/deepspeed-src.tar.gz", "a URL archive"),
])
def test_why_a_pin_cannot_be_resolved(text, why):
    assert why in edge._why(text)


@pytest.mark.parametrize("text", [
    "https://example.com/flash_attn-2.7.4+cu12torch2.6-cp310-cp310-linux_x86_64.whl",
    "./wheels/deepspeed-0.19.6-py3-none-any.whl", "deepspeed==0.19.6", "torch>=2.4",
])
def test_resolvable_requirements_are_not_reported(text):
    assert edge._why(text) is None


def test_pyproject_and_dockerfile_pins_are_checked_too(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": '[project]\nname = "x"\ndependencies = [\n  "verl @ git+https://github.com/volcengine/verl@3f2a1b9c",\n]\n',
        "Dockerfile": "FROM python:3.10\nRUN pip install git+https://github.com/OpenRLHF/OpenRLHF@abc1234#egg=openrlhf\n",
    })
    result = run([tmp_path], ["P007"])
    where = sorted((d.path.rsplit("/", 1)[-1], d.start.line) for d in result.diagnostics)
    assert where == [("Dockerfile", 2), ("pyproject.toml", 4)]


def test_accelerate_past_the_edge_is_said(tmp_path, monkeypatch):
    # the accelerate table names a commit today; once it lists releases, a newer target is said in A004
    monkeypatch.setitem(edge._NEWEST, "accelerate", lambda: "1.10.0")
    _write(tmp_path, {"accelerate_config.yaml": "distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                                                "  zero_stage: 2\n  brand_new_key: 1\nnum_processes: 2\n"})
    result = run([tmp_path / "accelerate_config.yaml"], ["A004"], config_from_mapping({"accelerate-version": "1.12.0"}))
    messages = [d.message for d in result.diagnostics if d.code == "A004"]
    assert len(messages) == 1
    assert "accelerate 1.12.0 (set by accelerate-version) is newer than the newest release rlhf-lint knows, 1.10.0" \
        in messages[0]
    within = run([tmp_path / "accelerate_config.yaml"], ["A004"], config_from_mapping({"accelerate-version": "1.9.0"}))
    assert "newer than" not in within.diagnostics[0].message


def test_one_info_per_repository(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _write(tmp_path, {"requirements.txt": "openrlhf==0.11.3\ndeepspeed==0.19.9\n"})
    for sub in ("a", "b"):
        (tmp_path / sub / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 1, '
                                                       '"zero_optimization": {"stage": 2, "new_key": 1}}\n')
    result = run([tmp_path], ["P006", "D001"])
    infos = [d for d in result.diagnostics if d.code == "P006"]
    assert len(infos) == 1
    assert "OpenRLHF 0.11.3" in infos[0].message and "DeepSpeed 0.19.9" in infos[0].message
    assert "python -m rlhf_lint.schemas.build --all" in infos[0].message
    assert {d.severity.name for d in result.diagnostics if d.code == "D001"} == {"WARNING"}
    assert all(d.fix is None for d in result.diagnostics if d.code == "D001")


@pytest.mark.parametrize("name, text", [
    ("requirements.txt", "verl==0.4.1\n"),
    ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["verl==0.4.1"]\n'),
    ("setup.py", 'from setuptools import setup\nsetup(name="x", install_requires=["verl==0.4.1"])\n'),
    ("Dockerfile", "FROM python:3.10\nRUN pip install verl==0.4.1\n"),
])
def test_every_pin_file_gives_the_version(tmp_path, name, text):
    from rlhf_lint.engine.runner import build_project

    _write(tmp_path, {name: text})
    project, _ = build_project([str(tmp_path)], config_from_mapping({}, str(tmp_path / "rlhf-lint.toml")))
    target = edge.target_version(project, "verl")
    assert target is not None and target.version == "0.4.1" and target.origin.startswith(f"pinned in {name}:")


def test_one_info_across_groups_of_files(tmp_path):
    # two folders that name nothing of each other are checked as separate groups; the info is still said once
    for sub in ("a", "b"):
        (tmp_path / sub / ".git").mkdir(parents=True)  # two repositories: two groups
        (tmp_path / sub / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 1, '
                                                       '"zero_optimization": {"stage": 2}}\n')
    config = config_from_mapping({"deepspeed-version": "0.19.9"}, str(tmp_path / "pyproject.toml"))
    result = run([tmp_path / "a", tmp_path / "b"], ["P006"], config)
    assert [d.code for d in result.diagnostics] == ["P006"]
