"""The user's cache folder, shared by the results cache (rlhf_lint.engine.cache) and the parsed knowledge files
(rlhf_lint.schemas): where it is, and how a file is written into it without ever failing the run."""
from __future__ import annotations

import os


def cache_dir() -> str:
    explicit = os.environ.get("RLHF_LINT_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rlhf-lint")


def write_quietly(path: str, data: bytes) -> None:
    """Write a cache file atomically (a temporary file beside it, then a rename), best effort: a cache that cannot
    be written is no cache, never an error. The temporary name carries the process id (no tempfile import)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
