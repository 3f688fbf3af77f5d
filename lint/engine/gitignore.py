"""``.gitignore`` read statically, as git does (gitignore(5)), so discovery skips what git ignores without running git.

Honoured inside a git work tree (a folder with ``.git`` above the file): every ``.gitignore`` from the work tree's
root down to the file's folder, and ``.git/info/exclude``. Patterns: ``#`` comments, ``!`` negation, a trailing ``/``
for folders only, a ``/`` at the start or in the middle anchors the pattern to its ``.gitignore``'s folder, ``*``,
``?``, ``[...]`` (ranges, ``[:class:]``, read as git's wildmatch reads them) and ``**``; the last matching pattern
wins, deeper files after shallower ones; a file inside an ignored folder stays ignored (git does not descend into
it). A pattern git's wildmatch gives up on (an unclosed ``[``) matches nothing, as in git. Matching takes about
linear time whatever the pattern. Not read: ``core.excludesFile`` (a user's global ignores are not the
repository's), a ``.gitignore`` that is a symlink (git does not follow one either), one that is not a regular file
(a FIFO would block) or is over MAX_IGNORE_BYTES; each of these is a warning. Not followed: git's reading of
``X**/`` right after a pattern's literal prefix ``X`` as ``X`` then ``**/`` (here it is ``X*/``, as gitignore(5)
says).
"""
from __future__ import annotations

import os
import re
import stat

from rlhf_lint.engine.ancestors import nearest, remember
from rlhf_lint.readers.source import read_regular

_NONE: tuple = ()  # the patterns of a folder without a .gitignore (most): one object for all of them
MAX_IGNORE_BYTES = 1 << 20  # real ones are kilobytes; a pattern is matched against every path, so bigger is refused

# A glob becomes a regular expression that backtracks at most about linearly (`*a*a*a*a*a*b` or ten `**/` took
# minutes as one plain backtracking regex). A glob is a list of segments between slashes: `**` (any run of folders)
# or a run of one-character matchers and `*` (any run of characters within the segment). Inside a segment, and one
# level up among segments, there is one kind of wildcard, so the classic glob algorithm holds: the piece between two
# wildcards may be matched at its earliest place and never revisited (an earlier match only leaves the next
# wildcard more to absorb). Those pieces are atomic groups; the first piece is anchored at the start, the last at
# the end.
_STAR = "*"  # a `*` inside a segment
_GLOBSTAR = ("**",)  # a segment of `**` alone (compared by identity)
# the [:class:] names git's wildmatch knows, as ASCII sets
_CLASSES = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9",
            "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\r ",
            "upper": "A-Z", "xdigit": "0-9A-Fa-f"}


class _Malformed(Exception):
    """A glob git's wildmatch gives up on (an unclosed `[`, an unknown `[:class:]`, a trailing `\\`): it matches
    nothing."""


class _Atomic:
    """Atomic groups that Python 3.10 has too: a lookahead is never re-entered once it matched, so `(?=(X))\\1`
    keeps the first way X matched."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, body: str) -> str:
        self.count += 1
        return f"(?=(?P<a{self.count}>{body}))(?P=a{self.count})"


class _Brackets:
    """Reads the bracket expressions of one glob as git's wildmatch does."""

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.close = -1  # the first `]` at or after a `[:` (remembered: many `[:` before one `]` stay linear)

    def read(self, i: int) -> tuple[str, int]:
        """The bracket expression opening at ``glob[i]`` as a regex for one character (never `/`), and the index
        after it. A `]` first in the brackets is a member; a reversed range (`z-a`) adds no character, as in git,
        while the other members still count."""
        glob, n = self.glob, len(self.glob)
        j = i + 1
        negated = glob[j:j + 1] in ("!", "^")
        j += negated
        members: list[str] = []
        previous = None  # the last single character: where a range starts
        while True:
            if j >= n:
                raise _Malformed
            c = glob[j]
            if c == "]" and j > i + 1 + negated:  # a `]` first is a member
                break
            if c == "\\":
                j += 1
                if j >= n:
                    raise _Malformed
                previous = glob[j]
                members.append(re.escape(previous))
            elif c == "-" and previous is not None and j + 1 < n and glob[j + 1] != "]":
                j += 1
                if glob[j] == "\\":
                    j += 1
                    if j >= n:
                        raise _Malformed
                if previous <= glob[j]:
                    members.append(f"{re.escape(previous)}-{re.escape(glob[j])}")
                previous = None
            elif c == "[" and glob.startswith(":", j + 1) and (end := self._class_end(j)) is not None:
                name = glob[j + 2:end - 1]
                if name not in _CLASSES:
                    raise _Malformed
                members.append(_CLASSES[name])
                previous, j = None, end
            else:
                previous = c
                members.append(re.escape(c))
            j += 1
        body = "".join(members)  # never empty: a range follows a member
        return (f"[^/{body}]" if negated else f"(?!/)[{body}]"), j + 1

    def _class_end(self, j: int) -> int | None:
        """For `[:name:]` at ``glob[j]``: the index of its `]`; None when the next `]` does not follow a `:` (git
        reads the `[` as a member then)."""
        if self.close < j + 2:
            self.close = self.glob.find("]", j + 2)
        if self.close == -1:
            raise _Malformed
        return self.close if self.close >= j + 3 and self.glob[self.close - 1] == ":" else None


