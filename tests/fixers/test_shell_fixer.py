"""The shell fixer: edits land where a person would make them, keep everything else, and pass bash -n."""
import subprocess
import textwrap

from hypothesis import example, given, settings, strategies as st

from rlhf_lint.fixers.shell import insert_flag, remove_flag, rename_flag, set_flag_value, shell_quote
from rlhf_lint.fixers.text import apply_edits
from rlhf_lint.frameworks.launchers import commands_of
from rlhf_lint.readers.source import Source


def cmd_of(text):
    src = Source.from_text("t.sh", text, kind="shell")
    return src, commands_of(src)[0]


def bash_ok(text):
    return subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True).returncode == 0


MULTI = textwrap.dedent("""\
    ZERO="2"
    deepspeed train.py \\
       --zero_stage $ZERO \\
       --lr=1e-5 \\
       --flash_attn
    echo done
""")

HEREDOC = textwrap.dedent("""\
    read -r -d '' cmd <<EOF
    openrlhf.cli.train_sft \\
       --max_len 2048 \\
       --lr 1e-5
    EOF
    deepspeed --module $cmd
""")


def test_set_value_edits_the_assignment_keeping_quotes():
    src, cmd = cmd_of(MULTI)
    new = apply_edits(MULTI, set_flag_value(MULTI, cmd, cmd.last("--zero_stage"), "3"))
    assert new.splitlines()[0] == 'ZERO="3"' and bash_ok(new)
    new = apply_edits(MULTI, set_flag_value(MULTI, cmd, cmd.last("--lr"), "2e-6"))
    assert "   --lr=2e-6 \\" in new.splitlines()
    new = apply_edits(MULTI, set_flag_value(MULTI, cmd, cmd.last("--flash_attn"), "a b"))
    assert "   --flash_attn 'a b'" in new.splitlines() and bash_ok(new)


def test_insert_follows_continuation_style():
    src, cmd = cmd_of(MULTI)
    new = apply_edits(MULTI, insert_flag(MULTI, cmd, "--bf16"))
    assert new.splitlines()[4:7] == ["   --flash_attn \\", "   --bf16", "echo done"] and bash_ok(new)
    one = "python -m pkg.t --a 1 > log\n"
    src, cmd = cmd_of(one)
    assert apply_edits(one, insert_flag(one, cmd, "--b", ("x y",))) == "python -m pkg.t --a 1 --b 'x y' > log\n"


def test_insert_inside_heredoc():
    src, cmd = cmd_of(HEREDOC)
    new = apply_edits(HEREDOC, insert_flag(HEREDOC, cmd, "--bf16"))
    assert new.splitlines()[3:6] == ["   --lr 1e-5 \\", "   --bf16", "EOF"] and bash_ok(new)
    src2, cmd2 = cmd_of(new)
    assert cmd2.last("--bf16") is not None and cmd2.last("--lr").value.text == "1e-5"


def test_remove_flag_and_its_line():
    src, cmd = cmd_of(MULTI)
    new = apply_edits(MULTI, remove_flag(MULTI, cmd, cmd.last("--lr")))
    assert "--lr" not in new and bash_ok(new)
    src2, cmd2 = cmd_of(new)
    assert [a.flag for a in cmd2.args] == ["--zero_stage", "--flash_attn"]
    # the last flag: the line before loses its backslash so `echo done` stays a command of its own
    new = apply_edits(MULTI, remove_flag(MULTI, cmd, cmd.last("--flash_attn")))
    assert new.splitlines()[3:5] == ["   --lr=1e-5", "echo done"] and bash_ok(new)
    inline = "python -m pkg.t --a 1 --b 2\n"
    src, cmd = cmd_of(inline)
    assert apply_edits(inline, remove_flag(inline, cmd, cmd.last("--a"))) == "python -m pkg.t --b 2\n"


def test_remove_in_heredoc_and_crlf():
    src, cmd = cmd_of(HEREDOC)
    new = apply_edits(HEREDOC, remove_flag(HEREDOC, cmd, cmd.last("--lr")))
    assert "--lr" not in new and "EOF\n" in new and bash_ok(new)
    crlf = MULTI.replace("\n", "\r\n")
    src, cmd = cmd_of(crlf)
    new = apply_edits(crlf, remove_flag(crlf, cmd, cmd.last("--flash_attn")))
    assert "   --lr=1e-5\r\necho done\r\n" in new


def test_rename():
    src, cmd = cmd_of(MULTI)
    new = apply_edits(MULTI, rename_flag(cmd, cmd.last("--flash_attn"), "--attn_implementation"))
    assert "   --attn_implementation\n" in new


_values = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(" \t'\"$`\\*"),
                  min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
@given(value=_values.filter(lambda v: not v.startswith("-")), which=st.sampled_from(["--zero_stage", "--lr", "--flash_attn"]))
@example(value="==", which="--flash_attn")  # found by hypothesis: a bare == was read as a test operator
def test_set_value_property(value, which):
    src, cmd = cmd_of(MULTI)
    edits = set_flag_value(MULTI, cmd, cmd.last(which), value)
    new = apply_edits(MULTI, edits)
    # bytes outside the edits are unchanged
    (edit,) = edits
    assert new[: edit.start] == MULTI[: edit.start]
    assert new[len(new) - (len(MULTI) - edit.end):] == MULTI[edit.end:]
    # the program now receives exactly the value, and setting it again changes nothing
    src2, cmd2 = cmd_of(new)
    arg = cmd2.last(which)
    assert arg.value.text == value or (value == "" and which == "--flash_attn")
    again = apply_edits(new, set_flag_value(new, cmd2, arg, value))
    assert again == new


@settings(max_examples=40, deadline=None)
@given(value=_values.filter(lambda v: not v.startswith("-")))  # a word starting with '-' is a flag, as in argparse
def test_shell_quote_round_trip(value):
    text = f"python -m pkg.t --x {shell_quote(value)}\n"
    src, cmd = cmd_of(text)
    assert [v.text for v in cmd.last("--x").values] == [value]
