"""The linter's vocabulary: spans, edits, fixes, findings, diagnostics and settings.

Offsets are character offsets into a Source's decoded text (not bytes); a Source turns them into 1-based
line/column pairs. Everything here is a plain immutable value so rules stay pure.
"""
from __future__ import annotations

import enum
from rlhf_lint.startup.records import field, record
from rlhf_lint.settings import DECLARED, check_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any


class Severity(enum.IntEnum):
    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (expected error, warning or info)") from None


class Applicability(str, enum.Enum):
    SAFE = "safe"  # meaning unchanged (a rename of a deprecated key)
    UNSAFE = "unsafe"  # changes behaviour or environment (a new ZeRO stage, a new pin)
    DISPLAY = "display"  # shown as a suggestion, never applied


@record(frozen=True, slots=True)
class Span:
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(f"bad span {self.start}..{self.end}")

    def __contains__(self, offset: int) -> bool:
        return self.start <= offset < self.end


@record(frozen=True, slots=True)
class Edit:
    """Replace text[start:end] with content (an insertion when start == end)."""

    start: int
    end: int
    content: str

    @classmethod
    def replace(cls, span: Span, content: str) -> "Edit":
        return cls(span.start, span.end, content)

    @classmethod
    def insert(cls, offset: int, content: str) -> "Edit":
        return cls(offset, offset, content)

    @classmethod
    def delete(cls, span: Span) -> "Edit":
        return cls(span.start, span.end, "")


@record(frozen=True, slots=True)
class Fix:
    message: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE

    def __post_init__(self) -> None:
        ordered = sorted(self.edits, key=lambda e: (e.start, e.end))
        for a, b in zip(ordered, ordered[1:]):
            if b.start < a.end:
                raise ValueError(f"overlapping edits in fix {self.message!r}")
        object.__setattr__(self, "edits", tuple(ordered))

    @property
    def span(self) -> Span:
        return Span(self.edits[0].start, max(e.end for e in self.edits))


@record(frozen=True, slots=True)
class Related:
    """The other end of a cross-file fact (the launch script that sets the world size, the pin that conflicts)."""

    path: str
    span: Span | None
    message: str


@record(frozen=True, slots=True)
class Finding:
    """What a rule returns: where and what. The engine adds the rule's code, name and severity."""

    span: Span | None
    message: str
    fix: Fix | None = None
    related: tuple[Related, ...] = ()
    severity: Severity | None = None  # overrides the rule's default (a fact with its own severity)
    path: str | None = None  # defaults to the file being checked
    position: Position | None = None  # where, in a file with no text to hold a span (a byte that is not UTF-8)