def _segments(glob: str) -> list:
    """The glob as a list of segments: ``_GLOBSTAR``, or a list of one-character regexes and ``_STAR``. A run of
    `**` segments is one (`**/**/` is `**/`), a run of `*` in a segment one `*`."""
    brackets = _Brackets(glob)
    segments: list = []
    items: list = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "/" or glob.startswith("\\/", i):  # an escaped slash is a slash too
            segments.append(items)
            items = []
            i += 1 if c == "/" else 2
        elif c == "*":
            start = i
            while i < n and glob[i] == "*":
                i += 1
            if not items and i - start >= 2 and (i == n or glob[i] == "/" or glob.startswith("\\/", i)):
                items = _GLOBSTAR  # the whole segment
            elif not items or items[-1] is not _STAR:
                items.append(_STAR)
        elif c == "?":
            items.append("[^/]")
            i += 1
        elif c == "[":
            one, i = brackets.read(i)
            items.append(one)
        elif c == "\\":
            if i + 1 >= n:
                raise _Malformed
            items.append(re.escape(glob[i + 1]))
            i += 2
        else:
            items.append(re.escape(c))
            i += 1
    segments.append(items)
    return [s for k, s in enumerate(segments) if not (s is _GLOBSTAR and k and segments[k - 1] is _GLOBSTAR)]


def _split(items: list, wildcard) -> list[list]:
    pieces: list[list] = [[]]
    for item in items:
        if item is wildcard:
            pieces.append([])
        else:
            pieces[-1].append(item)
    return pieces


_FOLDERS = "(?:[^/]*/)"  # one folder; repeated, the wildcard `**/` stands for


def _earliest(pieces: list[str], wildcard: str, atomic: _Atomic) -> str:
    """Each piece at its earliest place after the previous one, atomically: its lazy wildcard is never retried."""
    return "".join(atomic(f"{wildcard}*?{p}") for p in pieces)


def _anchored_ends(pieces: list[str], wildcard: str, atomic: _Atomic) -> str:
    """Pieces that wildcards separate: the first at the start, the middle ones at their earliest places, the last
    at the end (after a greedy wildcard, which gives back one character or folder at a time)."""
    if len(pieces) == 1:
        return pieces[0]
    return f"{pieces[0]}{_earliest(pieces[1:-1], wildcard, atomic)}{wildcard}*{pieces[-1]}"


def _translate(glob: str) -> str:
    """A gitignore glob (no leading or trailing slash; an unanchored one prefixed with `**/`) as a regular expression
    over a /-separated relative path. Raises _Malformed for a glob git cannot match."""
    atomic = _Atomic()
    runs = [[_anchored_ends(["".join(p) for p in _split(s, _STAR)], "[^/]", atomic) for s in run]
            for run in _split(_segments(glob), _GLOBSTAR)]
    pieces = ["".join(s + "/" for s in run) for run in runs[:-1]]  # each run before a `**` ends with its slash
    if len(runs) > 1 and not runs[-1]:  # a trailing `/**`: everything inside
        return pieces[0] + _earliest(pieces[1:], _FOLDERS, atomic) + r"(?s:.)*\Z"
    return _anchored_ends(pieces + ["/".join(runs[-1])], _FOLDERS, atomic) + r"\Z"


