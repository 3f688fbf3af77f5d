"""Span-only edits over a JSONDocument (lint/readers/json.py): set a value, rename a key, delete a member, insert a
member or a nested path. Each function returns Edits; everything outside them stays byte-identical, so comments,
key order, quoting, indentation and CRLF survive. New members take their siblings' indentation and the file's
newline style; a one-line object stays on one line.
"""
from __future__ import annotations

import json
from collections import Counter

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.readers.json import JMember, JNode, JObject, JSONDocument
from rlhf_lint.model import Edit

_BLANK = " \t"


def dumps(value: Any) -> str:
    """A scalar (or small container) as one-line JSON text."""
    return json.dumps(value, ensure_ascii=False)


def _newline(text: str) -> str:
    i = text.find("\n")
    return "\r\n" if i > 0 and text[i - 1] == "\r" else "\n"


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _line_end(text: str, offset: int) -> int:
    """Offset of the line break ending the line that holds offset ('\\r\\n' counts from its '\\r')."""
    end = text.find("\n", offset)
    if end == -1:
        return len(text)
    return end - 1 if end > 0 and text[end - 1] == "\r" else end


def _starts_line(text: str, offset: int) -> bool:
    i = offset  # walk back over blanks only: slicing the whole line is quadratic on a line of many members
    while i > 0 and text[i - 1] in _BLANK:
        i -= 1
    return i == 0 or text[i - 1] == "\n"


def _indent_of(text: str, offset: int) -> str:
    start = _line_start(text, offset)
    i = start
    while i < len(text) and text[i] in _BLANK:
        i += 1
    return text[start:i]


def _is_multiline(text: str, obj: JObject) -> bool:
    return "\n" in text[obj.span.start:obj.span.end]


def _comma_after(text: str, offset: int) -> int | None:
    """Offset of the ',' following a value (blanks and line breaks skipped, comments not)."""
    i = offset
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i if i < len(text) and text[i] == "," else None


def indent_unit(text: str, doc: JSONDocument) -> str:
    """The file's indentation step, read from how far members sit inside their objects (default two spaces)."""
    steps: Counter[str] = Counter()

    def visit(node: JNode, outer: str | None) -> None:
        if isinstance(node, JObject):
            for m in node.members:
                if _starts_line(text, m.key_span.start):
                    inner = _indent_of(text, m.key_span.start)
                    if outer is not None and inner.startswith(outer) and len(inner) > len(outer):
                        steps[inner[len(outer):]] += 1
                    visit(m.value, inner)
                else:
                    visit(m.value, None)

    if isinstance(doc.root, JObject):
        visit(doc.root, _indent_of(text, doc.root.span.start) if _starts_line(text, doc.root.span.start) else None)
    return steps.most_common(1)[0][0] if steps else "  "


def format_value(value: Any, indent: str, unit: str, newline: str, multiline: bool) -> str:
    """JSON text for value; dicts spread over lines (starting at indent) when multiline."""
    if isinstance(value, dict) and value and multiline:
        inner = indent + unit
        parts = [f"{inner}{dumps(k)}: {format_value(v, inner, unit, newline, True)}" for k, v in value.items()]
        return "{" + newline + ("," + newline).join(parts) + newline + indent + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(k)}: {format_value(v, indent, unit, newline, False)}"
                               for k, v in value.items()) + "}"
    return dumps(value)


# -- the edits ---------------------------------------------------------------------------------------------------
def set_value(node: JNode, value: Any, text: str | None = None, doc: JSONDocument | None = None) -> Edit:
    """Replace a value. Objects are laid out like the surrounding file when text and doc are given."""
    if isinstance(value, dict) and text is not None and doc is not None and "\n" in text:
        indent = _indent_of(text, node.span.start)
        return Edit(node.span.start, node.span.end,
                    format_value(value, indent, indent_unit(text, doc), _newline(text), True))
    return Edit(node.span.start, node.span.end, format_value(value, "", "", "", False))


def rename_key(member: JMember, new_key: str) -> Edit:
    return Edit(member.key_span.start, member.key_span.end, dumps(new_key))


