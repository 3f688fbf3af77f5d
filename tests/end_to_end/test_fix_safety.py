"""Fix safety over every example and fixture: all fixes (safe and unsafe) applied to a copy, then the properties
a user relies on are checked for every file that changed, whichever fixer changed it."""
import os
import shutil
import stat
import subprocess

import pytest

from lintutil import ROOT
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint

BOM = b"\xef\xbb\xbf"
KIND_BY_SUFFIX = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".sh": "shell", ".py": "python"}


@pytest.fixture(scope="module")
def fixed_tree(tmp_path_factory):
    """A copy of examples/ and tests/fixtures/ after one --unsafe-fixes run; the originals; the run's result."""
    work = tmp_path_factory.mktemp("fixsafety")
    for part in ("examples", os.path.join("tests", "fixtures")):
        if os.path.isdir(os.path.join(ROOT, part)):
            shutil.copytree(os.path.join(ROOT, part), work / part, symlinks=True)
    originals = {}
    for dirpath, _dirs, files in os.walk(work):
        for name in files:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                originals[path] = (open(path, "rb").read(), stat.S_IMODE(os.stat(path).st_mode))
    cwd = os.getcwd()
    os.chdir(work)  # fixtures name their companions relative to the repository root, as users run it
    try:
        result = lint(["."], Config(root=str(work)), Options(fix=True, unsafe_fixes=True, jobs=1))
        second = lint(["."], Config(root=str(work)), Options(fix=True, unsafe_fixes=True, jobs=1))
    finally:
        os.chdir(cwd)
    changed = {p for p, (raw, _mode) in originals.items() if open(p, "rb").read() != raw}
    return work, originals, result, second, changed


def test_fixes_ran_and_converged(fixed_tree):
    _work, _originals, result, _second, changed = fixed_tree
    assert result.fixed > 0 and changed, "the fixture set has fixable findings; none were applied"
    assert not [m for m in result.messages if "did not converge" in m]
    assert not [d for d in result.diagnostics if d.code == "F010"], "internal error while fixing"
    assert not result.write_errors


def test_a_second_fix_changes_nothing(fixed_tree):
    _work, originals, _result, second, changed = fixed_tree
    assert second.fixed == 0 and not second.changed


def _parses(kind, raw, path):
    text = raw.decode("utf-8").lstrip("\ufeff")
    if kind == "json":
        from rlhf_lint.readers.json import parse_json

        parse_json(text)
    elif kind == "yaml":
        import yaml

        list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    elif kind == "python":
        compile(text, path, "exec", dont_inherit=True)  # compiled, never executed
    elif kind == "shell" and shutil.which("bash"):
        proc = subprocess.run(["bash", "-n"], input=raw, capture_output=True)
        if proc.returncode:
            raise SyntaxError(proc.stderr.decode(errors="replace"))


def test_fixed_files_still_parse_when_the_original_did(fixed_tree):
    _work, originals, _result, _second, changed = fixed_tree
    for path in sorted(changed):
        kind = KIND_BY_SUFFIX.get(os.path.splitext(path)[1])
        if kind is None:
            continue
        try:
            _parses(kind, originals[path][0], path)
        except Exception:
            continue  # a file that was broken before may stay broken
        _parses(kind, open(path, "rb").read(), path)


def test_line_endings_bom_trailing_newline_encoding_and_mode_are_kept(fixed_tree):
    _work, originals, _result, _second, changed = fixed_tree
    for path in sorted(changed):
        before, mode = originals[path]
        after = open(path, "rb").read()
        after.decode("utf-8")
        assert after.startswith(BOM) == before.startswith(BOM), path
        assert after.endswith(b"\n") == before.endswith(b"\n"), path
        # S001 converts a CRLF shell script to LF as a whole (bash reads `\` + CR-LF as no continuation)
        to_lf = path.endswith(".sh") and b"\r" not in after
        if b"\r\n" in before and b"\n" not in before.replace(b"\r\n", b"") and not to_lf:
            assert b"\n" not in after.replace(b"\r\n", b""), f"{path}: a fix wrote LF into a CRLF file"
        if b"\r" not in before:
            assert b"\r" not in after, f"{path}: a fix wrote CR into an LF file"
        assert stat.S_IMODE(os.stat(path).st_mode) == mode, path


def test_edits_are_minimal(tmp_path):
    """No fixer rewrites lines it does not change: after trimming what the replaced text and the new content share
    at both ends, fewer than three whole unchanged lines may remain inside any edit."""
    work = tmp_path / "copy"
    for part in ("examples", os.path.join("tests", "fixtures")):
        if os.path.isdir(os.path.join(ROOT, part)):
            shutil.copytree(os.path.join(ROOT, part), work / part, symlinks=True)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        result = lint(["."], Config(root=str(work)), Options(jobs=1))
    finally:
        os.chdir(cwd)
    fixes = 0
    for d in result.diagnostics:
        if d.fix is None:
            continue
        text = open(work / d.path, "rb").read().decode("utf-8").lstrip("\ufeff")
        for e in d.fix.edits:
            old, new = text[e.start:e.end], e.content
            prefix = len(os.path.commonprefix([old, new]))
            suffix = len(os.path.commonprefix([old[prefix:][::-1], new[prefix:][::-1]]))
            kept = old[:prefix] + old[len(old) - suffix:] if suffix else old[:prefix]
            assert kept.count("\n") < 3, f"{d.path}:{d.start.line} {d.code} rewrites unchanged lines: {old!r} -> {new!r}"
            fixes += 1
    assert fixes > 0
