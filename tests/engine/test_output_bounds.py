"""Output linear in findings: a diagnostic carries a bounded excerpt of its line (not the whole line), a message is
cut, and one rule reports at most MAX_FINDINGS_PER_RULE findings per file, then says how it stopped."""
import json
import time

from lintutil import run_cli
from rlhf_lint.engine.runner import MAX_FINDINGS_PER_RULE
from rlhf_lint.model import MAX_EXCERPT, excerpt
from rlhf_lint.reporters.text import _caret


def _dup_line(n):
    return "{" + ", ".join('"train_batch_size": 8' for _ in range(n)) + "}\n"


def test_excerpt_is_bounded_and_holds_the_column():
    line = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    for column in (1, 150, 5_000, 9_990, 10_000):
        got, skipped, cut = excerpt(line, 0, len(line), column)
        assert len(got) == MAX_EXCERPT and got == line[skipped:skipped + MAX_EXCERPT]
        assert skipped < column <= skipped + MAX_EXCERPT
        assert cut == (skipped + MAX_EXCERPT < len(line))
    assert excerpt("short", 0, 5, 3) == ("short", 0, False)


def test_duplicate_keys_on_one_line_give_bounded_output_quickly(tmp_path):
    (tmp_path / "ds_config.json").write_text(_dup_line(10_000))
    started = time.monotonic()
    proc = run_cli("--no-cache", "ds_config.json", cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(x) for x in lines) < MAX_EXCERPT + 300
    assert proc.stdout.count(" D004 error ") == MAX_FINDINGS_PER_RULE
    assert "more findings of D004 here are not reported" in proc.stdout
    assert len(proc.stdout) < 600 * (MAX_FINDINGS_PER_RULE + 1)
    assert elapsed < 30, elapsed  # 11 s and 4.8 GB before; ~2 s now


def test_json_output_carries_the_excerpt_not_the_line(tmp_path):
    (tmp_path / "ds_config.json").write_text(_dup_line(50))
    proc = run_cli("--no-cache", "--format", "json", "ds_config.json", cwd=tmp_path)
    assert len(proc.stdout) < 50 * 3_000
    assert len(json.loads(proc.stdout)["diagnostics"]) == 49


def test_the_caret_stays_under_its_token_in_an_excerpt(tmp_path):
    (tmp_path / "ds_config.json").write_text(_dup_line(300))
    proc = run_cli("--no-cache", "ds_config.json", cwd=tmp_path)
    out = proc.stdout.splitlines()
    for i, line in enumerate(out):
        if " D004 error " in line:
            column = int(line.split(":")[2])
            shown, caret = out[i + 1], out[i + 2]
            at = caret.index("^")
            skipped = column - 1 - (at - 4 - (3 if shown.startswith("    ...") else 0))
            assert shown[at:at + len('"train_batch_size"')] == '"train_batch_size"', (line, shown, caret)
            assert skipped >= 0


def test_caret_of_an_escaped_excerpt():
    from rlhf_lint.model import Diagnostic, Position, Severity
    d = Diagnostic(code="X", name="x", severity=Severity.ERROR, message="m", path="p", span=None,
                   start=Position(1, 105), end=Position(1, 108), source_line="a\x1bbcdef", source_line_start=100,
                   source_line_cut=True)
    shown, caret = _caret(d).splitlines()
    assert shown == "    ...a\\x1bbcdef..." and caret == "       " + " " * 7 + "^^^"
