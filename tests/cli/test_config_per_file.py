"""Configuration is resolved per file, as in ruff: the nearest rlhf-lint.toml / .rlhf-lint.toml / pyproject.toml
[tool.rlhf-lint] upward from each file, its relative settings read against its own folder. One run over several
sub-projects gives what one run per sub-project gives, whatever the order of the paths or the starting folder."""
import json

import pytest

from lintutil import run_cli

DS_CONFIG = ('{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "overlap_com": true},\n'
             '  "fp16": {"enabled": true}, "bf16": {"enabled": true}\n}\n')
LAUNCH = "#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed configs/ds_config.json\n"


@pytest.fixture
def mono(tmp_path):
    """Three sub-projects with different configurations, and one file under no configuration at all."""
    layouts = {
        "alpha": ("pyproject.toml", '[project]\nname = "alpha"\n[tool.rlhf-lint]\nignore = ["D012"]\n'
                                    'exclude = ["legacy"]\ndeepspeed-version = "0.14.0"\n'),
        "beta": ("rlhf-lint.toml", 'per-file-ignores = {"configs/*.json" = ["D001"]}\nfail-on = "error"\n'),
        "gamma": (".rlhf-lint.toml", 'select = ["D012", "F"]\n'),
    }
    for name, (config_name, config_text) in layouts.items():
        (tmp_path / name / "configs").mkdir(parents=True)
        (tmp_path / name / config_name).write_text(config_text)
        (tmp_path / name / "configs" / "ds_config.json").write_text(DS_CONFIG)
        (tmp_path / name / "train.sh").write_text(LAUNCH)
        (tmp_path / name / "legacy").mkdir()
        (tmp_path / name / "legacy" / "ds_config.json").write_text(DS_CONFIG)
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "ds_config.json").write_text(DS_CONFIG)
    return tmp_path


def findings(*args, cwd):
    proc = run_cli("--format", "json", "--no-cache", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    rows = json.loads(proc.stdout)
    rows = rows["diagnostics"] if isinstance(rows, dict) else rows
    return proc.returncode, sorted((r["path"].replace("\\", "/"), r["code"], r["line"], r["column"], r["message"])
                                   for r in _flat(rows))


def _flat(rows):
    for r in rows:
        start = r.get("start") or r.get("location") or {}
        yield {"path": r.get("path") or r.get("filename"), "code": r["code"], "message": r["message"],
               "line": start.get("line", r.get("line")), "column": start.get("column", r.get("column"))}


def test_each_file_gets_its_own_configuration(mono):
    _, rows = findings("alpha", "beta", "gamma", "loose", cwd=mono)
    by_path = {}
    for path, code, *_rest in rows:
        by_path.setdefault(path, set()).add(code)
    assert by_path["alpha/configs/ds_config.json"] == {"D001"}  # D012 ignored by alpha's pyproject
    assert "alpha/legacy/ds_config.json" not in by_path  # alpha's exclude, relative to alpha/
    assert "beta/legacy/ds_config.json" in by_path  # beta does not exclude legacy
    assert by_path["beta/configs/ds_config.json"] == {"D012"}  # D001 ignored per file, glob relative to beta/
    assert by_path["gamma/configs/ds_config.json"] == {"D012"}  # gamma selects D012 and F only
    assert by_path["loose/ds_config.json"] == {"D001", "D012"}  # no configuration: the defaults
    alpha_d001 = [m for p, c, _l, _c, m in rows if p == "alpha/configs/ds_config.json"]
    assert "0.14" in alpha_d001[0]  # alpha's deepspeed-version, not another sub-project's


def test_one_run_over_sub_projects_equals_one_run_per_sub_project(mono):
    together = findings("alpha", "beta", "gamma", "loose", cwd=mono)[1]
    assert findings("loose", "gamma", "beta", "alpha", cwd=mono)[1] == together  # order of the paths
    assert findings(".", cwd=mono)[1] == together
    separately = []
    for name in ("alpha", "beta", "gamma", "loose"):
        separately += findings(name, cwd=mono)[1]
    assert sorted(separately) == together
    # started inside a sub-project, the same findings for its files (paths relative to there)
    inside = findings(".", cwd=mono / "beta")[1]
    assert sorted((f"beta/{p}", *rest) for p, *rest in inside) == [r for r in together if r[0].startswith("beta/")]


WARNING_ONLY = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}\n}\n'


def test_exit_code_uses_each_files_fail_level(mono):
    # beta fails on errors only (fail-on = "error"), alpha on warnings (the default): the verdict is per file
    for name in ("beta", "alpha"):
        (mono / name / "configs" / "ds_config.json").write_text(WARNING_ONLY)
        (mono / name / "legacy" / "ds_config.json").unlink()
    assert run_cli("--no-cache", "beta", cwd=mono).returncode == 0
    assert run_cli("--no-cache", "alpha", cwd=mono).returncode == 1
    assert run_cli("--no-cache", "beta", "alpha", cwd=mono).returncode == 1
    assert run_cli("--no-cache", "alpha", "beta", "--fail-on", "error", cwd=mono).returncode == 0


