"""A linted file is a stranger's: its escape sequences, control characters and bidi overrides must not reach the
terminal or the CI log through any output (source excerpt, messages quoting it, paths, --diff), the caret must stay
under the right character, and GitHub annotations must not let the file start a `::` workflow command."""
import os

from lintutil import run_cli, run_lint, temporary_rule
from rlhf_lint.model import Diagnostic, Position, Severity
from rlhf_lint.reporters.escape import visible
from rlhf_lint.reporters.github import render_github
from rlhf_lint.reporters.text import render_text
from rlhf_lint.engine.runner import Result

UNSAFE = "\x1b[2J\x07\x00\x7f\x9b\u202e\u2066\u200f\u2028"


def test_visible_escapes_controls_and_bidi_and_leaves_ordinary_text_alone():
    assert visible("é ü 中 ok \\ path/x.json") == "é ü 中 ok \\ path/x.json"
    assert visible(UNSAFE) == "\\x1b[2J\\x07\\x00\\x7f\\x9b\\u202e\\u2066\\u200f\\u2028"
    assert visible("a\tb\nc\rd") == "a\\tb\\nc\\rd"
    assert visible("a\nb\x1b", keep="\n") == "a\nb\\x1b"


def test_source_line_is_escaped_and_the_caret_stays_under_its_character(tmp_path):
    # a tab, an escape sequence and a right-to-left override before the error column (the second ',')
    (tmp_path / "x.json").write_text('{"a":\t"\x1b[2J\u202e",\t,}\n')
    proc = run_cli("--no-cache", "x.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("x.json:1:16: F003 error invalid JSON")
    assert lines[1] == '    {"a": "\\x1b[2J\\u202e", ,}'
    caret = lines[2].index("^")
    assert lines[2] == " " * caret + "^" and lines[1][caret] == "," and lines[1][caret - 1] == " "
    assert lines[1][:caret].count(",") == 1  # the second comma, where the parser stopped


def test_caret_width_covers_the_escapes_of_the_flagged_characters():
    line = 'x = "\x1b]0;t\x07"'
    d = Diagnostic(code="X001", name="x", severity=Severity.ERROR, message="m", path="p", span=None,
                   start=Position(1, 5), end=Position(1, 11), source_line=line)
    out = render_text(Result(diagnostics=[d]), quiet=False).splitlines()
    assert out[1] == '    x = "\\x1b]0;t\\x07"'
    assert out[2] == "    " + " " * 4 + "^" * len('"\\x1b]0;t')


def _quote(ctx):
    """Test rule: quotes every JSON string value, verbatim, in its message."""
    from rlhf_lint.model import Finding
    from rlhf_lint.readers.json import JValue

    for path, member in ctx.tree.walk():
        if isinstance(member.value, JValue) and isinstance(member.value.value, str):
            yield Finding(member.value.span, f"value {member.value.value}")


def test_messages_and_paths_that_quote_the_file_are_escaped(tmp_path):
    name = "evil\x1b]0;owned\x07.json"
    (tmp_path / name).write_text('{"a": "\\u001b[31mred\\u202eevil\\n::error::forged"}\n')
    with temporary_rule("F902", "test-quote", Severity.ERROR, _quote):
        result = run_lint([tmp_path / name], extend_select=["F902"], select=["F902"])
    text = render_text(result)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "evil\\x1b]0;owned\\x07.json:1:7: F902 error value \\x1b[31mred\\u202eevil\\n::error::forged" in text
    github = render_github(result)
    assert github.count("\n") == 1 and github.startswith("::error file=") and "\x1b" not in github
    assert "F902 value \\x1b[31mred\\u202eevil%0A::error::forged" in github
    assert "file=" + str(tmp_path).replace(":", "%3A") + "/evil\\x1b]0;owned\\x07.json," in github


def test_github_annotation_cannot_start_a_workflow_command():
    d = Diagnostic(code="X001", name="x", severity=Severity.WARNING, message="50% done\r\n::set-env name=A::b\x1b[8m",
                   path="a,b:c\n::add-mask::x.json", span=None, start=Position(1, 1), end=Position(1, 2))
    out = render_github(Result(diagnostics=[d]))
    assert out.count("\n") == 1 and out.startswith("::warning ")
    assert "file=a%2Cb%3Ac%0A%3A%3Aadd-mask%3A%3Ax.json," in out
    assert out.endswith("::X001 50%25 done%0D%0A::set-env name=A::b\\x1b[8m\n")


def test_diff_keeps_the_files_bytes_so_that_the_patch_applies(tmp_path):
    """A patch is for git apply, not for the terminal: its lines must be the file's lines exactly."""
    (tmp_path / "train.sh").write_text("echo '\x1b[2J'\t\\  \n  --deepspeed ds.json \\  \n  --x\n")
    proc = run_cli("--no-cache", "--diff", "train.sh", cwd=tmp_path)
    assert " echo '\x1b[2J'\t\\" in proc.stdout or "-echo '\x1b[2J'\t\\" in proc.stdout, proc.stdout


def test_stderr_messages_quoting_paths_are_escaped(tmp_path):
    name = "evil\x1b[2J.sh"
    (tmp_path / name).write_text("deepspeed train.py \\  \n  --deepspeed ds.json\n")
    os.chmod(tmp_path / name, 0o444)  # read-only: the fix is not written, and stderr says so, naming the file
    proc = run_cli("--no-cache", "--fix", name, cwd=tmp_path)
    assert "not written" in proc.stderr, proc.stderr
    assert "\x1b" not in proc.stderr and "evil\\x1b[2J.sh: not written" in proc.stderr, proc.stderr
