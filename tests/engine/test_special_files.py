"""Files that are not what their names say, from a pull request of a stranger: FIFOs, devices, symlinks to
/dev/zero, /dev/stdin or out of the tree, huge or deeply nested input. Each gets a diagnostic or a message in
bounded time and memory, and the other files are still checked.

A test that meets a FIFO or a device runs the CLI in a process of its own, with a timeout and a memory limit: the
bug it guards against blocks forever or reads without end."""
import contextlib
import json
import os
import subprocess
import sys

import pytest

from lintutil import ROOT, run_cli, run_lint

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev are POSIX")

BOGUS = '{"train_batch_size": 8, "bogus": 1}\n'  # D002: the file was checked
LIMITS = {"timeout": 60, "max_memory": 2 << 30}


def _checked(proc, name="ds_config.json"):
    return f"{name}:1:25: D002" in proc.stdout


# -- the shared reader ---------------------------------------------------------------------------------------------
def test_read_regular_refuses_devices_folders_and_files_over_the_limit(tmp_path):
    from rlhf_lint.readers.source import FileTooLarge, NotRegularFile, read_regular

    with pytest.raises(NotRegularFile):
        read_regular("/dev/null", 10)
    with pytest.raises(NotRegularFile):
        read_regular(str(tmp_path), 10)
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 11)
    with pytest.raises(FileTooLarge, match="over the 10 bytes limit"):
        read_regular(str(big), 10)
    assert read_regular(str(big), 10, prefix=True)[0] == b"x" * 10
    assert read_regular(str(big), 11)[0] == b"x" * 11


def test_read_regular_refuses_a_symlink_out_of_the_roots_only(tmp_path):
    from rlhf_lint.readers.source import OutsideRoots, read_regular

    (tmp_path / "repo" / "conf").mkdir(parents=True)
    (tmp_path / "secret").write_text("hunter2\n")
    (tmp_path / "repo" / "conf" / "real.json").write_text("{}\n")
    (tmp_path / "repo" / "out.json").symlink_to(tmp_path / "secret")
    (tmp_path / "repo" / "in.json").symlink_to("conf/real.json")
    roots = (os.path.realpath(tmp_path / "repo"),)
    with pytest.raises(OutsideRoots, match="resolves to .*secret, outside the paths being checked"):
        read_regular(str(tmp_path / "repo" / "out.json"), 100, roots=roots)
    assert read_regular(str(tmp_path / "repo" / "in.json"), 100, roots=roots)[0] == b"{}\n"
    assert read_regular(str(tmp_path / "repo" / "out.json"), 100)[0] == b"hunter2\n"  # no roots: not confined


# -- .gitignore and .git/info/exclude (report item 1) --------------------------------------------------------------
@pytest.mark.parametrize("where", [".gitignore", "sub/.gitignore", ".git/info/exclude"])
@pytest.mark.parametrize("what", ["fifo", "/dev/zero"])
def test_an_ignore_file_that_is_a_fifo_or_dev_zero_is_skipped_with_a_warning(tmp_path, where, what):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ds_config.json").write_text(BOGUS)
    if what == "fifo":
        os.mkfifo(tmp_path / where)
    else:
        (tmp_path / where).symlink_to(what)
    proc = run_cli("--no-cache", ".", cwd=tmp_path, **LIMITS)
    assert proc.returncode == 1 and _checked(proc), proc.stdout + proc.stderr
    assert "its patterns are not applied" in proc.stderr and os.path.basename(where) in proc.stderr


def test_a_symlinked_gitignore_is_not_followed_as_git_does_not(tmp_path):
    from rlhf_lint.engine.gitignore import GitIgnore

    (tmp_path / ".git").mkdir()
    (tmp_path / "patterns").write_text("*.json\n")
    (tmp_path / ".gitignore").symlink_to("patterns")
    ignore = GitIgnore()
    assert not ignore.ignored(str(tmp_path / "ds_config.json"))
    assert "is a symlink, which git does not follow" in " ".join(ignore.warnings.values())


