"""Unified diffs of the changes fixes would make (``--diff``)."""
from __future__ import annotations

import difflib
import re

from rlhf_lint.reporters.escape import visible

_LONE_CR = re.compile(r"\r(?!\n)")


def unified_diff(changed: dict[str, tuple[str, str]]) -> str:
    chunks = []
    for path in sorted(changed):
        old, new = changed[path]
        chunks.extend(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                           fromfile=f"a/{path}", tofile=f"b/{path}"))
    # the patch quotes the files: their escape sequences and bidi overrides shown as escapes; tabs and line breaks
    # kept so that an ordinary patch still applies; a CR alone (a line break to splitlines) shown, then a line break
    text = _LONE_CR.sub(r"\\r\n", visible("".join(chunks), keep="\t\n\r"))
    if text and not text.endswith("\n"):
        text += "\n"
    return text
