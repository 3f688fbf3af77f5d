"""Integers Python refuses to convert: more than 4,300 digits (CVE-2020-10735). json.load, PyYAML, argparse,
packaging and every rule that reads a number fail on one, so each reader reports it where it reads numbers."""
from __future__ import annotations

from rlhf_lint.model import ParseError
from rlhf_lint.startup.lazyre import lazy_compile

MAX_INT_DIGITS = 4300
# only at the start of a run of digits (the look-behind fails at once inside one): linear, and one C call rather
# than a match object for every number of the file
_DIGIT_RUN = lazy_compile(r"(?<![0-9])[0-9]{%d}" % (MAX_INT_DIGITS + 1))
_DIGITS = lazy_compile(r"[0-9]*")


def overlong_run(text: str, pos: int = 0, endpos: int | None = None) -> tuple[int, int] | None:
    """(offset, digits) of the first run of more than MAX_INT_DIGITS digits in ``text[pos:endpos]``, or None."""
    end = len(text) if endpos is None else endpos
    if end - pos <= MAX_INT_DIGITS:
        return None
    m = _DIGIT_RUN.search(text, pos, end)
    if m is None:
        return None
    return m.start(), _DIGITS.match(text, m.end(), end).end() - m.start()


def overlong_message(digits: int) -> str:
    return (f"a number of {digits} digits: Python refuses integers over {MAX_INT_DIGITS} digits, so the program "
            "reading this file fails too")


def overlong_number(offset: int, digits: int) -> ParseError:
    return ParseError(overlong_message(digits), offset, offset + 1)
