"""Finding the files of a run: walking folders, skipping what is never training code, honouring excludes.
What each file is, from its name or first bytes, is rlhf_lint.readers.kinds."""
from __future__ import annotations

import os
import stat
from rlhf_lint.readers.kinds import SHELL_SHEBANG, kind_from_name

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Iterator

# os.walk recurses once per level (Python 3.11), and so does the .gitignore check: a folder this deep below / is
# reported (rlhf_lint.engine.runner.read_source) instead of walked, so 1,000 nested folders cannot end the run
MAX_FOLDER_DEPTH = 200

SKIP_DIRS = {
    ".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox",
    "node_modules", ".venv", "venv", ".eggs", ".rlhf-lint-cache", ".hypothesis", "site-packages", ".idea", ".vscode",
}

def is_excluded(path: str, patterns: list[str], root: str | None = None) -> bool:
    """Whether a glob of ``patterns`` matches the path, its tail or one of its parts. With ``root`` (a
    configuration file's folder) the path is taken relative to it, so a configuration's globs mean the same whatever
    folder the run starts from."""
    if not patterns:
        return False
    import fnmatch  # only runs with exclude patterns need it

    norm = path.replace(os.sep, "/")
    if root is not None:
        rel = os.path.relpath(os.path.abspath(path), root)
        if not rel.startswith(".."):
            norm = rel.replace(os.sep, "/")
    parts = norm.split("/")
    for pattern in patterns:
        pat = pattern.rstrip("/")
        if fnmatch.fnmatch(norm, pat) or fnmatch.fnmatch(norm, f"*/{pat}") or any(fnmatch.fnmatch(p, pat) for p in parts):
            return True
    return False


class Exclusions:
    """What discovery skips: each configuration's exclude globs (relative to its file), the command line's
    ``--exclude`` globs (relative to the working directory) and, unless turned off, what git ignores. An entry is
    judged by the configuration of the folder that lists it."""

    def __init__(self, configs, cli_exclude: list[str] = (), respect_gitignore: bool | None = None):
        self.configs = configs  # rlhf_lint.engine.config.Configs
        self.cli_exclude = list(cli_exclude)
        self.respect_gitignore = respect_gitignore  # None: each configuration decides
        self._gitignore = None

    def __call__(self, path: str, is_dir: bool) -> bool:
        if is_excluded(path, self.cli_exclude):
            return True
        config = self.configs.for_dir(os.path.dirname(os.path.abspath(path)))
        if is_excluded(path, config.exclude, config.root):
            return True
        respect = config.respect_gitignore if self.respect_gitignore is None else self.respect_gitignore
        if respect:
            if self._gitignore is None:
                from rlhf_lint.engine.gitignore import GitIgnore

                self._gitignore = GitIgnore()
            return self._gitignore.ignored(path, is_dir)
        return False

    @property
    def warnings(self) -> list[str]:
        """Why an ignore file was not applied (rlhf_lint.engine.gitignore), for the run's messages."""
        return list(self._gitignore.warnings.values()) if self._gitignore is not None else []

    def force_exclude(self, path: str) -> bool:
        return self.configs.for_dir(os.path.dirname(os.path.abspath(path))).force_exclude


def too_deep(folder: str) -> bool:
    """Whether ``folder`` lies more than MAX_FOLDER_DEPTH folders below the file system's root."""
    return os.path.abspath(folder).count(os.sep) > MAX_FOLDER_DEPTH


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg")) or os.path.isfile(os.path.join(path, "conda-meta", "history"))


def discover(paths: list[str], exclude: list[str], skip=None, force_exclude: bool | None = None
             ) -> Iterator[tuple[str, bool]]:
    """Yield (path, explicit) for every candidate file. Explicit files are yielded even if their type is unclear,
    so the user hears why they were not checked, and even if excluded, unless ``force_exclude`` (None: as the
    file's configuration says) - pre-commit names files one by one. ``skip(path, is_dir)`` decides exclusion
    (default: the ``exclude`` globs). Symlinked directories are not followed (no loops)."""
    from rlhf_lint.engine.digests import Digests, digest

    if skip is None:
        skip = lambda path, is_dir: is_excluded(path, exclude)  # noqa: E731
    seen = Digests()  # real paths yielded, as digests: a set of the strings held ~140 bytes a file
    for root in paths:
        forced = force_exclude if force_exclude is not None else (
            skip.force_exclude(root) if isinstance(skip, Exclusions) else False)
        if forced and os.path.exists(root) and skip(root, os.path.isdir(root)):
            continue
        if os.path.isfile(root) or not os.path.exists(root):
            real = digest(os.path.realpath(root))
            if real not in seen:
                seen.add(real)
                yield root, True
            continue
        if not os.path.isdir(root):
            yield root, True
            continue
        unlistable: list[OSError] = []
        for dirpath, dirnames, filenames in os.walk(root, onerror=unlistable.append, followlinks=False):
            yield from _unlistable(unlistable, seen)
            dirnames[:] = sorted(
                d for d in dirnames
                if d not in SKIP_DIRS
                and not d.endswith(".egg-info")
                and not skip(os.path.join(dirpath, d), True)
                and not _is_virtualenv(os.path.join(dirpath, d))
            )
            if dirnames and too_deep(os.path.join(dirpath, dirnames[0])):
                yield from _folder_items([os.path.join(dirpath, d) for d in dirnames], seen)
                dirnames[:] = []
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if path.startswith("./"):
                    path = path[2:]
                named = kind_from_name(name) is not None
                if (not named and "." in name) or skip(path, False):
                    continue
                if not named and not _maybe_script(path):
                    continue
                real = digest(os.path.realpath(path))
                if real in seen:
                    continue
                seen.add(real)
                yield path, False
        yield from _unlistable(unlistable, seen)


def _unlistable(errors: list[OSError], seen) -> Iterator[tuple[str, bool]]:
    """Folders os.walk could not list (permission denied, ...), yielded as explicit items so that reading them
    reports F001 with the OS error (rlhf_lint.engine.runner.read_source) instead of skipping their files silently."""
    folders = [exc.filename for exc in errors if isinstance(exc.filename, str)]
    errors.clear()
    yield from _folder_items(folders, seen)


def _folder_items(folders: list[str], seen) -> Iterator[tuple[str, bool]]:
    """Folders discovery did not walk, as explicit items: reading one reports why (F001), once."""
    from rlhf_lint.engine.digests import digest

    for path in folders:
        if path.startswith("./"):
            path = path[2:]
        real = digest(os.path.realpath(path))
        if real not in seen:
            seen.add(real)
            yield path, True


def _maybe_script(path: str) -> bool:
    """Extension-less executables with a shell shebang (``launch``, ``train``)."""
    if "." in os.path.basename(path) or os.path.islink(path):
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # opening a FIFO or a device would block or read forever
    except OSError:
        return False
    try:
        with open(path, "rb") as fh:
            return bool(SHELL_SHEBANG.match(fh.read(64)))
    except OSError:
        return True  # cannot be opened: reading it reports F001 with the OS error, rather than skipping it silently
