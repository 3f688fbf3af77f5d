"""One file as read from disk: bytes, decoded text, newline style and a lazily built line index."""
from __future__ import annotations

import os
import stat

try:  # the C functions, without bisect.py (~0.3 ms of a one-file run)
    from _bisect import bisect_right
except ImportError:  # an interpreter without the accelerator
    from bisect import bisect_right

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.startup.records import field, record
from rlhf_lint.model import Position, Span

BOM = "\ufeff"
# byte-order marks of encodings bash, Python and json.load do not read by default (UTF-32 before UTF-16: FF FE 00 00)
WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
             (b"\xfe\xff", "UTF-16"))


class DecodeError(Exception):
    """Why a file's bytes are no text rlhf-lint reads; ``position``: where the first bad byte is, when there is one."""

    def __init__(self, message: str, position: Position | None = None):
        super().__init__(message)
        self.position = position


def _invalid_utf8(raw: bytes, exc: UnicodeDecodeError) -> DecodeError:
    """The error for the first byte that is not UTF-8, at its line and column (characters, as every diagnostic
    counts them; a UTF-8 byte-order mark, which the text leaves out, not counted)."""
    line_start = raw.rfind(b"\n", 0, exc.start) + 1
    before = raw[line_start:exc.start].decode("utf-8")  # the first bad byte: all before it decodes
    if line_start == 0:
        before = before.removeprefix(BOM)
    position = Position(raw.count(b"\n", 0, exc.start) + 1, len(before) + 1)
    return DecodeError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02X}: {exc.reason})", position)


# -- reading a file from disk, in bounded time and memory ---------------------------------------------------------
class Refused(OSError):
    """A file read_regular does not read; its ``strerror`` says why, in words for a diagnostic."""


class NotRegularFile(Refused):
    def __init__(self, mode: int):
        super().__init__(0, "not a regular file")
        self.mode = mode  # the file's st_mode: a caller tells a folder from a FIFO or a device by it


class FileTooLarge(Refused):
    def __init__(self, limit: int, size: int | None):
        what = f"file is {size / 1e6:.1f} MB, over" if size is not None else "file is over"
        super().__init__(0, f"{what} the {_mib(limit)} limit")  # size None: it grew past the limit after a stat


class OutsideRoots(Refused):
    def __init__(self, target: str):
        super().__init__(0, f"a symlink that resolves to {target}, outside the paths being checked: not read")


