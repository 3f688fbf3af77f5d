"""``.gitignore`` read statically, as git does (gitignore(5)), so discovery skips what git ignores without running git.

Honoured inside a git work tree (a folder with ``.git`` above the file): every ``.gitignore`` from the work tree's
root down to the file's folder, and ``.git/info/exclude``. Patterns: ``#`` comments, ``!`` negation, a trailing ``/``
for folders only, a ``/`` at the start or in the middle anchors the pattern to its ``.gitignore``'s folder, ``*``,
``?``, ``[...]`` and ``**``; the last matching pattern wins, deeper files after shallower ones; a file inside an
ignored folder stays ignored (git does not descend into it). Not read: ``core.excludesFile`` (a user's global
ignores are not the repository's), a ``.gitignore`` that is a symlink (git does not follow one either), one that
is not a regular file (a FIFO would block) or is over MAX_IGNORE_BYTES; each of these is a warning.
"""
from __future__ import annotations

import os
import re
import stat

from rlhf_lint.engine.ancestors import nearest, remember
from rlhf_lint.readers.source import read_regular

_NONE: tuple = ()  # the patterns of a folder without a .gitignore (most): one object for all of them
MAX_IGNORE_BYTES = 1 << 20  # real ones are kilobytes; a pattern is matched against every path, so bigger is refused


def _translate(glob: str) -> str:
    """A gitignore glob (no leading or trailing slash) as a regular expression over a /-separated relative path."""
    out = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                before_ok = i == 0 or glob[i - 1] == "/"
                after = glob[i + 2:i + 3]
                if before_ok and after == "/":  # "**/": zero or more folders
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and i + 2 == n:  # trailing "/**": everything inside
                    out.append(".*")
                    i += 2
                    continue
            out.append("[^/]*")
            while i < n and glob[i] == "*":
                i += 1
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 2 if glob[i + 1:i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1:end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
                continue
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


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
        dir_only = line.endswith("/") and not line.endswith("\\/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z", re.DOTALL)
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
