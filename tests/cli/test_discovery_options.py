"""Discovery from the command line: .gitignore honoured (respect-gitignore, --no-respect-gitignore) and
--force-exclude, so that pre-commit, which names files one by one, skips what `rlhf-lint .` skips."""
import pytest
import yaml

from lintutil import ROOT, run_cli

BAD = "{,}\n"


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "rlhf-lint.toml").write_text('exclude = ["legacy"]\n')
    for folder in ("build", "legacy", "src"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ds_config.json").write_text(BAD)
    return tmp_path


def paths_reported(proc):
    return {line.split(":", 1)[0] for line in proc.stdout.splitlines() if ": F003 " in line}


def test_gitignored_folder_is_skipped(repo):
    assert paths_reported(run_cli(".", cwd=repo)) == {"src/ds_config.json"}


def test_no_respect_gitignore_option_and_setting(repo):
    assert paths_reported(run_cli("--no-respect-gitignore", ".", cwd=repo)) == {
        "src/ds_config.json", "build/ds_config.json"}
    (repo / "rlhf-lint.toml").write_text('exclude = ["legacy"]\nrespect-gitignore = false\n')
    assert paths_reported(run_cli(".", cwd=repo)) == {"src/ds_config.json", "build/ds_config.json"}


def test_explicit_files_are_checked_unless_force_exclude(repo):
    named = ["build/ds_config.json", "legacy/ds_config.json", "src/ds_config.json"]
    assert paths_reported(run_cli(*named, cwd=repo)) == set(named)  # as ruff: a named file is checked
    assert paths_reported(run_cli("--force-exclude", *named, cwd=repo)) == {"src/ds_config.json"}
    (repo / "rlhf-lint.toml").write_text('exclude = ["legacy"]\nforce-exclude = true\n')
    assert paths_reported(run_cli(*named, cwd=repo)) == {"src/ds_config.json"}


def test_force_exclude_with_only_excluded_files_exits_clean(repo):
    proc = run_cli("--force-exclude", "build/ds_config.json", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_config_setting_of_a_wrong_type_is_a_usage_error(repo):
    (repo / "rlhf-lint.toml").write_text('respect-gitignore = "no"\n')
    proc = run_cli(".", cwd=repo)
    assert proc.returncode == 2 and "respect-gitignore must be true or false" in proc.stderr


def test_pre_commit_hooks_use_force_exclude():
    with open(f"{ROOT}/.pre-commit-hooks.yaml", encoding="utf-8") as fh:
        hooks = yaml.safe_load(fh)
    for hook in hooks:
        if hook.get("pass_filenames", True):
            assert "--force-exclude" in hook["entry"].split(), hook["id"]
