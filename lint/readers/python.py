"""Python sources through libcst (imported only when a Python file is checked). Never imported or executed.

Only Python that rlhf-lint has rules for is parsed: ORZ experiment configs and setup.py. Everything else is
recognised by one regex and skipped (libcst costs ~20 ms per file; a repository has hundreds of modules).
"""
from __future__ import annotations

from rlhf_lint.model import ParseError

import os

from rlhf_lint.readers.source import Source


def _python_gate(source: Source) -> None:
    """Parse with CPython's own parser first (parsing runs no code). libcst's native parser overflows its stack
    (a segfault, which no except clause catches) or takes minutes on inputs CPython refuses quickly: thousands of
    nested brackets, ten thousand chained operators or attributes. A file CPython cannot parse would not run
    either, so it is reported as a parse error and never reaches libcst."""
    import ast

    try:
        ast.parse(source.text, filename=source.path)
    except SyntaxError as exc:
        offset = source.offset(exc.lineno or 1, exc.offset or 1)
        raise ParseError(f"invalid Python: {exc.msg}", offset) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ParseError(f"invalid Python: too deeply nested or too complex to parse ({type(exc).__name__})",
                         0) from None


def is_relevant_python(source: Source) -> bool:
    from rlhf_lint.frameworks.orz import looks_like_orz

    return os.path.basename(source.path) == "setup.py" or looks_like_orz(source.text)


def parse_python_source(source: Source):
    if not is_relevant_python(source):
        return None
    _python_gate(source)
    import libcst

    try:
        return libcst.parse_module(source.text)
    except libcst.ParserSyntaxError as exc:
        offset = source.offset(exc.raw_line, exc.raw_column + 1)
        raise ParseError(f"invalid Python: {exc.message}", offset) from None
