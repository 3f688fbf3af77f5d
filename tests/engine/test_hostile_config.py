"""pyproject.toml files that are not UTF-8, nest too deep or hold integers Python refuses: one line and exit 2 for
the configuration that applies, a diagnostic for any other pyproject.toml in the tree, never a traceback."""
import pytest

from lintutil import run_cli

BROKEN = {
    "not-utf8": b"[tool.rlhf-lint]\nselect = [\"\xff\xfe\"]\n",
    "deep": b"[tool.rlhf-lint]\nx = " + b"[" * 1000 + b"]" * 1000 + b"\n",
    "digits": b"[tool.rlhf-lint]\nx = " + b"9" * 5000 + b"\n",
}


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("where", ["tree", "parent"])
def test_a_broken_configuration_is_one_line_exit_2(tmp_path, case, where):
    tree = tmp_path / "repo" if where == "parent" else tmp_path
    tree.mkdir(exist_ok=True)
    (tmp_path / "pyproject.toml").write_bytes(BROKEN[case])
    (tree / "ds_config.json").write_text('{"train_batch_size": 8}\n')
    proc = run_cli("--no-cache", ".", cwd=tree)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlhf-lint: error: ") and "pyproject.toml: " in lines[0], lines


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_pyproject_without_our_table_is_a_diagnostic(tmp_path, case):
    (tmp_path / "pyproject.toml").write_bytes(BROKEN[case].replace(b"[tool.rlhf-lint]", b"[tool.other]"))
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}\n')
    proc = run_cli("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, (proc.stdout, proc.stderr)
    import json
    codes = {(d["code"], d["path"].rsplit("/", 1)[-1]) for d in json.loads(proc.stdout)["diagnostics"]}
    assert codes & {("F001", "pyproject.toml"), ("F003", "pyproject.toml")}, codes


def test_a_broken_pyproject_in_a_parent_without_our_table_is_ignored(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"x = " + b"[" * 1000 + b"]" * 1000 + b"\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ds_config.json").write_text('{"train_batch_size": 8}\n')
    proc = run_cli("--no-cache", ".", cwd=repo)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr


def test_a_broken_pyproject_of_200000_blank_lines_is_read_at_once(tmp_path):
    # the check for a [tool.rlhf-lint] table in a pyproject that is not TOML was a quadratic regex: a minute
    import time

    (tmp_path / "pyproject.toml").write_bytes(b"[project\n" + b"\n" * 200_000 + b"x = [\n")
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}\n')
    started = time.monotonic()
    proc = run_cli("--no-cache", "-q", ".", cwd=tmp_path)
    assert time.monotonic() - started < 20 and "Traceback" not in proc.stderr
