"""The O rules through the runner: a launch script beside a requirements pin, checked and fixed on disk."""
from __future__ import annotations

import os
import shutil
import subprocess

from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint

from openrlhf_harness import FIXTURES


def _repo(tmp_path, script: str, pin: str):
    shutil.copy(os.path.join(FIXTURES, script), tmp_path / "train.sh")
    (tmp_path / "requirements.txt").write_text(pin)
    return str(tmp_path)


def test_pin_decides_the_release_and_fix_converges(tmp_path):
    root = _repo(tmp_path, "O001_new_release_bad.sh", "openrlhf[vllm]==0.11.0\n")
    text = (tmp_path / "train.sh").read_text().replace("# openrlhf-version: 0.11.0\n", "")
    (tmp_path / "train.sh").write_text(text)
    result = lint([root], Config(root=root), Options(select=["O"]))
    got = [(d.code, d.start.line, d.start.column) for d in result.diagnostics]
    assert got == [("O001", 4, 3), ("O006", 4, 3), ("O001", 5, 3), ("O003", 6, 20), ("O004", 7, 24),
                   ("O007", 9, 3), ("O005", 10, 3), ("O005", 11, 3)]
    assert "pinned in requirements.txt:1" in result.diagnostics[0].message

    fixed = lint([root], Config(root=root), Options(select=["O"], fix=True))
    assert fixed.fixed == 3
    after = (tmp_path / "train.sh").read_text()
    assert "--ds.zero_stage 3" in after and "--ref.offload --reward.offload" in after
    assert "--ds.packing_samples \\\n" in after
    assert subprocess.run(["bash", "-n", str(tmp_path / "train.sh")]).returncode == 0
    again = lint([root], Config(root=root), Options(select=["O"], fix=True))
    assert again.fixed == 0 and (tmp_path / "train.sh").read_text() == after


def test_older_pin_turns_the_fix_around(tmp_path):
    root = _repo(tmp_path, "O001_old_release_bad.sh", "openrlhf==0.9.5\n")
    lint([root], Config(root=root), Options(select=["O"], fix=True))
    after = (tmp_path / "train.sh").read_text()
    assert "--zero_stage 3" in after and "--ds.zero_stage" not in after
