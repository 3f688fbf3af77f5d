"""Inline suppressions: ``# rlhf-lint: ignore[CODE, ...]`` on a line, ``# rlhf-lint: ignore-file[CODE]`` anywhere.

A bare ``ignore`` (no brackets) silences every rule on that line. Each directive records whether it silenced
something, so unused ones can be reported.
"""
from __future__ import annotations


from rlhf_lint.startup.records import field, record
from rlhf_lint.model import Span
from rlhf_lint.readers.source import Source
from rlhf_lint.startup.lazyre import lazy_compile

DIRECTIVE = lazy_compile(r"(?:#|//)\s*rlhf-lint:\s*(ignore-file|ignore)\b(?:\[([^\]]*)\])?")
COMMENT_KINDS = {"shell", "python", "yaml", "requirements", "pyproject_toml", "setup_cfg", "dockerfile", "json", "ds_config"}


@record
class Directive:
    line: int
    span: Span
    file_wide: bool
    codes: tuple[str, ...]  # empty: all rules
    used: set[str] = field(default_factory=set)

    def matches(self, code: str, name: str) -> bool:
        return not self.codes or code in self.codes or name in self.codes


@record
class Suppressions:
    directives: list[Directive]

    @classmethod
    def scan(cls, source: Source) -> "Suppressions":
        if source.kind not in COMMENT_KINDS or "rlhf-lint:" not in source.text:
            return cls([])
        from bisect import bisect_right

        from rlhf_lint.readers.comments import comment_ranges

        ranges = None
        found = []
        for m in DIRECTIVE.finditer(source.text):
            # a directive counts only inside a comment: not in a Python string, a quoted shell word or YAML scalar
            if ranges is None:
                ranges = comment_ranges(source.text, source.kind)
                starts = [a for a, _ in ranges]
            k = bisect_right(starts, m.start()) - 1
            if k < 0 or m.start() >= ranges[k][1]:
                continue
            codes = tuple(c.strip() for c in (m.group(2) or "").split(",") if c.strip())
            found.append(Directive(source.position(m.start()).line, Span(m.start(), m.end()),
                                   m.group(1) == "ignore-file", codes))
        return cls(found)

    def suppresses(self, line: int, code: str, name: str) -> bool:
        hit = False
        for d in self.directives:
            if (d.file_wide or d.line == line) and d.matches(code, name):
                d.used.add(code)
                hit = True
        return hit
