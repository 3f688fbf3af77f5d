"""Regular expressions compiled when first used.

``re`` parses and compiles patterns in Python, 20-300 µs each; a one-file run used to compile about 30 module-level
patterns at import, half of them for file kinds it never saw (~1.7 ms). ``lazy_compile`` has the signature of
``re.compile`` and returns an object that compiles on its first attribute access and then forwards to the pattern.
Pass ``.compiled`` where a real ``re.Pattern`` is required (``re.sub(PATTERN, ...)``).
"""
from __future__ import annotations

import re


class LazyPattern:
    __slots__ = ("_source", "_flags", "_pattern")

    def __init__(self, source, flags: int = 0):
        self._source = source
        self._flags = flags
        self._pattern = None

    @property
    def compiled(self) -> re.Pattern:
        if self._pattern is None:
            self._pattern = re.compile(self._source, self._flags)
        return self._pattern

    def __getattr__(self, name):  # only for names that are not slots: match, sub, finditer, pattern, groups ...
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source!r}, {self._flags!r})"


def lazy_compile(source, flags: int = 0) -> LazyPattern:
    return LazyPattern(source, flags)
