"""--fix and --diff against hostile trees: no write outside the paths given, nothing reported as fixed that was not
written, and patches that ``git apply`` takes byte for byte (BOM, U+2028, no final newline)."""
import os
import shutil
import subprocess
import sys

import pytest

from lintutil import run_cli, run_lint
from rlhf_lint.reporters.diff import unified_diff

DEPRECATED = '{\n  "train_micro_batch_size_per_gpu": 4,\n  "bfloat16": {"enabled": true}\n}'  # D013 renames bfloat16


def test_fix_neither_reads_nor_writes_through_a_symlink_leaving_the_folder(tmp_path, shout_rule):
    outside = tmp_path / "outside.json"
    outside.write_text('{"a": "shout"}\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "link.json").symlink_to(outside)
    (repo / "own.json").write_text('{"a": "shout"}\n')
    result = run_lint([repo], fix=True, extend_select=["F900"])
    assert outside.read_text() == '{"a": "shout"}\n'
    assert (repo / "own.json").read_text() == '{"a": "quiet"}\n'
    assert result.fixed == 1 and not result.write_errors
    # the link is reported, not read: its target's findings (and text) are not in the report
    [link] = result.diagnostics
    assert (os.path.basename(link.path), link.code) == ("link.json", "F001")
    assert "outside the paths being checked: not read" in link.message


def test_a_symlink_swapped_in_after_the_read_is_not_written_through(tmp_path):
    from rlhf_lint.engine.runner import atomic_write

    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "t.json"
    target.write_text("{}\n")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "l.json").symlink_to(target)
    with pytest.raises(PermissionError, match="outside the paths being checked"):
        atomic_write(str(tmp_path / "repo" / "l.json"), b"[]\n", None, roots=(os.path.realpath(tmp_path / "repo"),))
    assert target.read_text() == "{}\n"


def test_fix_writes_through_a_symlink_inside_the_folder(tmp_path, shout_rule):
    repo = tmp_path / "repo"
    (repo / "conf").mkdir(parents=True)
    (repo / "conf" / "real.json").write_text('{"a": "shout"}\n')
    (repo / "link.json").symlink_to("conf/real.json")
    result = run_lint([repo / "link.json"], fix=True, extend_select=["F900"])
    assert result.fixed == 1 and not result.write_errors
    assert (repo / "conf" / "real.json").read_text() == '{"a": "quiet"}\n'


def test_a_file_named_through_a_symlink_to_elsewhere_is_left_alone(tmp_path, shout_rule):
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "t.json"
    target.write_text('{"a": "shout"}\n')
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "l.json").symlink_to(target)
    result = run_lint([tmp_path / "repo" / "l.json"], fix=True, extend_select=["F900"])
    assert target.read_text() == '{"a": "shout"}\n' and result.fixed == 0
    assert [d.code for d in result.diagnostics] == ["F001"]


def test_a_read_only_file_is_not_counted_as_fixed(tmp_path, shout_rule):
    f = tmp_path / "ro.json"
    f.write_text('{"a": "shout", "b": "shout"}\n')
    os.chmod(f, 0o444)
    result = run_lint([f], fix=True, extend_select=["F900"])
    assert result.fixed == 0 and not result.changed
    assert [d.code for d in result.diagnostics] == ["F900", "F900"]


def test_json_report_of_an_unwritable_fix_keeps_the_findings(tmp_path):
    f = tmp_path / "ds_config.json"
    f.write_text(DEPRECATED + "\n")
    os.chmod(f, 0o444)
    proc = run_cli(f, "--fix", "--format", "json", "--select", "D013", "--no-cache")
    import json

    report = json.loads(proc.stdout)
    assert report["summary"]["fixed"] == 0
    assert [d["code"] for d in report["diagnostics"]] == ["D013"]
    assert proc.returncode == 1 and "not written" in proc.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to apply the patch")