def test_a_gitignore_over_the_limit_is_skipped_with_a_warning(tmp_path, monkeypatch):
    from rlhf_lint.engine import gitignore

    monkeypatch.setattr(gitignore, "MAX_IGNORE_BYTES", 16)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*.json\n" * 3)
    ignore = gitignore.GitIgnore()
    assert not ignore.ignored(str(tmp_path / "ds_config.json"))
    assert "over the 16 bytes limit" in " ".join(ignore.warnings.values())


# -- standard input (report item 2) --------------------------------------------------------------------------------
def test_endless_standard_input_is_f002_after_the_limit(tmp_path):
    with open("/dev/zero", "rb") as zero:
        proc = run_cli("-", "--stdin-filename", "ds_config.json", cwd=tmp_path, stdin=zero, **LIMITS)
    assert proc.returncode == 1, proc.stderr
    assert "ds_config.json:1:1: F002 warning file is over the 10 MiB limit: skipped" in proc.stdout


def test_standard_input_over_the_limit_passes_through_fix_unchanged(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (11 << 20) + b'{"bogus": 1}\n')
    with open(big, "rb") as fh:
        proc = subprocess.run([sys.executable, "-m", "rlhf_lint", "-", "--stdin-filename", "ds_config.json", "--fix"],
                              stdin=fh, capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.stdout == big.read_bytes()
    assert b"F002" in proc.stderr and proc.returncode == 1


# -- FIFOs and /dev/stdin where several repositories are grouped (report item 3) ------------------------------------
def _two_repositories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "pyproject.toml").write_text("")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "ds_config.json").write_text(BOGUS)


def test_a_fifo_in_a_tree_of_two_repositories_is_not_opened(tmp_path):
    _two_repositories(tmp_path)
    os.mkfifo(tmp_path / "b" / "notes.json")
    proc = run_cli("--no-cache", ".", cwd=tmp_path, **LIMITS)
    assert proc.returncode == 1 and _checked(proc), proc.stdout + proc.stderr


def test_a_symlink_to_dev_stdin_that_never_ends_is_not_opened(tmp_path):
    _two_repositories(tmp_path)
    (tmp_path / "b" / "train.sh").symlink_to("/dev/stdin")
    read_end, write_end = os.pipe()  # a writer that never writes nor closes, as `sleep 100 | rlhf-lint .`
    try:
        proc = run_cli("--no-cache", ".", cwd=tmp_path, stdin=read_end, **LIMITS)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert proc.returncode == 1 and _checked(proc), proc.stdout + proc.stderr


