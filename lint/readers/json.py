"""A JSON reader that keeps the span of every key and value.

It accepts the relaxed syntax DeepSpeed's hjson loader takes (``//``, ``#`` and ``/* */`` comments, trailing commas)
and records each use, because the Hugging Face / accelerate path reads the same file with strict ``json.load``.
Duplicate keys are kept in order (DeepSpeed raises on them, ``json.load`` keeps the last).
"""
from __future__ import annotations

import math
import re
from json.decoder import scanstring as _scanstring

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any, Iterator

from rlhf_lint.startup.records import field, record
from rlhf_lint.model import ParseError, Span
from rlhf_lint.readers.numbers import overlong_message
from rlhf_lint.startup.lazyre import lazy_compile

MAX_DEPTH = 200


class JSONError(Exception):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.message = message
        self.offset = offset


@record(eq=False)
class JNode:
    span: Span

    def to_python(self) -> Any:
        raise NotImplementedError


@record(eq=False)
class JValue(JNode):
    value: Any  # str, int, float, bool or None

    def to_python(self) -> Any:
        return self.value


@record(eq=False)
class JMember:
    key: str
    key_span: Span
    value: JNode

    @property
    def span(self) -> Span:
        return Span(self.key_span.start, self.value.span.end)


@record(eq=False)
class JObject(JNode):
    members: list[JMember] = field(default_factory=list)

    def get(self, key: str) -> JNode | None:
        member = self.member(key)
        return None if member is None else member.value

    def member(self, key: str) -> JMember | None:
        members = self.members
        if len(members) > 64:  # a large object: one index, not a scan per lookup (rules look up ~200 keys)
            index = self.__dict__.get("_index")
            if index is None or index[0] != len(members):
                index = (len(members), {m.key: m for m in members})  # the last duplicate wins
                self.__dict__["_index"] = index
            return index[1].get(key)
        for m in reversed(members):  # the last duplicate wins, as in json.load
            if m.key == key:
                return m
        return None

    def keys(self) -> list[str]:
        return [m.key for m in self.members]

    def to_python(self) -> dict:
        return {m.key: m.value.to_python() for m in self.members}


@record(eq=False)
class JArray(JNode):
    items: list[JNode] = field(default_factory=list)

    def to_python(self) -> list:
        return [i.to_python() for i in self.items]


@record
class JSONDocument:
    root: JNode
    comments: list[Span] = field(default_factory=list)
    trailing_commas: list[Span] = field(default_factory=list)

    def walk(self) -> Iterator[tuple[str, JMember]]:
        """Every object member with its dotted path (array items are skipped over, not indexed)."""
        yield from _walk(self.root, "")

    def lookup(self, dotted: str) -> JNode | None:
        node: JNode | None = self.root
        for part in dotted.split("."):
            if not isinstance(node, JObject):
                return None
            node = node.get(part)
        return node


def _walk(node: JNode, prefix: str) -> Iterator[tuple[str, JMember]]:
    if isinstance(node, JObject):
        for m in node.members:
            path = f"{prefix}.{m.key}" if prefix else m.key
            yield path, m
            yield from _walk(m.value, path)
    elif isinstance(node, JArray):
        for item in node.items:
            yield from _walk(item, prefix)


