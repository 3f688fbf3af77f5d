import re

from rlhf_lint.startup.lazyre import lazy_compile


def test_compiles_on_first_use_and_forwards_to_the_pattern():
    pattern = lazy_compile(r"(\d+)([a-z])", re.IGNORECASE)
    assert pattern._pattern is None  # nothing compiled at definition
    assert pattern.match("12B").groups() == ("12", "B")
    assert isinstance(pattern.compiled, re.Pattern) and pattern.compiled.flags & re.IGNORECASE
    assert pattern.sub(r"\2\1", "7x and 8y") == "x7 and y8"
    assert pattern.pattern == r"(\d+)([a-z])" and pattern.groups == 2
    assert re.sub(pattern.compiled, "-", "1a") == "-"


def test_a_bad_pattern_fails_when_used():
    pattern = lazy_compile(r"(unclosed")
    try:
        pattern.match("x")
    except re.error:
        pass
    else:
        raise AssertionError("re.error expected")
