"""Python sources, never imported or executed. Only Python that rlhf-lint has rules for is parsed: ORZ experiment
configs through libcst (its rules edit them), setup.py and HF training scripts through CPython's own `ast` (only
their pins, or their literal arguments, are read: importing libcst costs ~0.3 s of a run). Everything else is
recognised by one regex and skipped (libcst costs ~20 ms per file; a repository has hundreds of modules).

A node's exact character span (node_span) is computed here from libcst's byte positions, once per tree.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.model import ParseError, Span
from rlhf_lint.readers.kinds import looks_like_hf_script, looks_like_orz
from rlhf_lint.readers.numbers import MAX_INT_DIGITS, overlong_number, overlong_run
from rlhf_lint.readers.source import Source


def quiet_ast_parse(text: str, path: str = "<unknown>"):
    """ast.parse without the warnings CPython raises about the user's code (`"\\d"`: a SyntaxWarning from 3.12,
    printed on stderr by the default filters): what is wrong in a file is said as diagnostics, not warnings."""
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, filename=path)


def _python_gate(source: Source):
    """Parse with CPython's own parser first (parsing runs no code). libcst's native parser overflows its stack
    (a segfault, which no except clause catches) or takes minutes on inputs CPython refuses quickly: thousands of
    nested brackets, ten thousand chained operators or attributes. A file CPython cannot parse would not run
    either, so it is reported as a parse error and never reaches libcst."""
    try:
        return quiet_ast_parse(source.text, source.path)
    except SyntaxError as exc:
        overlong = _overlong_literal(source, exc.lineno) if "integer string conversion" in exc.msg else None
        if overlong is not None:
            raise overlong from None
        offset = source.offset(exc.lineno or 1, exc.offset or 1)
        raise ParseError(f"invalid Python: {exc.msg}", offset) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ParseError(f"invalid Python: too deeply nested or too complex to parse ({type(exc).__name__})",
                         0) from None


def _overlong_literal(source: Source, line: int | None) -> ParseError | None:
    """CPython refuses an integer literal over MAX_INT_DIGITS digits and names only its line: the error is at the
    first such NUMBER token of that line (digits in a string are none). Tokenizing up to it takes ~0.5 s a MB, and
    only a file CPython refused pays it."""
    import io
    import tokenize

    if not line:
        return None
    span = source.line_span(line)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source.text).readline):
            if tok.start[0] > line:
                break
            digits = tok.string.replace("_", "")
            if tok.type == tokenize.NUMBER and len(digits) > MAX_INT_DIGITS and digits.isdigit():
                return overlong_number(span.start + tok.start[1], len(digits))
    except (tokenize.TokenError, SyntaxError):
        pass
    found = overlong_run(source.text, span.start, span.end)  # tokenize gave up first: the first run on the line
    return overlong_number(*found) if found else None


def parse_python_source(source: Source):
    orz = looks_like_orz(source.text)
    if not (orz or os.path.basename(source.path) == "setup.py" or looks_like_hf_script(source.text)):
        return None
    limit = MAX_BYTES if orz else MAX_SCRIPT_BYTES
    if len(source.raw) > limit:
        source.skipped.append((Span(0, 0), f"a Python config of {len(source.raw) >> 10} KiB, over the "
                                            f"{limit >> 10} KiB rlhf-lint reads: not checked"))
        return None
    if _bracket_depth(source.text) > MAX_DEPTH:
        # libcst parses it, but every walker over the tree (job builder, rules) would recurse past the limit
        source.skipped.append((Span(0, 0), f"brackets nest deeper than {MAX_DEPTH} levels here, the most rlhf-lint "
                                            "reads in a Python config: not checked"))
        return None
    if not orz and os.path.basename(source.path) != "setup.py":
        try:
            return _python_gate(source)
        except ParseError:
            # a training script read only for its literal arguments: one this Python cannot parse (newer syntax,
            # a template) is no finding of ours, as before scripts were read
            return None
    tree = _python_gate(source)
    if not orz:
        return tree  # setup.py, a training script: an ast.Module (readers/pins.py, frameworks/hf_script.py)
    import libcst

    try:
        return libcst.parse_module(source.text)
    except libcst.ParserSyntaxError as exc:
        offset = source.offset(exc.raw_line, exc.raw_column + 1)
        raise ParseError(f"invalid Python: {exc.message}", offset) from None


# id(module) -> (module, {node: CodeSpan}); the module is kept so the id cannot be reused while cached
_POSITIONS: dict[int, tuple[Any, Any]] = {}
_MAX_CACHED = 64
MAX_BYTES = 128 << 10  # an ORZ config read with libcst (real ones: a few KB)
MAX_SCRIPT_BYTES = 1 << 20  # setup.py or a training script, read with CPython's ast (1 MiB parses in ~50 ms)
MAX_DEPTH = 100  # nested brackets (CPython itself refuses 200)


def _bracket_depth(text: str) -> int:
    """The deepest bracket nesting, every bracket counted (in strings too: an over-estimate, never less)."""
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in ")]}" and depth:
            depth -= 1
    return deepest


def _byte_spans(module) -> Any:
    from libcst.metadata import ByteSpanPositionProvider, MetadataWrapper

    cached = _POSITIONS.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1]
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    spans = wrapper.resolve(ByteSpanPositionProvider)
    if len(_POSITIONS) >= _MAX_CACHED:
        _POSITIONS.clear()
    _POSITIONS[id(module)] = (module, spans)
    return spans


def node_span(source: Source, node) -> Span | None:
    """The character span of ``node`` (a node of ``source.tree``) in ``source.text``, or None if it is not there."""
    if source.tree is None:
        return None
    span = _byte_spans(source.tree).get(node)
    if span is None:
        return None
    start = source.char_offset(span.start)
    end = source.char_offset(span.start + span.length)
    return Span(start, end)