def delete_member(text: str, obj: JObject, member: JMember, index: int | None = None) -> tuple[Edit, ...]:
    """Remove a member with its comma. A member alone on its line(s) takes its whole lines (and a comment that
    follows it on its last line); when the last member goes, the comma before it goes too. ``index``: the member's
    place in ``obj.members`` when the caller knows it (a search per member is quadratic in the object's size)."""
    if index is None or obj.members[index] is not member:
        index = next(i for i, m in enumerate(obj.members) if m is member)
    prev = obj.members[index - 1] if index > 0 else None
    comma = _comma_after(text, member.value.span.end)
    after = comma + 1 if comma is not None else member.value.span.end
    edits: list[Edit] = []
    own_lines = False
    if _starts_line(text, member.key_span.start):
        line_end = _line_end(text, after)
        i = after
        while i < line_end and text[i] in _BLANK:
            i += 1
        own_lines = (i == line_end or text.startswith(("//", "#"), i)) and line_end < obj.span.end - 1
    if own_lines:
        start = _line_start(text, member.key_span.start)
        nl = text.find("\n", line_end)
        end = len(text) if nl == -1 else nl + 1
        edits.append(Edit(start, end, ""))
        if comma is None and prev is not None:
            prev_comma = _comma_after(text, prev.value.span.end)
            if prev_comma is not None:
                edits.append(Edit(prev_comma, prev_comma + 1, ""))
        return tuple(edits)
    if comma is not None:
        end = comma + 1
        while end < len(text) and text[end] in _BLANK:
            end += 1
        return (Edit(member.key_span.start, end, ""),)
    if prev is not None:
        prev_comma = _comma_after(text, prev.value.span.end)
        start = prev_comma if prev_comma is not None else prev.value.span.end
        return (Edit(start, member.value.span.end, ""),)
    return (Edit(member.key_span.start, member.value.span.end, ""),)


def insert_member(text: str, doc: JSONDocument, obj: JObject, key: str, value: Any) -> tuple[Edit, ...]:
    """Append ``"key": value`` to obj, in the object's own layout."""
    newline = _newline(text)
    unit = indent_unit(text, doc)
    if obj.members:
        last = obj.members[-1]
        multiline = _starts_line(text, last.key_span.start) and _is_multiline(text, obj)
        if multiline:
            indent = _indent_of(text, last.key_span.start)
            member_text = f"{dumps(key)}: {format_value(value, indent, unit, newline, True)}"
            comma = _comma_after(text, last.value.span.end)
            if comma is not None:  # the object already ends with a trailing comma: keep that style
                line_end = _line_end(text, comma)
                return (Edit(line_end, line_end, newline + indent + member_text + ","),)
            line_end = _line_end(text, last.value.span.end)
            if line_end >= obj.span.end - 1:  # closing brace on the same line as the last member
                return (Edit(last.value.span.end, last.value.span.end, "," + newline + indent + member_text),)
            return (Edit(last.value.span.end, last.value.span.end, ","),
                    Edit(line_end, line_end, newline + indent + member_text))
        member_text = f"{dumps(key)}: {format_value(value, '', unit, newline, False)}"
        comma = _comma_after(text, last.value.span.end)
        if comma is not None:
            return (Edit(comma + 1, comma + 1, " " + member_text + ","),)
        return (Edit(last.value.span.end, last.value.span.end, ", " + member_text),)
    # empty object
    close = obj.span.end - 1
    if _is_multiline(text, obj):
        outer = _indent_of(text, close) if _starts_line(text, close) else _indent_of(text, obj.span.start)
        indent = outer + unit
        member_text = f"{dumps(key)}: {format_value(value, indent, unit, newline, True)}"
        return (Edit(obj.span.start + 1, close, newline + indent + member_text + newline + outer),)
    member_text = f"{dumps(key)}: {format_value(value, '', unit, newline, False)}"
    return (Edit(obj.span.start + 1, close, member_text),)


def insert_path(text: str, doc: JSONDocument, path: list[str], value: Any) -> tuple[Edit, ...]:
    """Set ``a.b.c = value``, creating the objects on the way; an existing non-object on the way is replaced."""
    node = doc.root
    if not isinstance(node, JObject):
        raise ValueError("the document is not an object")
    for i, part in enumerate(path):
        member = node.member(part)
        rest = path[i + 1:]
        nested: Any = value
        for name in reversed(rest):
            nested = {name: nested}
        if member is None:
            return insert_member(text, doc, node, part, nested)
        if not rest:
            return (set_value(member.value, value, text if _is_multiline(text, node) else None, doc),)
        if not isinstance(member.value, JObject):
            return (set_value(member.value, nested, text if _is_multiline(text, node) else None, doc),)
        node = member.value
    raise ValueError("empty path")
