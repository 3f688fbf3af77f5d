"""Regular expressions compiled when first used.

``re`` parses and compiles patterns in Python, 20-300 µs each; a one-file run used to compile about 30 module-level
patterns at import, half of them for file kinds it never saw (~1.7 ms). ``lazy_compile`` has the signature of
``re.compile`` and returns an object that compiles on its first use and then forwards to the pattern.
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

    # the usual calls forward directly (a bound ``.search`` can be kept without compiling anything yet)
    def match(self, *args):
        return self.compiled.match(*args)

    def fullmatch(self, *args):
        return self.compiled.fullmatch(*args)

    def search(self, *args):
        return self.compiled.search(*args)

    def finditer(self, *args):
        return self.compiled.finditer(*args)

    def findall(self, *args):
        return self.compiled.findall(*args)

    def sub(self, *args, **kwargs):
        return self.compiled.sub(*args, **kwargs)

    def split(self, *args, **kwargs):
        return self.compiled.split(*args, **kwargs)

    def __getattr__(self, name):  # anything else: subn, pattern, groups, groupindex ...
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source!r}, {self._flags!r})"


def lazy_compile(source, flags: int = 0) -> LazyPattern:
    return LazyPattern(source, flags)
