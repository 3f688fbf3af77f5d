"""Unified diffs of the changes fixes would make (``--diff``), byte for byte what ``git apply`` expects.

Lines split at ``\\n`` only: a JSON string may hold U+2028 or a lone ``\\r``, which ``str.splitlines`` would take for
line ends. A byte-order mark stays part of the first line, and a last line without a newline gets git's
``\\ No newline at end of file`` marker so the next file's header starts on a line of its own."""
from __future__ import annotations

import difflib

NO_NEWLINE = b"\\ No newline at end of file\n"


def split_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])


def unified_diff(changed: dict[str, tuple[bytes, bytes]]) -> bytes:
    out = bytearray()
    for path in sorted(changed):
        old, new = changed[path]
        name = path.replace("\\", "/").encode("utf-8", "surrogateescape")
        for line in difflib.diff_bytes(difflib.unified_diff, split_lines(old), split_lines(new),
                                       fromfile=b"a/" + name, tofile=b"b/" + name):
            out += line
            if not line.endswith(b"\n"):
                out += b"\n" + NO_NEWLINE
    return bytes(out)
