"""A 1 MB file of any kind is checked in seconds: each heavy reader has a byte bound per kind (the largest real
launch script seen is 14 KB); a file over it is F004, not minutes of evaluation (a 1 MB script: 26 s before)."""
import json
import time

import pytest

from lintutil import run_cli
from rlhf_lint.engine.project import MAX_PARSE_BYTES

ONE_MB = {
    "train.sh": lambda n: "".join(f"deepspeed --num_gpus 8 train.py --zero_stage 3 --micro_batch {i}\n"
                                  for i in range(n // 60)),
    "requirements.txt": lambda n: "".join(f"package-{i}==1.{i % 50}.0\n" for i in range(n // 20)),
    "Dockerfile": lambda n: "FROM python:3.10\n" + "".join(f"RUN pip install package-{i}==1.0\n" for i in range(n // 32)),
    "ppo_trainer.yaml": lambda n: "actor_rollout_ref:\n" + "".join(f"  key_{i}: {{a: {i}}}\n" for i in range(n // 20)),
    "orz_config.py": lambda n: "from orz.ppo import PPOExpConfig\n\nclass C(PPOExpConfig):\n"
                               + "".join(f"    field_{i}: int = {i}\n" for i in range(n // 20)),
}


@pytest.mark.parametrize("name", sorted(ONE_MB))
def test_a_megabyte_config_is_f004_in_seconds(tmp_path, name):
    (tmp_path / name).write_text(ONE_MB[name](1 << 20))
    started = time.monotonic()
    proc = run_cli("--no-cache", "--format", "json", name, cwd=tmp_path)
    assert time.monotonic() - started < 20
    found = json.loads(proc.stdout)["diagnostics"]
    assert [d["code"] for d in found] == ["F004"], found
    assert "KiB rlhf-lint reads" in found[0]["message"] and "not checked" in found[0]["message"]


def test_a_script_under_its_bound_is_still_checked(tmp_path):
    text = ONE_MB["train.sh"](MAX_PARSE_BYTES["shell"] // 2)
    (tmp_path / "train.sh").write_text(text + "deepspeed train.py --zero_stage 4\n")
    proc = run_cli("--no-cache", "--format", "json", "train.sh", cwd=tmp_path)
    codes = {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}
    assert "F004" not in codes and "F010" not in codes


@pytest.mark.parametrize("depth", [150, 1000])
def test_a_python_config_nesting_past_the_bound_is_f004_not_a_recursion_error(tmp_path, depth):
    (tmp_path / "orz_ppo.py").write_text("from orz.ppo import PPOExpConfig\n\nclass C(PPOExpConfig):\n"
                                         f"    x: int = {'(' * depth}1{')' * depth}\n")
    proc = run_cli("--no-cache", "--format", "json", "orz_ppo.py", cwd=tmp_path)
    codes = [d["code"] for d in json.loads(proc.stdout)["diagnostics"]]
    assert "F010" not in codes and "F004" in codes, codes


def test_requirements_over_the_bound_are_not_read_line_by_line_by_p007(tmp_path):
    # the fuzz campaign's slowest file: 200,000 lines of requirements took 2.3 s in P007 after the F004 bound
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import Options, lint

    (tmp_path / "requirements.txt").write_text("git+https://github.com/a/b.git\n" + "\n" * 200_000)
    got = lint([str(tmp_path)], Config(root=str(tmp_path)), Options(jobs=1))
    codes = [d.code for d in got.diagnostics]
    assert "F004" in codes and "P007" not in codes
    (tmp_path / "requirements.txt").write_text("git+https://github.com/a/b.git\n")
    assert "P007" in [d.code for d in lint([str(tmp_path)], Config(root=str(tmp_path)), Options(jobs=1)).diagnostics]
