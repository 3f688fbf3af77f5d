"""A baseline: the findings a team accepted when it adopted the gate, so that only new ones fail.

``rlhf-lint --baseline .rlhf-lint-baseline.json --write-baseline .`` records every current finding;
``rlhf-lint --baseline .rlhf-lint-baseline.json .`` hides those and reports the rest. A finding is keyed by its
code, its path relative to the baseline file's folder and a fingerprint of the text it points at (the source line,
whitespace-normalised; the message where there is no line), not by its line number: inserting lines above it keeps
it accepted, while a second copy of the same bad line is new (each key is counted).
"""
from __future__ import annotations

import hashlib
import json
import os

from rlhf_lint.readers.source import read_regular

VERSION = 1
# about 140 bytes a distinct finding: 64 MiB is 460,000 of them, read in 2 s and 350 MB (docs/performance.md)
MAX_BASELINE_BYTES = 64 << 20


class BaselineError(Exception):
    pass


def _relpath(path: str, base: str) -> str:
    return os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/")


def fingerprint(diag) -> str:
    excerpt = " ".join(diag.source_line.split()) if diag.source_line.strip() else diag.message
    return hashlib.sha256(f"{diag.code}\0{excerpt}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def key(diag, base: str) -> tuple[str, str, str]:
    return diag.code, _relpath(diag.path, base), fingerprint(diag)


def write(path: str, diagnostics: list) -> int:
    base = os.path.dirname(os.path.abspath(path))
    counts: dict[tuple[str, str, str], int] = {}
    for d in diagnostics:
        k = key(d, base)
        counts[k] = counts.get(k, 0) + 1
    entries = [{"code": c, "path": p, "fingerprint": f, "count": n} for (c, p, f), n in sorted(counts.items())]
    data = json.dumps({"version": VERSION, "findings": entries}, indent=2) + "\n"
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(data)
    os.replace(tmp, path)
    return len(diagnostics)


def load(path: str) -> dict[tuple[str, str, str], int]:
    try:
        raw, _ = read_regular(path, MAX_BASELINE_BYTES)  # a FIFO, a device or a huge file is refused, not read
        data = json.loads(raw.decode("utf-8"))
        entries = data["findings"]
        return {(e["code"], e["path"], e["fingerprint"]): int(e.get("count", 1)) for e in entries}
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    except RecursionError:  # json recurses once per nested array or object
        raise BaselineError(f"{path}: not a baseline file written by --write-baseline (nested too deep)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise BaselineError(f"{path}: not a baseline file written by --write-baseline ({exc})") from None


def hide(path: str, diagnostics: list) -> tuple[list, int]:
    """(findings not in the baseline, how many were hidden)."""
    accepted = load(path)
    base = os.path.dirname(os.path.abspath(path))
    kept = []
    for d in diagnostics:
        k = key(d, base)
        if accepted.get(k, 0) > 0:
            accepted[k] -= 1
        else:
            kept.append(d)
    return kept, len(diagnostics) - len(kept)