@pytest.mark.parametrize("name, before", [
    ("bom.json", "\ufeff" + DEPRECATED + "\n"),
    ("no_final_newline.json", DEPRECATED),
    ("line_separator.json", DEPRECATED.replace('"train_micro', '"note": "a\u2028b\u2029c\x85d",\n  "train_micro') + "\n"),
    ("crlf.json", DEPRECATED.replace("\n", "\r\n") + "\r\n"),
])
def test_diff_applies_with_git(tmp_path, name, before):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / name).write_bytes(before.encode("utf-8"))
    (repo / "second.json").write_text(DEPRECATED)  # a second file after the first: headers must not glue
    proc = subprocess.run([sys.executable, "-m", "rlhf_lint", "--diff", "--select", "D013", "--no-cache", name,
                           "second.json"], cwd=repo, capture_output=True, timeout=120)  # bytes: CR-LF kept
    assert proc.returncode == 1, proc.stderr
    patch = tmp_path / "p.patch"
    patch.write_bytes(proc.stdout)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    applied = subprocess.run(["git", "apply", "--unsafe-paths", "-v", str(patch)], cwd=repo, capture_output=True,
                             text=True)
    assert applied.returncode == 0, applied.stderr
    fixed = proc_fix(tmp_path, name, before)
    assert (repo / name).read_bytes() == fixed
    assert b'"bf16"' in (repo / "second.json").read_bytes()


def proc_fix(tmp_path, name, before):
    """The bytes --fix writes for the same file: the patch must produce exactly those."""
    other = tmp_path / "fixrun"
    other.mkdir()
    (other / name).write_bytes(before.encode("utf-8"))
    run_cli("--fix", "--select", "D013", "--no-cache", name, cwd=other)
    return (other / name).read_bytes()


def test_diff_marks_a_missing_final_newline():
    patch = unified_diff({"x.json": (b'{"a": 1}', b'{"a": 2}')})
    assert patch.endswith(b'+{"a": 2}\n\\ No newline at end of file\n')
    assert b'-{"a": 1}\n\\ No newline at end of file\n' in patch


def test_diff_keeps_a_line_separator_inside_its_line():
    old = '{"a": "x\u2028y", "b": 1}\n'.encode()
    patch = unified_diff({"x.json": (old, old.replace(b"1", b"2"))})
    assert patch.count(b"\n-") == 1 and "x\u2028y".encode() in patch


# names that end an unquoted header early (tab, newline), need git's escapes (quote, backslash, controls, bytes that
# are not ASCII or not UTF-8) or a tab after them for GNU patch (a space)
ODD_NAMES = [b"a\tb.json", b"a\nb.json", b"a b.json", b'a"q".json', b"a\\b.json", "\u00e9.json".encode(),
             b"\xff.json", b"a\x7f\x01.json", b"sub dir/c.json"]


def _odd_tree(root):
    for name in ODD_NAMES:
        path = os.path.join(os.fsencode(root), b"ds_config_" + name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(DEPRECATED.encode())


def _headers(patch: bytes) -> list[bytes]:
    return sorted(line for line in patch.split(b"\n") if line.startswith((b"--- ", b"+++ ")))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to apply the patch")
def test_diff_quotes_file_names_as_git_does_so_that_the_patch_applies(tmp_path):
    repo = tmp_path / "repo"
    try:
        _odd_tree(repo)
    except (OSError, UnicodeError):
        pytest.skip("the file system refuses one of the names")
    proc = subprocess.run([sys.executable, "-m", "rlhf_lint", "--diff", "--select", "D013", "--no-cache", "."],
                          cwd=repo, capture_output=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert len(_headers(proc.stdout)) == 2 * len(ODD_NAMES)
    git = ["git", "-c", "core.quotePath=true", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "."], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "before"], cwd=repo, check=True)
    (tmp_path / "p.patch").write_bytes(proc.stdout)
    if shutil.which("patch"):  # GNU patch reads the same names (a space needs the tab after the name)
        dry = subprocess.run(["patch", "-p1", "--dry-run", "-i", str(tmp_path / "p.patch")], cwd=repo,
                             capture_output=True, timeout=60)
        assert dry.returncode == 0, dry.stdout + dry.stderr
    applied = subprocess.run([*git, "apply", str(tmp_path / "p.patch")], cwd=repo, capture_output=True, timeout=60)
    assert applied.returncode == 0, applied.stderr
    # git's own diff of what was applied: the same header bytes, name for name
    ours = subprocess.run([*git, "diff"], cwd=repo, capture_output=True, check=True, timeout=60).stdout
    assert _headers(ours) == _headers(proc.stdout)