_NUMBER = lazy_compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WS = " \t\r\n"
_HEX4 = lazy_compile(r"[0-9a-fA-F]{4}")
_PLAIN = lazy_compile(r'[^"\\\n]*')  # what a string holds up to its next quote, escape or line break
_BLANK = lazy_compile(r"[ \t\r\n]+")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.n = len(text)
        self.comments: list[Span] = []
        self.trailing: list[Span] = []
        self._plain, self._blank = _PLAIN.compiled.match, _BLANK.compiled.match  # bound: called per token

    def error(self, message: str, offset: int | None = None) -> JSONError:
        return JSONError(message, self.pos if offset is None else offset)

    def skip(self) -> None:
        text, n = self.text, self.n
        while self.pos < n:
            ch = text[self.pos]
            if ch in _WS:
                self.pos = self._blank(text, self.pos).end()
            elif ch == "#" or text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                end = n if end == -1 else end
                self.comments.append(Span(self.pos, end))
                self.pos = end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end == -1:
                    raise self.error("unterminated /* comment")
                self.comments.append(Span(self.pos, end + 2))
                self.pos = end + 2
            else:
                return

    def parse(self) -> JSONDocument:
        self.skip()
        if self.pos >= self.n:
            raise self.error("empty document")
        root = self.value(0)
        self.skip()
        if self.pos < self.n:
            raise self.error(f"unexpected {self.text[self.pos]!r} after the end of the document")
        return JSONDocument(root, self.comments, self.trailing)

    def value(self, depth: int) -> JNode:
        if depth > MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH} levels")
        if self.pos >= self.n:
            raise self.error("unexpected end of file")
        ch = self.text[self.pos]
        if ch == "{":
            return self.obj(depth)
        if ch == "[":
            return self.array(depth)
        if ch == '"':
            start = self.pos
            s = self.string()
            return JValue(Span(start, self.pos), s)
        m = _NUMBER.match(self.text, self.pos)
        if m and m.end() > self.pos:
            raw = m.group()
            self.pos = m.end()
            try:
                value: Any = float(raw) if any(c in raw for c in ".eE") else int(raw)
            except ValueError:  # over Python's 4300-digit limit: json.load (DeepSpeed's reader) refuses it too
                raise JSONError(overlong_message(len(raw.lstrip("-"))), m.start()) from None
            return JValue(Span(m.start(), m.end()), value)
        # Python's json module, which DeepSpeed, transformers and accelerate load configs with, accepts these too
        for word, val in (("true", True), ("false", False), ("null", None), ("NaN", math.nan),
                          ("Infinity", math.inf), ("-Infinity", -math.inf)):
            if self.text.startswith(word, self.pos):
                start = self.pos
                self.pos += len(word)
                return JValue(Span(start, self.pos), val)
        if ch == "'":
            raise self.error("strings must use double quotes")
        word = re.match(r"[A-Za-z_][A-Za-z0-9_]*", self.text[self.pos :])
        if word:
            raise self.error(f"unexpected bare word {word.group()!r} (strings need double quotes)")
        raise self.error(f"unexpected character {ch!r}")

    def string(self) -> str:
        # the json module's C scanner reads a well-formed string (no control character) with the same result;
        # anything it refuses goes through the loop below, which says what is wrong and where
        try:
            value, end = _scanstring(self.text, self.pos + 1, True)
        except ValueError:
            return self._string()
        self.pos = end
        return value

    def _string(self) -> str:
        text = self.text
        self.pos += 1
        out: list[str] = []
        start = self.pos
        while True:
            if self.pos >= self.n:
                raise self.error("unterminated string", start - 1)
            ch = text[self.pos]
            if ch == '"':
                out.append(text[start : self.pos])
                self.pos += 1
                return "".join(out)
            if ch == "\\":
                out.append(text[start : self.pos])
                esc = text[self.pos + 1 : self.pos + 2]
                if esc in _ESCAPES:
                    out.append(_ESCAPES[esc])
                    self.pos += 2
                elif esc == "u" and _HEX4.fullmatch(text, self.pos + 2, self.pos + 6):
                    code = int(text[self.pos + 2 : self.pos + 6], 16)
                    self.pos += 6
                    low = text[self.pos + 2 : self.pos + 6]
                    if 0xD800 <= code < 0xDC00 and text.startswith("\\u", self.pos) and _HEX4.fullmatch(low) \
                            and 0xDC00 <= int(low, 16) < 0xE000:  # a UTF-16 surrogate pair is one character
                        code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                        self.pos += 6
                    out.append(chr(code))
                else:
                    raise self.error("invalid escape in string")
                start = self.pos
            elif ch == "\n":
                raise self.error("line break inside a string")
            else:  # a run of plain characters in one C call: a 2 MB string took seconds a character at a time
                self.pos = self._plain(text, self.pos + 1).end()

    def obj(self, depth: int) -> JObject:
        start = self.pos
        self.pos += 1
        members: list[JMember] = []
        self.skip()
        while True:
            if self.pos >= self.n:
                raise self.error("unterminated object", start)
            if self.text[self.pos] == "}":
                self.pos += 1
                return JObject(Span(start, self.pos), members)
            if self.text[self.pos] != '"':
                raise self.error("expected a double-quoted key or '}'")
            key_start = self.pos
            key = self.string()
            key_span = Span(key_start, self.pos)
            self.skip()
            if self.pos >= self.n or self.text[self.pos] != ":":
                raise self.error(f"expected ':' after key {key!r}")
            self.pos += 1
            self.skip()
            members.append(JMember(key, key_span, self.value(depth + 1)))
            self.skip()
            if self.pos < self.n and self.text[self.pos] == ",":
                comma = self.pos
                self.pos += 1
                self.skip()
                if self.pos < self.n and self.text[self.pos] == "}":
                    self.trailing.append(Span(comma, comma + 1))
            elif self.pos < self.n and self.text[self.pos] != "}":
                raise self.error("expected ',' or '}'")

    def array(self, depth: int) -> JArray:
        start = self.pos
        self.pos += 1
        items: list[JNode] = []
        self.skip()
        while True:
            if self.pos >= self.n:
                raise self.error("unterminated array", start)
            if self.text[self.pos] == "]":
                self.pos += 1
                return JArray(Span(start, self.pos), items)
            items.append(self.value(depth + 1))
            self.skip()
            if self.pos < self.n and self.text[self.pos] == ",":
                comma = self.pos
                self.pos += 1
                self.skip()
                if self.pos < self.n and self.text[self.pos] == "]":
                    self.trailing.append(Span(comma, comma + 1))
            elif self.pos < self.n and self.text[self.pos] != "]":
                raise self.error("expected ',' or ']'")


def parse_json(text: str) -> JSONDocument:
    return _Parser(text).parse()


def parse_json_source(source) -> JSONDocument:
    """The reader of the engine's "json" and "ds_config" kinds: a JSONDocument, or ParseError where it fails."""
    try:
        return parse_json(source.text)
    except JSONError as exc:
        raise ParseError(f"invalid JSON: {exc.message}", exc.offset) from None