@record(frozen=True, slots=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based, in characters


@record(slots=True)
class Diagnostic:
    code: str
    name: str
    severity: Severity
    message: str
    path: str
    span: Span | None
    start: Position
    end: Position
    fix: Fix | None = None
    related: tuple[Related, ...] = ()
    source_line: str = ""  # an excerpt of the line (at most MAX_EXCERPT characters around the span), not all of it
    source_line_start: int = 0  # characters of the line left out before the excerpt (its column is this + 1)
    source_line_cut: bool = False  # whether characters of the line were left out after the excerpt

    def sort_key(self) -> tuple:
        return (self.path, self.start.line, self.start.column, self.code)


def paths_with_positions(diagnostics) -> set[str]:
    """The files whose line index the reports need once parse trees are dropped: fix edits, related spans."""
    wanted = {d.path for d in diagnostics if d.fix is not None}
    wanted.update(r.path for d in diagnostics for r in d.related if r.span is not None)
    return wanted


MAX_EXCERPT = 200  # characters of a source line a diagnostic carries and prints: output linear in findings
MAX_MESSAGE = 2000  # characters of a message (one that quotes a huge value is cut)


def excerpt(text: str, line_start: int, line_end: int, column: int) -> tuple[str, int, bool]:
    """The part of the line text[line_start:line_end] a diagnostic at 1-based ``column`` shows: at most MAX_EXCERPT
    characters, starting up to a third of it before the column; (excerpt, characters left out before, cut after)."""
    if line_end - line_start <= MAX_EXCERPT:
        return text[line_start:line_end], 0, False
    skip = min(max(0, column - 1 - MAX_EXCERPT // 3), line_end - line_start - MAX_EXCERPT)
    begin = line_start + skip
    end = begin + MAX_EXCERPT
    return text[begin:end], skip, end < line_end


@record(frozen=True, slots=True)
class Setting:
    """One configured value in the common vocabulary, wherever and however it was written.

    key: dotted common name (``zero.stage``, ``vllm.gpu_memory_utilization``, ``topology.actor.nodes``), declared in
    rlhf_lint.settings; Settings refuses any other. (A Setting outside Settings may name something else: the pins
    reader's ``pin.<package>``, an ORZ launch's ``exp.<field>=`` override under its field's name.)
    value: the resolved Python value, or UNKNOWN when it cannot be known statically.
    origin: a short human explanation of where the value came from when it is not written literally
    (``$ZERO from line 3``, ``ORZ base default``, ``DeepSpeed default``).
    """

    key: str
    value: Any
    path: str | None = None
    span: Span | None = None
    origin: str = ""
    raw: str | None = None  # the text as written, when it differs from the value
    # an UNKNOWN value's known end (``$HOME/models/Qwen2.5-7B``: ``/models/Qwen2.5-7B``): a path may still name its model
    tail: str = ""

    @property
    def filled(self) -> bool:
        """The value is, or rests on, one the hardware profile supplied because the launch left it open (a world
        size of nodes x a filled GPU count names the filled part in its origin)."""
        return FILLED in self.origin


FILLED = "hardware profile"  # begins the origin of every value the hardware profile filled (launch model)


class _Unknown:
    """A value the linter cannot know without running something (``$(cmd)``, an unset variable)."""

    _instance: "_Unknown | None" = None

    def __new__(cls) -> "_Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = _Unknown()


def is_known(value: Any) -> bool:
    return value is not UNKNOWN


MAX_SETTING_NUMBER = 1 << 62  # no count, size or rate of a real launch comes near; past it a value is unknown


def in_range(value: Any) -> bool:
    """Whether a number is one arithmetic can use: finite and within MAX_SETTING_NUMBER (non-numbers: True)."""
    if type(value) is float or type(value) is int:
        return -MAX_SETTING_NUMBER < value < MAX_SETTING_NUMBER
    return True


def _bounded(setting: Setting) -> Setting:
    """The setting, or the same one with an UNKNOWN value when its number is infinite, NaN or beyond
    MAX_SETTING_NUMBER (``Infinity`` in a ds_config, a 4,000-digit verl override): arithmetic on it would fail or
    loop, and no rule can say what such a launch does."""
    value = setting.value
    if not in_range(value):
        raw = setting.raw if setting.raw is not None else (repr(value) if type(value) is float else "a huge integer")
        return Setting(setting.key, UNKNOWN, setting.path, setting.span,
                       (setting.origin + "; " if setting.origin else "") + "a number out of range: not used", raw[:40])
    return setting


@record(slots=True)
class Settings:
    """An ordered bag of Settings; the last write of a key wins, as in argparse and dict merges.

    Every key stored or asked for must be declared in rlhf_lint.settings: an undeclared one (a typo) raises
    UndeclaredSetting instead of reading None. (A frozenset membership test per call; the lookups scan the items.)
    """

    items: list[Setting] = field(default_factory=list)

    def __post_init__(self) -> None:
        for setting in self.items:
            check_key(setting.key)
        self.items = [_bounded(s) for s in self.items]

    def add(self, setting: Setting) -> None:
        if setting.key not in DECLARED:
            check_key(setting.key)
        self.items.append(_bounded(setting))

    def get(self, key: str) -> Setting | None:
        if key not in DECLARED:
            check_key(key)
        for setting in reversed(self.items):
            if setting.key == key:
                return setting
        return None

    def value(self, key: str, default: Any = None) -> Any:
        setting = self.get(key)
        return default if setting is None else setting.value

    def all(self, key: str) -> list[Setting]:
        if key not in DECLARED:
            check_key(key)
        return [s for s in self.items if s.key == key]

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


# what a hardware profile sets, in configuration ([tool.rlhf-lint]) and in a script's `# rlhf-lint: hardware` comment
HARDWARE_KEYS = ("gpu", "gpu-memory", "gpus-per-node", "host-memory", "container-memory", "nodes")


@record(frozen=True)
class InternalError:
    """An exception raised by our own code (a parser, job builder, rule or fixer) while checking one file.
    It becomes an F010 diagnostic on that file; the rest of the run goes on. ``--debug`` re-raises instead."""

    path: str | None
    stage: str  # "parser", "job builder", "rule D102 unknown-ds-config-key", "fix"
    error: str  # "KeyError: 'x'"

    @classmethod
    def of(cls, path: str | None, stage: str, exc: BaseException) -> "InternalError":
        return cls(path, stage, f"{type(exc).__name__}: {exc}"[:300])


# set by the runner from --debug: internal errors propagate with their traceback instead of becoming F010
DEBUG = {"raise": False}


class OverBounds(Exception):
    """Input a reader will not finish in bounded time or memory (tree-sitter's error recovery on deeply nested,
    broken text): the file is recorded as skipped (F004) and the others are still checked."""


class ParseError(Exception):
    def __init__(self, message: str, offset: int | None = None, end: int | None = None):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.end = end
