"""Text from linted files (source lines, quoted values, file names) is a stranger's: before it reaches a terminal or
a CI log, control characters and bidirectional overrides are shown as escapes (``\\x1b``, ``\\u202e``) so that a
file cannot move the cursor, clear the screen, set the window title, hide text or reorder what is displayed.

Lone surrogates are escaped everywhere, machine formats included: a file name byte that is not UTF-8 reaches us as
one (``os.fsdecode``'s surrogateescape, U+DC80-U+DCFF), and neither a UTF-8 stream nor a strict JSON reader takes
it. Such a byte is shown as ``\\xff``, the byte itself; any other lone surrogate as ``\\udXXX``."""
from __future__ import annotations

import functools

# C0 controls, DEL, C1 controls; the bidirectional marks, embeddings, overrides and isolates; line and paragraph
# separators (some terminals and viewers break lines at them)
_UNSAFE = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
           *range(0x2066, 0x206A), 0x2028, 0x2029]
ESCAPES = {c: (f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}") for c in _UNSAFE}
ESCAPES.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"})


@functools.lru_cache(maxsize=1)
def surrogates() -> dict[int, str]:
    """The escapes of the lone surrogates (built when a text has one: 2,048 entries)."""
    out = {c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)}
    out.update({c: f"\\x{c - 0xDC00:02x}" for c in range(0xDC80, 0xDD00)})  # an undecodable byte: that byte
    return out


def escaped(ch: str) -> str:
    """One character as ``visible`` shows it."""
    code = ord(ch)
    return surrogates().get(code, ch) if 0xD800 <= code < 0xE000 else ESCAPES.get(code, ch)


@functools.lru_cache(maxsize=8)
def _escapes_but(keep: str) -> dict[int, str]:
    return {c: e for c, e in ESCAPES.items() if chr(c) not in keep}


def visible(text: str, keep: str = "") -> str:
    """``text`` with every unsafe character escaped, except those in ``keep`` (e.g. ``"\\n"``)."""
    if text.isprintable():
        return text  # the usual case: every character escaped here is one that isprintable() refuses
    return unicode_text(text.translate(_escapes_but(keep) if keep else ESCAPES))


def unicode_text(text: str) -> str:
    """``text`` as valid Unicode, for the JSON formats (json, SARIF, GitLab): lone surrogates escaped as
    ``visible`` shows them, everything else (a file's control characters included: JSON escapes those) unchanged."""
    if text.isascii() or text.isprintable():
        return text  # the usual case, both O(1) or fast: a lone surrogate is neither ASCII nor printable
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.translate(surrogates())
    return text


def unicode_json(value):
    """A JSON-ready value (dicts, lists, strings, numbers) with ``unicode_text`` applied to every string in it."""
    if isinstance(value, str):
        return unicode_text(value)
    if isinstance(value, dict):
        return {unicode_text(k): unicode_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unicode_json(v) for v in value]
    return value


def utf8_bytes(text: str) -> bytes:
    """UTF-8 bytes of ``text`` for hashing: an undecodable file-name byte as that byte (surrogateescape, so the
    bytes are the file's real name), any other lone surrogate as surrogatepass writes it; never an error."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
