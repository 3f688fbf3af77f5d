"""Knowledge as data. Every file here is JSON (or TSV) whose entries carry a ``source``; rules read them through
``load`` so each file is parsed once per process.

A parsed file is also kept in the user's cache directory in ``marshal`` format (like Python's own ``.pyc``
files, keyed by the interpreter, the marshal version and the file's size and mtime): reading it back is faster
than parsing the JSON, and a one-file run then does not import ``json`` at all (~1.5 ms of a ~30 ms run). Only
plain data goes in (what ``json`` produced), and anything unreadable, stale or of another shape is parsed again
from the JSON. ``RLHF_LINT_CACHE_DIR`` moves it with the results cache. Entries are sealed with this user's key
(rlhf_lint.cachedir) and size-checked before marshal reads them: marshal trusts its input (13 planted bytes can ask
for gigabytes), so only what this user's runs wrote is ever read, and ``--no-cache`` reads nothing.
"""
from __future__ import annotations

import functools
import marshal
import os
import sys

from rlhf_lint.cachedir import cache_dir, read_entry, write_entry

HERE = os.path.dirname(os.path.abspath(__file__))
MARSHAL_FACTOR = 4  # a parsed file in marshal form is smaller than its JSON; anything bigger is not ours


@functools.lru_cache(maxsize=None)
def load(name: str):
    """Parsed contents of ``schemas/<name>`` (a relative path such as ``openrlhf/openrlhf.json``)."""
    source = os.path.join(HERE, name)
    cached, size = _cached_path(name, source)
    if cached is not None:
        blob = read_entry(cached, MARSHAL_FACTOR * size + 4096)
        if blob is not None:
            try:
                data = marshal.loads(blob)
                if type(data) in (dict, list):
                    return data
            except (EOFError, ValueError, TypeError):
                pass
    import json

    with open(source, encoding="utf-8") as fh:
        data = json.load(fh)
    if cached is not None:
        write_entry(cached, marshal.dumps(_with_shared_strings(data, {})))
    return data


def _with_shared_strings(value, seen: dict):
    """The same data with each distinct string one object: marshal then writes a repeated string (a key, a source
    URL, a note) as a reference, and reading it back makes one object instead of many (the PPO CLI's flag rows and
    renames: 62 -> 39 KB, ~400 -> ~280 µs to read)."""
    if type(value) is str:
        return seen.setdefault(value, value)
    if type(value) is list:
        return [_with_shared_strings(v, seen) for v in value]
    if type(value) is dict:
        return {seen.setdefault(k, k): _with_shared_strings(v, seen) for k, v in value.items()}
    return value


def tsv_rows(lines) -> list[dict[str, str]]:
    """The rows of a knowledge TSV file's lines as dicts: the first line that is neither blank nor a ``#`` comment
    is the header; a short row gets empty cells."""
    header: list[str] | None = None
    rows = []
    for line in lines:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        cells = line.split("\t")
        if header is None:
            header = cells
            continue
        rows.append(dict(zip(header, cells + [""] * (len(header) - len(cells)))))
    return rows


def path(name: str) -> str:
    return os.path.join(HERE, name)


def _cached_path(name: str, source: str) -> tuple[str | None, int]:
    try:
        st = os.stat(source)
    except OSError:
        return None, 0
    tag = f"{sys.implementation.cache_tag}-m{marshal.version}"
    flat = name.replace("/", "_").replace(os.sep, "_")
    return os.path.join(cache_dir(), "knowledge", tag, f"{flat}.{st.st_size}.{st.st_mtime_ns}.marshal"), st.st_size
