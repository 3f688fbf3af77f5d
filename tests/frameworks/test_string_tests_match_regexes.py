"""String tests that stand in for regular expressions on per-word paths agree with the expressions they replace.

Each one runs on every word of a launch script, where compiling the expression would cost 60-140 µs of every start.
Hypothesis draws text from pieces that sit on the edges of the expressions: Unicode digits that are decimal (Nd) or
only digit-like (superscripts), Unicode blanks, a final newline (which `$` also matches before), CRLF.
"""
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlhf_lint.frameworks.launchers import _is_line_break, _starts_negative_number
from rlhf_lint.frameworks.openrlhf import _is_negative_number
from rlhf_lint.rules.shell.s003_placeholder_value import _is_brace_placeholder
from rlhf_lint.rules.shell.s005_unquoted_glob_in_value import _has_glob

_PIECES = ["-", ".", "0", "7", "\u0663", "\u00b2", "\u2155", "inf", "nan", "e", "\n", "\r", " ", "\t", "\u00a0",
           "\u2003", "\x1c", "\\", "{", "}", "[", "]", "*", "?", "a", "Z", "_", "\u00e9", "\u00aa", '"', ":", "x y"]
_texts = st.one_of(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join), st.text(max_size=12))


def _line_break(text):
    return _is_line_break(text, backslash=True)


def _newline(text):
    return _is_line_break(text, backslash=False)


# (expression, string test, searched rather than matched, texts on its edges)
CASES = [
    (r"^-(?:\d|\.\d|inf$|nan$)", _starts_negative_number, False,
     ["-1", "-.5", "-inf\n", "-nan", "--lr", "-\u00b2", "-\u0663", "-", "-.", "-infinity"]),
    (r"^-\d+$|^-\d*\.\d+$", _is_negative_number, False,
     ["-3", "-0.5", "-.5", "-5\n", "-5\n\n", "-1e-5", "-.", "-5.", "-\n", "-1.2.3", "-\u0663"]),
    (r"^[ \t]*\\\r?\n[ \t]*$", _line_break, False,
     [" \\\n    ", "\t\\\r\n", " \\\n \n", " \\\n \n ", "\\", " \\ \n", "\\\r\r\n", "\n"]),
    (r"^[ \t]*\r?\n[ \t]*$", _newline, False, ["\n", " \r\n\t", "\n\n", "\n \n", "\\\n", ""]),
    (r"^\{\s*[A-Za-z_][\w\- ]*\}$", _is_brace_placeholder, True,
     ["{model_path}", "{ OUTPUT DIR }\n", '{"working_dir": "/openrlhf"}', "{}", "{\u00e9}", "{a\u00e9}", "{a}}",
      "{\x1ca}", "{_}\n\n", "{a-b c}"]),
    (r"[*?]|\[[^\]\s]+\]", _has_glob, True, ["data/*.jsonl", "a?", "[abc]", "[a b]", "[[a]", "[]]", "[", "[\u2003]",
                                                        "[[]", "[a[]", "x[y]z", "[\t]", "] [a]", "[" * 2000 + "a]",
                                                        "[" * 2000, "[ " * 1000 + "]"]),
]
IDS = [test.__name__ for _, test, _, _ in CASES]


def _agrees(pattern: str, test, search: bool, text: str) -> None:
    compiled = re.compile(pattern)
    expected = (compiled.search if search else compiled.match)(text) is not None
    assert test(text) == expected, (pattern, text)


@pytest.mark.parametrize("pattern, test, search, edges", CASES, ids=IDS)
def test_agrees_on_edge_texts(pattern, test, search, edges):
    for text in edges:
        _agrees(pattern, test, search, text)


@pytest.mark.parametrize("pattern, test, search, edges", CASES, ids=IDS)
def test_agrees_on_generated_texts(pattern, test, search, edges):
    @settings(max_examples=2000, deadline=None)
    @given(_texts)
    def check(text):
        _agrees(pattern, test, search, text)

    check()
