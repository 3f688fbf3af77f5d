"""Unified diffs of the changes fixes would make (``--diff``), byte for byte what ``git apply`` expects.

Lines split at ``\\n`` only: a JSON string may hold U+2028 or a lone ``\\r``, which ``str.splitlines`` would take for
line ends. A byte-order mark stays part of the first line, and a last line without a newline gets git's
``\\ No newline at end of file`` marker so the next file's header starts on a line of its own. File names in the
``---``/``+++`` headers are quoted as git quotes them, so ``git apply`` and GNU ``patch`` read the same name."""
from __future__ import annotations

import difflib
import os

NO_NEWLINE = b"\\ No newline at end of file\n"
# git's C-style quoting (quote.c): these escapes, any other control or non-ASCII byte as three octal digits
_C_ESCAPES = {0x07: b"\\a", 0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0B: b"\\v", 0x0C: b"\\f",
              0x0D: b"\\r", 0x22: b'\\"', 0x5C: b"\\\\"}


def _c_quoted_byte(byte: int) -> bytes:
    if byte in _C_ESCAPES:
        return _C_ESCAPES[byte]
    return b"\\%03o" % byte if byte < 0x20 or byte >= 0x7F else bytes((byte,))


def header_name(prefix: bytes, name: bytes) -> bytes:
    """``a/NAME`` as git writes it after ``---``/``+++``: C-quoted when the name holds a control character, a
    quote, a backslash or a non-ASCII byte (git's default core.quotePath; unquoted, a tab or newline would end the
    name), then a tab when it holds a space, which tells GNU patch that the name goes on to there."""
    label = prefix + name
    if any(byte < 0x20 or byte >= 0x7F or byte in b'"\\' for byte in label):
        label = b'"' + b"".join(_c_quoted_byte(byte) for byte in label) + b'"'
    return label + (b"\t" if b" " in name else b"")


def split_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])


def unified_diff(changed: dict[str, tuple[bytes, bytes]]) -> bytes:
    out = bytearray()
    for path in sorted(changed):
        old, new = changed[path]
        name = os.fsencode(path.replace(os.sep, "/"))  # the name's bytes: a non-UTF-8 byte is kept as it is
        for line in difflib.diff_bytes(difflib.unified_diff, split_lines(old), split_lines(new),
                                       fromfile=header_name(b"a/", name), tofile=header_name(b"b/", name)):
            out += line
            if not line.endswith(b"\n"):
                out += b"\n" + NO_NEWLINE
    return bytes(out)
