"""Text from linted files (source lines, quoted values, file names) is a stranger's: before it reaches a terminal or
a CI log, control characters and bidirectional overrides are shown as escapes (``\\x1b``, ``\\u202e``) so that a
file cannot move the cursor, clear the screen, set the window title, hide text or reorder what is displayed."""
from __future__ import annotations

# C0 controls, DEL, C1 controls; the bidirectional marks, embeddings, overrides and isolates; line and paragraph
# separators (some terminals and viewers break lines at them)
_UNSAFE = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
           *range(0x2066, 0x206A), 0x2028, 0x2029]
ESCAPES = {c: (f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}") for c in _UNSAFE}
ESCAPES.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"})


def visible(text: str, keep: str = "") -> str:
    """``text`` with every unsafe character escaped, except those in ``keep`` (e.g. ``"\\n"``)."""
    if text.isprintable():
        return text  # the usual case: every character of ESCAPES is one that isprintable() refuses
    table = ESCAPES if not keep else {c: e for c, e in ESCAPES.items() if chr(c) not in keep}
    return text.translate(table)
