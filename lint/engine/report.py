"""The diagnostics of a run, kept compact while the groups are checked, so that memory stays flat in the number of
files: each group's diagnostics (sorted) and line indexes are one zlib-compressed pickle (after the first groups,
against a preset dictionary made of their pickles), and only a few fields per group stay Python objects.
``Result.diagnostics`` and ``Result.sources`` of a run are views over it: iterating the diagnostics yields them in
``Diagnostic.sort_key`` order, a group at a time.

Pickle is safe here: the bytes never leave the process that made them."""
from __future__ import annotations

import heapq
import pickle
import zlib
from collections.abc import Mapping, Sequence

from rlhf_lint.model import Diagnostic

_KEEP = 4  # groups kept decoded: the one a reporter is reading, and the few its related locations point into
_SAMPLE = 16384  # bytes of the first groups' pickles that become the preset dictionary of the later ones
_FDICT = 0x20  # the header bit of a zlib stream compressed with a preset dictionary (RFC 1950)


class Report:
    def __init__(self) -> None:
        self._groups: list[tuple[tuple, tuple, bytes]] = []  # (first sort key, last sort key, blob), arrival order
        self._where: dict[str, int] = {}  # path -> the group holding its line index
        self._decoded: dict[int, tuple[list, dict]] = {}
        self.count = 0
        self.codes: set[str] = set()  # the codes reported: SARIF lists their rules before the results
        # a group pickles to a few KB that repeat the others' class names, rule names and messages: compressed
        # against the first groups' pickles it takes half the bytes (measured: 137 -> 60 bytes a diagnostic)
        self._sample = b""
        self._zdict: bytes | None = None

    def add(self, diagnostics: list[Diagnostic], sources: dict) -> None:
        """One group's diagnostics and line indexes (path -> LineIndex)."""
        if not diagnostics and not sources:
            return
        ordered = sorted(diagnostics, key=Diagnostic.sort_key)  # stable: equal keys keep the order they came in
        raw = pickle.dumps((ordered, sources), protocol=pickle.HIGHEST_PROTOCOL)
        if self._zdict is None:
            blob = zlib.compress(raw, 6)
            self._sample += raw
            if len(self._sample) >= _SAMPLE:
                self._zdict = self._sample[-32768:]  # zlib's window: the most of a dictionary it can use
                self._sample = b""
        else:
            packer = zlib.compressobj(6, zdict=self._zdict)
            blob = packer.compress(raw) + packer.flush()
        index = len(self._groups)
        first = ordered[0].sort_key() if ordered else ()
        last = ordered[-1].sort_key() if ordered else ()
        self._groups.append((first, last, blob))
        for path in sources:
            self._where.setdefault(path, index)
        self.count += len(ordered)
        self.codes.update(d.code for d in ordered)

    def _load(self, index: int) -> tuple[list, dict]:
        got = self._decoded.pop(index, None)
        if got is None:
            blob = self._groups[index][2]
            if blob[1] & _FDICT:
                unpacker = zlib.decompressobj(zdict=self._zdict)
                raw = unpacker.decompress(blob) + unpacker.flush()
            else:
                raw = zlib.decompress(blob)
            got = pickle.loads(raw)
            if len(self._decoded) >= _KEEP:
                del self._decoded[next(iter(self._decoded))]  # the least recently used
        self._decoded[index] = got
        return got

    def __iter__(self):
        """The diagnostics in sort-key order. Groups whose key ranges do not overlap (one repository each, in the
        usual run) are read one after the other; those that overlap are merged, ties in the order they came in,
        as a stable sort of everything would order them."""
        order = sorted((i for i, g in enumerate(self._groups) if g[0]), key=lambda i: self._groups[i][0])
        cluster: list[int] = []
        upper: tuple = ()
        for i in order:
            first, last, _ = self._groups[i]
            if cluster and first > upper:
                yield from self._cluster(cluster)
                cluster = []
            if not cluster or last > upper:
                upper = last
            cluster.append(i)
        if cluster:
            yield from self._cluster(cluster)

    def _cluster(self, indices: list[int]):
        if len(indices) == 1:
            yield from self._load(indices[0])[0]
            return
        lists = [self._load(i)[0] for i in sorted(indices)]
        yield from heapq.merge(*lists, key=Diagnostic.sort_key)

    def line_index(self, path: str):
        index = self._where.get(path)
        return None if index is None else self._load(index)[1].get(path)


class Diagnostics(Sequence):
    """``Result.diagnostics`` of a run: a read-only sequence over a Report (indexing decodes it all: iterate)."""

    ordered_by_path = True  # iteration is in sort-key order, path first: reporters may forget a file once past it

    def __init__(self, report: Report) -> None:
        self._report = report

    def codes(self) -> set[str]:
        """The codes reported, without decoding the groups."""
        return set(self._report.codes)

    def __iter__(self):
        return iter(self._report)

    def __len__(self) -> int:
        return self._report.count

    def __getitem__(self, item):
        return list(self._report)[item]

    def __eq__(self, other) -> bool:
        return isinstance(other, (list, tuple, Sequence)) and list(self) == list(other)

    def __repr__(self) -> str:
        return repr(list(self))


class LineIndexes(Mapping):
    """``Result.sources`` of a run: path -> LineIndex of each file a diagnostic's fix or related location needs."""

    def __init__(self, report: Report) -> None:
        self._report = report

    def __getitem__(self, path: str):
        got = self._report.line_index(path)
        if got is None:
            raise KeyError(path)
        return got

    def __iter__(self):
        return iter(self._report._where)

    def __len__(self) -> int:
        return len(self._report._where)