class Pattern:
    __slots__ = ("negated", "dir_only", "regex")

    def __init__(self, negated: bool, dir_only: bool, regex):
        self.negated, self.dir_only, self.regex = negated, dir_only, regex


def parse(text: str) -> list[Pattern]:
    patterns = []
    for raw in text.splitlines():
        line = raw
        if not line or line.startswith("#"):
            continue
        # trailing spaces are dropped unless escaped with a backslash
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        if not line:
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        if dir_only:  # one slash, as git (`a//` matches nothing)
            line = line[:-1]
        if not line:
            continue
        anchored = "/" in line
        if line.startswith("/"):  # one slash, as git (`//a` matches nothing)
            line = line[1:]
        try:
            regex = re.compile(_translate(line if anchored else "**/" + line))
        except _Malformed:
            continue  # git matches nothing with it
        patterns.append(Pattern(negated, dir_only, regex))
    return patterns


class GitIgnore:
    """Answers whether git ignores a path; reads each ``.gitignore`` once."""

    def __init__(self) -> None:
        self._worktree: dict[str, str | None] = {}
        self._files: dict[str, list[Pattern]] = {}
        self._answers: dict[str, bool] = {}  # folders' answers
        self.warnings: dict[str, str] = {}  # path -> why its patterns are not applied

    def _root_of(self, folder: str) -> str | None:
        return nearest(folder, self._worktree, _worktree_root, None)

    def _patterns(self, path: str) -> list[Pattern]:
        if path not in self._files:
            patterns = self._read(path)
            remember(self._files, path, patterns)
            return patterns
        return self._files[path]

    def _read(self, path: str) -> list[Pattern]:
        """The patterns of one ignore file; none, with a warning, where git would not read it either."""
        try:
            if os.path.basename(path) == ".gitignore" and stat.S_ISLNK(os.lstat(path).st_mode):
                self.warnings[path] = (f"warning: {path} is a symlink, which git does not follow: its patterns are "
                                       "not applied")
                return _NONE
            raw, _ = read_regular(path, MAX_IGNORE_BYTES)
        except (FileNotFoundError, NotADirectoryError):  # most folders have no .gitignore
            return _NONE
        except OSError as exc:  # a FIFO, a device, /dev/zero through a symlink, too large, unreadable
            self.warnings[path] = f"warning: {path}: {exc.strerror or exc}: its patterns are not applied"
            return _NONE
        return parse(raw.decode("utf-8", "replace"))

    def _verdict(self, folder: str, name_rel: str, is_dir: bool, verdict: bool | None) -> bool | None:
        for pattern in self._patterns(os.path.join(folder, ".gitignore")):
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.match(name_rel):
                verdict = not pattern.negated
        return verdict

    def ignored(self, path: str, is_dir: bool = False) -> bool:
        """Whether ``path`` (a file, or a folder when ``is_dir``) or a folder above it is ignored by git."""
        absolute = os.path.abspath(path)
        if is_dir and absolute in self._answers:
            return self._answers[absolute]
        parent = os.path.dirname(absolute)
        root = self._root_of(parent)
        answer = False
        if root is not None and absolute != root:
            # a file under an ignored folder is ignored whatever its own patterns say
            if parent != root and self.ignored(parent, is_dir=True):
                answer = True
            else:
                answer = self._match(root, absolute, is_dir)
        if is_dir:  # a folder is asked again for each of its files; a file is asked once (a memo per file grows)
            remember(self._answers, absolute, answer)
        return answer

    def _match(self, root: str, absolute: str, is_dir: bool) -> bool:
        rel = os.path.relpath(absolute, root).replace(os.sep, "/")
        verdict: bool | None = None
        for pattern in self._patterns(os.path.join(root, ".git", "info", "exclude")):
            if (not pattern.dir_only or is_dir) and pattern.regex.match(rel):
                verdict = not pattern.negated
        # .gitignore files from the root down to the path's folder; each matches paths relative to its folder
        parts = rel.split("/")
        folder = root
        for depth in range(len(parts)):
            verdict = self._verdict(folder, "/".join(parts[depth:]), is_dir, verdict)
            folder = os.path.join(folder, parts[depth])
        return bool(verdict)


def _worktree_root(folder: str) -> str | None:
    return folder if os.path.exists(os.path.join(folder, ".git")) else None
