"""F100 reads suppressions in comments only: the same text inside a Python string, a quoted shell word, a quoted
YAML scalar or a JSON string is data, not a directive (it neither suppresses nor is reported unused)."""
import pytest

from lintutil import run_lint
from rlhf_lint.readers.comments import comment_ranges

CASES = {
    "tool.py": ('HELP = "add # rlhf-lint: ignore[S001] to silence"\n'
                'X = """\n# rlhf-lint: ignore[D001]\n"""\n',
                'x = 1  # rlhf-lint: ignore[D001]\n'),
    "run.sh": ('echo "see # rlhf-lint: ignore[S001]"\necho \'# rlhf-lint: ignore[S002]\'\n'
               'echo a#rlhf-lint: ignore[S003]\n',
               'echo hi  # rlhf-lint: ignore[S001]\n'),
    "ppo.yaml": ('trainer:\n  note: "# rlhf-lint: ignore[V001]"\n  other: \'x # rlhf-lint: ignore[V002]\'\n'
                 '  text: |\n    # rlhf-lint: ignore[V003]\n',
                 'trainer:\n  total_epochs: 1  # rlhf-lint: ignore[V001]\n'),
    "ds_config.json": ('{"train_micro_batch_size_per_gpu": 1, "note": "// rlhf-lint: ignore[D001]"}\n',
                       '{"train_micro_batch_size_per_gpu": 1} // rlhf-lint: ignore[D001]\n'),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_directive_text_inside_strings_is_not_a_suppression(tmp_path, name):
    in_string, in_comment = CASES[name]
    (tmp_path / name).write_text(in_string)
    assert [d.code for d in run_lint([tmp_path]).diagnostics if d.code == "F100"] == []
    (tmp_path / name).write_text(in_comment)
    (f100,) = [d for d in run_lint([tmp_path]).diagnostics if d.code == "F100"]
    assert f100.source_line.find("rlhf-lint:") > f100.source_line.find("#" if name != "ds_config.json" else "//")


def test_comment_ranges_per_kind():
    text = 'a = "#x"  # c\n'
    assert [text[a:b] for a, b in comment_ranges(text, "python")] == ["# c"]
    shell = 'echo ${x#y} "#q" \\# a # c\n'
    assert [shell[a:b] for a, b in comment_ranges(shell, "shell")] == ["# c"]
    req = "torch @ https://x/t.whl#sha256=0  # c\n"
    assert [req[a:b] for a, b in comment_ranges(req, "requirements")] == ["# c"]
    toml = 'x = "a # b"  # c\n'
    assert [toml[a:b] for a, b in comment_ranges(toml, "pyproject_toml")] == ["# c"]
    # an unterminated Python string: tokenize fails, the plain scanner still skips the quoted part
    assert [t for t in comment_ranges('x = "# a\n', "python")] == []