def test_explicit_config_overrides_for_all_files(mono):
    (mono / "only-d012.toml").write_text('select = ["D012"]\n')
    _, rows = findings("--config", "only-d012.toml", "alpha", "beta", cwd=mono)
    assert {code for _p, code, *_ in rows} == {"D012"}
    assert any(p == "alpha/legacy/ds_config.json" for p, *_ in rows)  # alpha's own exclude no longer applies


def test_a_bad_sub_project_configuration_is_a_usage_error(mono):
    (mono / "gamma" / ".rlhf-lint.toml").write_text('select = ["DD"]\n')
    proc = run_cli("alpha", "gamma", cwd=mono)
    assert proc.returncode == 2 and "'DD'" in proc.stderr


def test_cache_is_keyed_per_configuration(mono):
    first = run_cli("--format", "json", "alpha", cwd=mono)
    (mono / "alpha" / "pyproject.toml").write_text('[tool.rlhf-lint]\nselect = ["D012"]\n')
    second = run_cli("--format", "json", "alpha", cwd=mono)
    assert "D001" in first.stdout and "D001" not in second.stdout and "D012" in second.stdout


def test_launch_naming_a_file_of_another_sub_project_still_resolves(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "rlhf-lint.toml").write_text("gpu = 'A100-80GB'\n")
    (tmp_path / "shared" / "ds_zero2.json").write_text('{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 3,'
                                                       ' "gradient_accumulation_steps": 1}\n')
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "rlhf-lint.toml").write_text("world-size = 2\n")
    (tmp_path / "job" / "train.sh").write_text(
        "#!/bin/bash\ndeepspeed --num_gpus 2 train.py --deepspeed ../shared/ds_zero2.json\n")
    both = run_cli("--format", "json", "--no-cache", "job", "shared", cwd=tmp_path)
    alone = run_cli("--format", "json", "--no-cache", "shared", cwd=tmp_path)
    # the launch names the ds_config: the file becomes a DeepSpeed config with the launch's world size (batch check)
    d010 = [d for d in json.loads(both.stdout)["diagnostics"] if d["code"] == "D010"]
    assert d010 and d010[0]["path"] == "shared/ds_zero2.json", both.stdout + both.stderr
    assert "world size 2" in d010[0]["message"] and "D010" not in alone.stdout


def test_worker_processes_keep_each_files_configuration(mono, monkeypatch):
    from rlhf_lint.engine.config import Configs
    from rlhf_lint.engine.runner import Options, lint

    for name in ("alpha", "beta", "gamma"):
        for i in range(25):  # over the runner's threshold for worker processes
            (mono / name / "configs" / f"ds_config_{i}.json").write_text(DS_CONFIG)
    monkeypatch.chdir(mono)

    def run(jobs):
        configs = Configs()
        result = lint(["."], configs.for_dir("."), Options(jobs=jobs), configs)
        return sorted((d.path, d.code, d.start.line, d.message) for d in result.diagnostics)

    serial = run(1)
    assert {c for p, c, *_ in serial if p.startswith("alpha/")} == {"D001"}
    assert run(2) == serial


def test_one_group_of_two_sub_projects_reads_each_files_framework_version(tmp_path):
    """Files that name each other are checked as one project; job builders and rules that read the project's
    configuration still get each file's own (here the OpenRLHF release each sub-project targets)."""
    launch = ("#!/bin/bash\n# the other project: ../{other}/train.sh\npython3 -m openrlhf.cli.train_ppo_ray "
              "--pretrain Qwen/Qwen2.5-7B --async_train --colocate_all_models --vllm_num_engines 2\n")
    for name, other, version in (("a", "b", "0.10.2"), ("b", "a", "0.8.11")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.sh").write_text(launch.format(other=other))
        (tmp_path / name / "rlhf-lint.toml").write_text(f'openrlhf-version = "{version}"\n')
    together = findings("a", "b", cwd=tmp_path)[1]
    assert findings("b", "a", cwd=tmp_path)[1] == together
    assert sorted(findings("a", cwd=tmp_path)[1] + findings("b", cwd=tmp_path)[1]) == together
    versions = {(p, m.split("(OpenRLHF ")[1].split(",")[0]) for p, c, _l, _c, m in together if c == "O015"}
    assert versions == {("a/train.sh", "v0.10.2"), ("b/train.sh", "v0.8.11")}
    assert {c for p, c, *_ in together if p == "a/train.sh"} >= {"O001"}  # v0.10.2 renamed these flags
    assert "O001" not in {c for p, c, *_ in together if p == "b/train.sh"}
