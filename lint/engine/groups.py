"""Partitioning the files of a run into groups that can be checked independently (in parallel, and cached).

Findings can be cross-file: a launch script names a ds_config, requirements pins set the framework version for
the scripts of their repository, a job is assembled from several files. A group must therefore hold every file
whose content can change another member's findings. The partition:

1. by repository: files share a group when they have the same nearest ancestor holding a repository marker
   (``.git``, ``pyproject.toml``, ``setup.py``, ``setup.cfg``, ``rlhf-lint.toml``); files with no marker above
   them form one group together. Everything a repository's files say about each other stays in one group.
2. across repositories, by an over-approximate reference graph: when a file contains a path-like token that,
   by the same candidate list Project.resolve uses (rlhf_lint.engine.project.reference_candidates), can name a file of
   another group, the two groups merge.

Every run is checked group by group, serial or parallel, so the findings do not depend on the number of workers.
"""
from __future__ import annotations

import os

from rlhf_lint.engine.ancestors import nearest
from rlhf_lint.engine.project import reference_candidates
from rlhf_lint.readers.source import read_regular
from rlhf_lint.startup.lazyre import lazy_compile

REPO_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg", "rlhf-lint.toml", ".rlhf-lint.toml")
TOKEN = lazy_compile(r"[A-Za-z0-9_.~/\-]+")
MAX_SCAN_BYTES = 1 << 20  # a reference is written near the launch command; huge files are scanned in part


def repository_root(directory: str, memo: dict[str, str]) -> str:
    """The nearest ancestor of ``directory`` (itself included) with a repository marker, or "" if none."""
    return nearest(directory, memo, _marked, "")


def _marked(folder: str) -> str | None:
    return folder if any(os.path.exists(os.path.join(folder, m)) for m in REPO_MARKERS) else None


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        parent = self.parent.setdefault(x, x)
        while parent != x:
            grand = self.parent.setdefault(parent, parent)
            self.parent[x] = grand
            x, parent = parent, grand
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def partition(discovered: list[tuple[str, bool]], root: str, roots: tuple = ()) -> list[list[tuple[str, bool]]]:
    """Split (path, explicit) pairs into independent groups, each in discovery order; groups in first-seen order.
    ``roots``: the real folders files are read under (rlhf_lint.engine.runner.Options.roots)."""
    if len(discovered) <= 1:
        return [list(discovered)] if discovered else []
    memo: dict[str, str] = {}
    group_of: dict[str, str] = {}  # absolute path -> repository root
    by_location: dict[str, str] = {}  # absolute and real path -> absolute path
    basenames: set[str] = set()
    for path, _explicit in discovered:
        absolute = os.path.abspath(path)
        group_of[absolute] = repository_root(os.path.dirname(absolute), memo)
        by_location[absolute] = absolute
        if os.path.islink(path):
            by_location[os.path.realpath(path)] = absolute
        basenames.add(os.path.basename(path))
    uf = _UnionFind()
    if len(set(group_of.values())) > 1:
        for path, _explicit in discovered:
            absolute = os.path.abspath(path)
            for target in _referenced(path, root, basenames, by_location, roots):
                if group_of[target] != group_of[absolute]:
                    uf.union(group_of[target], group_of[absolute])
    groups: dict[str, list[tuple[str, bool]]] = {}
    for item in discovered:
        groups.setdefault(uf.find(group_of[os.path.abspath(item[0])]), []).append(item)
    return list(groups.values())


def _referenced(path: str, root: str, basenames: set[str], by_location: dict[str, str], roots: tuple) -> set[str]:
    """Discovered files (absolute paths) that a path-like token of ``path`` may name."""
    try:  # a FIFO, a device or a symlink out of the tree is not read (the runner reports it), nor scanned here
        raw, _ = read_regular(path, MAX_SCAN_BYTES, prefix=True, roots=roots)
    except OSError:
        return set()
    text = raw.decode("utf-8", "replace")
    found: set[str] = set()
    for token in set(TOKEN.findall(text)):
        if token.rsplit("/", 1)[-1] not in basenames:
            continue
        # the token and each of its tails after a "/": "$ROOT/configs/ds.json" expands to something ending so
        tails = {token}
        index = token.find("/")
        while index != -1:
            tails.add(token[index + 1 :])
            index = token.find("/", index + 1)
        for tail in tails:
            for candidate in reference_candidates(path, tail, root):
                hit = by_location.get(os.path.normpath(os.path.abspath(candidate)))
                if hit is not None:
                    found.add(hit)
    return found
