"""A content-hash cache of check results, one entry per group of files (see rlhf_lint.engine.groups).

The key covers everything a group's findings can depend on: the bytes, path and mode of every file in the group,
the configuration, the selected rules and options, and a fingerprint of rlhf-lint itself (version plus the size
and mtime of every module and schema file, so an edited rule invalidates the cache in a development install).
Entries are JSON, never pickle: a cache entry is data, and reading it cannot run code. Each entry is sealed with
this user's key (rlhf_lint.cachedir): one planted by anyone else is ignored, so a shared or restored cache folder
cannot make a run report "no findings".

The cache lives in the user's cache directory, not in the repository being checked (``$RLHF_LINT_CACHE_DIR``,
else ``$XDG_CACHE_HOME/rlhf-lint``, else ``~/.cache/rlhf-lint``): a repository cannot ship entries that would hide
its findings from a CI run. Runs that fix or diff do not use it; groups with unreadable files or internal errors
are not stored. ``--no-cache`` turns it off. Old entries are never read again once anything changes; delete the
directory to reclaim the space.
The same directory holds ``knowledge/``: rlhf-lint's own schema files, parsed (see rlhf_lint.schemas).
"""
from __future__ import annotations

import os

from rlhf_lint.cachedir import cache_dir, read_entry, write_entry
from rlhf_lint.readers.source import LineIndex

FORMAT = 2  # 2: sealed entries
MAX_ENTRY_BYTES = 256 * 1024 * 1024


_FINGERPRINT: list[str] = []


def tool_fingerprint() -> str:
    """rlhf-lint's version and the size and mtime of each of its files (about a hundred stat calls)."""
    if _FINGERPRINT:
        return _FINGERPRINT[0]
    import hashlib  # OpenSSL's start-up is felt in a one-file run; only cached runs need it

    import rlhf_lint
    from rlhf_lint import fixers, rules, schemas

    h = hashlib.sha256(f"{FORMAT} {rlhf_lint.__version__}".encode())
    for package in (rlhf_lint, rules, fixers, schemas):
        for directory in getattr(package, "__path__", []):
            for dirpath, dirnames, filenames in os.walk(directory):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for name in sorted(filenames):
                    if name.endswith((".py", ".json", ".tsv", ".toml", ".yaml", ".txt")):
                        try:
                            st = os.stat(os.path.join(dirpath, name))
                        except OSError:
                            continue
                        h.update(f"{dirpath}/{name} {st.st_size} {st.st_mtime_ns}\n".encode())
    _FINGERPRINT.append(h.hexdigest())
    return _FINGERPRINT[0]


def group_key(files: list[tuple[str, bool, bytes, int]], settings: str) -> str:
    """files: (path, explicit, bytes, mode) of every member; settings: the run's configuration and options."""
    import hashlib

    h = hashlib.sha256(tool_fingerprint().encode())
    h.update(settings.encode())
    for path, explicit, raw, mode in sorted(files, key=lambda f: f[0]):
        h.update(f"\0{os.path.abspath(path)}\0{explicit}\0{mode}\0{len(raw)}\0".encode())
        h.update(hashlib.sha256(raw).digest())
    return h.hexdigest()


def _entry_path(key: str) -> str:
    return os.path.join(cache_dir(), f"v{FORMAT}", key[:2], key + ".json")


def load(key: str) -> dict | None:
    import json

    raw = read_entry(_entry_path(key), MAX_ENTRY_BYTES)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def store(key: str, data: dict) -> None:
    import json

    write_entry(_entry_path(key), json.dumps({**data, "key": key}, separators=(",", ":")).encode("utf-8"))


# -- diagnostics <-> JSON ----------------------------------------------------------------------------------------
def diagnostic_to_json(d) -> dict:
    fix = None
    if d.fix is not None:
        fix = [d.fix.message, [[e.start, e.end, e.content] for e in d.fix.edits], d.fix.applicability.value]
    return {
        "c": d.code, "n": d.name, "s": int(d.severity), "m": d.message, "p": d.path,
        "sp": None if d.span is None else [d.span.start, d.span.end],
        "a": [d.start.line, d.start.column], "b": [d.end.line, d.end.column],
        "f": fix,
        "r": [[r.path, None if r.span is None else [r.span.start, r.span.end], r.message] for r in d.related],
        "l": d.source_line, "ls": d.source_line_start, "lc": d.source_line_cut,
    }


def diagnostic_from_json(data: dict):
    from rlhf_lint.model import Applicability, Diagnostic, Edit, Fix, Position, Related, Severity, Span

    fix = None
    if data["f"] is not None:
        message, edits, applicability = data["f"]
        fix = Fix(message, tuple(Edit(a, b, c) for a, b, c in edits), Applicability(applicability))
    return Diagnostic(
        code=data["c"], name=data["n"], severity=Severity(data["s"]), message=data["m"], path=data["p"],
        span=None if data["sp"] is None else Span(*data["sp"]),
        start=Position(*data["a"]), end=Position(*data["b"]), fix=fix,
        related=tuple(Related(p, None if s is None else Span(*s), m) for p, s, m in data["r"]),
        source_line=data["l"], source_line_start=data.get("ls", 0), source_line_cut=data.get("lc", False),
    )


def result_to_json(result) -> dict:
    from rlhf_lint.model import paths_with_positions

    wanted = paths_with_positions(result.diagnostics)
    lines = {}
    for path, source in result.sources.items():
        if path in wanted:
            index = LineIndex.of(source)
            lines[path] = [list(index.starts), index.length]
    return {"diagnostics": [diagnostic_to_json(d) for d in result.diagnostics], "files": result.files_checked,
            "messages": list(result.messages), "lines": lines}


def result_fields_from_json(data: dict) -> dict:
    """The fields of a runner Result stored by result_to_json (the runner builds the Result)."""
    return dict(diagnostics=[diagnostic_from_json(d) for d in data["diagnostics"]], files_checked=data["files"],
                messages=list(data["messages"]),
                sources={p: LineIndex(p, starts, length) for p, (starts, length) in data["lines"].items()})
