"""The hooks of .pre-commit-hooks.yaml, run through real `pre-commit try-repo` (it builds the package in its own
virtual environment, as users' pre-commit does)."""
import os
import subprocess
import sys

import pytest
import yaml

from lintutil import ROOT


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@e"))


def test_hook_definitions_are_consistent():
    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml")) as fh:
        hooks = {h["id"]: h for h in yaml.safe_load(fh)}
    assert set(hooks) == {"rlhf-lint", "rlhf-lint-fix", "rlhf-lint-repo"}
    assert hooks["rlhf-lint-fix"]["entry"].endswith("--fix")
    assert all(h["language"] == "python" for h in hooks.values())


@pytest.fixture
def user_repo(tmp_path):
    repo = tmp_path / "training-repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "ds_config.json").write_text('{"train_batch_size": 8,, }\n')
    (repo / "README.md").write_text("not checked\n")
    _git(repo, "add", ".")
    return repo


def test_try_repo_reports_and_fails(user_repo, tmp_path):
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", ROOT, "rlhf-lint", "--all-files", "--verbose"], cwd=user_repo,
                          capture_output=True, text=True, env=env, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "ds_config.json:1:24: F003 error invalid JSON" in out
    assert "README.md" not in out.split("rlhf-lint", 1)[-1].split("Checked")[0]