def _mib(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


# opening a FIFO without a writer waits forever, unless non-blocking; O_BINARY: no newline translation on Windows
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def within(real: str, roots) -> bool:
    """Whether the real path ``real`` is one of the real folders ``roots`` or lies under one."""
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def read_regular(path: str, limit: int, prefix: bool = False, roots=()) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path`` (a symlink followed) and its stat, in bounded time and memory: every
    reader of files from disk goes through here. Refused (Refused, an OSError) before a byte is read: a folder, FIFO,
    socket or device (NotRegularFile: a FIFO blocks, /dev/zero never ends); a file over ``limit`` bytes
    (FileTooLarge), unless ``prefix``, which gives its first ``limit`` bytes; with ``roots`` (real folders), a symlink
    whose target lies outside them (OutsideRoots: a link committed to a repository must not publish
    /etc/shadow in a report). Other failures raise the OS's OSError."""
    # stat before opening: a device is never opened (opening one can have effects of its own)
    st = os.lstat(path) if roots else os.stat(path)
    if stat.S_ISLNK(st.st_mode):  # discovery never descends into a symlinked folder: the last part suffices
        target = os.path.realpath(path)
        if not within(target, roots):
            raise OutsideRoots(target)
        st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(st.st_mode)
    if st.st_size > limit and not prefix:
        raise FileTooLarge(limit, st.st_size)
    with open(os.open(path, _OPEN_FLAGS), "rb") as fh:
        now = os.fstat(fh.fileno())
        if not stat.S_ISREG(now.st_mode):  # replaced between the stat and the open
            raise NotRegularFile(now.st_mode)
        raw = fh.read(limit + 1)  # the file may have grown since it was measured
    if len(raw) > limit:
        if not prefix:
            raise FileTooLarge(limit, None)
        raw = raw[:limit]
    return raw, now


@record(eq=False)
class Source:
    path: str  # as given or discovered, used in reports
    raw: bytes
    text: str  # decoded, BOM stripped; offsets in spans refer to this text
    kind: str = "unknown"  # ds_config, json, shell, python, yaml, requirements, toml, dockerfile
    has_bom: bool = False
    mode: int | None = None
    tree: Any = None  # the format-specific parse result, set by the parser
    parse_error: Any = None  # a Finding-like object when parsing failed
    internal_errors: list = field(default_factory=list, repr=False)  # InternalError from our own code, not the file
    skipped: list = field(default_factory=list, repr=False)  # (Span, message): what a reader left out, over a bound
    # for a script held by another file (a SkyPilot task's run block): the variables its shell starts with, name ->
    # (value, Span of its text or None), and the hardware the holding file asks for, under the script's own comment
    shell_env: dict = field(default_factory=dict, repr=False)
    shell_hardware: dict = field(default_factory=dict, repr=False)
    # a YAML or JSON another file names, composed on demand (rlhf_lint.readers.yaml named_yaml_docs) and kept apart
    # from ``tree`` so that the file's own rules see the same file whatever order the jobs and rules run in
    named_docs: Any = field(default=None, repr=False)
    _line_starts: list[int] | None = field(default=None, repr=False)
    _byte_to_char: Any = field(default=None, repr=False)

    @classmethod
    def from_bytes(cls, path: str, raw: bytes, kind: str = "unknown", mode: int | None = None) -> "Source":
        for mark, encoding in WIDE_BOMS:
            if raw.startswith(mark):
                raise DecodeError(f"{encoding} text (byte-order mark {mark.hex(' ').upper()}): bash, Python and "
                                  "DeepSpeed's json.load read UTF-8, as rlhf-lint does; save the file as UTF-8")
        if b"\x00" in raw[:8192]:
            raise DecodeError("binary file (contains NUL bytes)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _invalid_utf8(raw, exc) from None
        has_bom = text.startswith(BOM)
        if has_bom:
            text = text[1:]
        return cls(path=path, raw=raw, text=text, kind=kind, has_bom=has_bom, mode=mode)

    @classmethod
    def from_text(cls, path: str, text: str, kind: str = "unknown") -> "Source":
        return cls(path=path, raw=text.encode("utf-8"), text=text, kind=kind)

    @property
    def newline(self) -> str:
        i = self.text.find("\n")
        if i > 0 and self.text[i - 1] == "\r":
            return "\r\n"
        return "\n"

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    # -- positions ---------------------------------------------------------------------------------------------
    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            i = find("\n")
            while i != -1:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._line_starts = starts
        return self._line_starts

    def position(self, offset: int) -> Position:
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.line_starts, offset) - 1
        return Position(line + 1, offset - self.line_starts[line] + 1)

    def offset(self, line: int, column: int) -> int:
        """1-based line and column to an offset (clamped to the text)."""
        starts = self.line_starts
        line = max(1, min(line, len(starts)))
        return min(starts[line - 1] + max(column, 1) - 1, len(self.text))

    def line_span(self, line: int) -> Span:
        """The span of a 1-based line, without its line break."""
        starts = self.line_starts
        start = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        if end > start and self.text[end - 1] == "\r":
            end -= 1
        return Span(start, max(start, end))

    def line_text(self, line: int) -> str:
        span = self.line_span(line)
        return self.text[span.start : span.end]

    def line_count(self) -> int:
        return len(self.line_starts)

    # -- bytes <-> characters (tree-sitter works in UTF-8 bytes) -----------------------------------------------
    def char_offset(self, byte_offset: int) -> int:
        """Offset in the encoded text (without BOM) to a character offset."""
        if self._byte_to_char is None:
            encoded = self.text.encode("utf-8")
            if len(encoded) == len(self.text):
                self._byte_to_char = False  # pure ASCII: identity
            else:
                table = []
                for i, ch in enumerate(self.text):
                    table.extend([i] * len(ch.encode("utf-8")))
                table.append(len(self.text))
                self._byte_to_char = table
        if self._byte_to_char is False:
            return byte_offset
        table = self._byte_to_char
        return table[min(byte_offset, len(table) - 1)]

    def span_text(self, span: Span) -> str:
        return self.text[span.start : span.end]

    def encode(self, text: str) -> bytes:
        """Text back to bytes the way the file was written (BOM kept)."""
        return ((BOM if self.has_bom else "") + text).encode("utf-8")


class LineIndex:
    """Just enough of a Source to turn offsets into positions (what reporters need of a checked
    or cached result, once the parse trees are dropped)."""

    __slots__ = ("path", "starts", "length")

    def __init__(self, path: str, starts, length: int):
        from array import array

        # a machine array: a run keeps one per file with a fix, and a list of ints costs 36 bytes a line
        self.path, self.starts, self.length = path, array("L", starts), length

    @classmethod
    def of(cls, source) -> "LineIndex":
        return source if isinstance(source, LineIndex) else cls(source.path, source.line_starts, len(source.text))

    def position(self, offset: int):
        import bisect

        from rlhf_lint.model import Position

        offset = max(0, min(offset, self.length))
        line = bisect.bisect_right(self.starts, offset) - 1
        return Position(line + 1, offset - self.starts[line] + 1)