def test_the_language_server_does_not_open_a_fifo_of_the_workspace(tmp_path):
    _two_repositories(tmp_path)
    os.mkfifo(tmp_path / "b" / "notes.json")
    (tmp_path / "c").mkdir()
    opened = tmp_path / "c" / "ds_config.json"
    opened.write_text(BOGUS)
    code = ("import sys; from rlhf_lint.cli.server import lint_buffer\n"
            "diagnostics, _ = lint_buffer(sys.argv[1], open(sys.argv[1]).read(), sys.argv[2])\n"
            "print(sorted(d.code for d in diagnostics))")
    proc = subprocess.run([sys.executable, "-c", code, str(opened), str(tmp_path)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 0 and "D002" in proc.stdout, proc.stderr


def test_a_fifo_in_a_configured_fork_checkout_is_not_opened(tmp_path):
    os.mkfifo(tmp_path / "train_ppo_ray.py")  # openrlhf-source comes from the repository's own configuration
    code = ("import sys; from rlhf_lint.frameworks import forks\n"
            "print(forks.checkout_text(sys.argv[1], 'train_ppo_ray.py'))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "None\n", proc.stderr


def test_estimate_with_a_model_config_that_is_not_utf8_is_a_message_not_a_traceback(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_bytes(b'{"model_type": "llama", "note": "\xff"}')
    proc = run_cli("estimate", "--model", "./model", "--gpus", "8", "--gpu", "A100-80GB", cwd=tmp_path, **LIMITS)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "is not in the catalog" in proc.stderr


# -- baselines (report item 11) ------------------------------------------------------------------------------------
def test_a_deeply_nested_baseline_is_a_clear_error(tmp_path):
    from rlhf_lint.engine.baseline import BaselineError, load

    deep = tmp_path / "baseline.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(BaselineError, match="nested too deep"):
        load(str(deep))


def test_a_baseline_over_the_limit_is_refused_unread(tmp_path, monkeypatch):
    from rlhf_lint.engine import baseline

    big = tmp_path / "baseline.json"
    big.write_text(json.dumps({"version": 1, "findings": []}) + " " * 100)
    monkeypatch.setattr(baseline, "MAX_BASELINE_BYTES", 100)
    with pytest.raises(baseline.BaselineError, match="over the 100 bytes limit"):
        baseline.load(str(big))


def test_a_fifo_baseline_is_an_error_exit_2(tmp_path):
    (tmp_path / "ds_config.json").write_text(BOGUS)
    os.mkfifo(tmp_path / "baseline.json")
    proc = run_cli("--no-cache", "--baseline", "baseline.json", "ds_config.json", cwd=tmp_path, **LIMITS)
    assert proc.returncode == 2 and "cannot read baseline baseline.json: not a regular file" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


# -- symlinks out of the tree (report item 12) ---------------------------------------------------------------------
def _repo_with_links(tmp_path):
    repo = tmp_path / "repo"
    (repo / "conf").mkdir(parents=True)
    (tmp_path / "secret").mkdir()
    for name in ("env", "passwd"):
        (tmp_path / "secret" / name).write_text("AWS_SECRET_ACCESS_KEY=hunter2\n")
    (repo / "ds_config.json").symlink_to("../secret/env")
    (repo / "requirements.txt").symlink_to(tmp_path / "secret" / "passwd")
    (repo / "conf" / "real.json").write_text(BOGUS)
    (repo / "conf" / "ds_config.json").symlink_to("real.json")  # inside the tree: checked as before
    return repo


def test_a_symlink_out_of_the_tree_is_f001_and_its_target_never_echoed(tmp_path):
    repo = _repo_with_links(tmp_path)
    proc = run_cli("--no-cache", "repo", cwd=tmp_path)
    assert "hunter2" not in proc.stdout + proc.stderr
    for name, target in (("repo/ds_config.json", "env"), ("repo/requirements.txt", "passwd")):
        target = os.path.realpath(tmp_path / "secret" / target)
        assert f"{name}:1:1: F001 error a symlink that resolves to {target}, outside the paths being checked: not " \
               "read" in proc.stdout, proc.stdout
    assert "repo/conf/ds_config.json:1:25: D002" in proc.stdout and proc.returncode == 1
    # named on the command line, as pre-commit names files, the link is refused the same way
    proc = run_cli("--no-cache", "--output-format", "sarif", repo / "ds_config.json", cwd=tmp_path)
    assert "hunter2" not in proc.stdout and "F001" in proc.stdout


def test_the_target_named_itself_is_checked(tmp_path):
    _repo_with_links(tmp_path)
    result = run_lint([tmp_path / "repo", tmp_path / "secret"])
    assert "F001" not in [d.code for d in result.diagnostics]


# -- deep folders (report item 14) ---------------------------------------------------------------------------------
def test_folders_nested_past_the_bound_are_f001_and_the_rest_is_checked(tmp_path):
    from rlhf_lint.engine.discovery import MAX_FOLDER_DEPTH

    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "ds_config.json").write_text(BOGUS)
    levels = max(1100, MAX_FOLDER_DEPTH + 10)  # past the bound, and past the recursion limit of os.walk
    with _nested(tmp_path, levels):
        result = run_lint([tmp_path])
    found = [(d.code, d.path) for d in result.diagnostics]
    assert ("D002", str(tmp_path / "ok" / "ds_config.json")) in found
    [skipped] = [d for d in result.diagnostics if d.code == "F001"]
    assert f"nested more than {MAX_FOLDER_DEPTH} levels deep: its files were not checked" in skipped.message
    assert skipped.path.startswith(str(tmp_path / "d" / "d"))


@contextlib.contextmanager
def _nested(top, levels: int):
    """``levels`` folders ``d/d/...`` under ``top``, made and removed one level at a time, each relative to its
    parent (os.makedirs and pytest's shutil.rmtree recurse per level; full paths make it quadratic)."""
    fds = [os.open(top, os.O_RDONLY)]
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fds[-1])
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        yield
    finally:
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir("d", dir_fd=fds[-1])
        os.close(fds[0])
