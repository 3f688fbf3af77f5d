"""Helpers shared by tests: run the linter on fixtures, apply fixes to copies, check generated files."""
from __future__ import annotations

import shutil

from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint


def run(paths, select, config=None, fix=False):
    config = config or Config()
    result = lint([str(p) for p in paths], config, Options(select=select, fix=fix, unsafe_fixes=fix))
    return result


def triples(result):
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


def fix_copy(fixture, tmp_path, select, config=None):
    """Copy a fixture, apply every fix (unsafe included), return (new text, diagnostics left)."""
    target = tmp_path / fixture.name
    shutil.copyfile(fixture, target)
    result = run([target], select, config, fix=True)
    return target.read_bytes().decode("utf-8"), result


def assert_generated_file_current(generator: str, filename: str, write_flag: str) -> None:
    """``python -m <generator>`` prints what ``rlhf_lint/<filename>`` must contain (the rule index, the record
    inits): a stale file fails with the command that rewrites it."""
    import os
    import subprocess
    import sys

    import rlhf_lint

    out = subprocess.run([sys.executable, "-m", generator], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    with open(os.path.join(os.path.dirname(rlhf_lint.__file__), filename), encoding="utf-8") as fh:
        assert fh.read() == out.stdout, f"stale: run `python -m {generator} {write_flag}`"
