"""P: requirements pins and version compatibility (facts in schemas/pins/, readers in rlhf_lint.readers.pins).

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations

import os


def _where(project, path: str, span) -> str:
    source = project.sources.get(path)
    shown = os.path.relpath(path, project.config.root) if os.path.isabs(path) else path
    if source is None or span is None:
        return shown
    return f"{shown}:{source.position(span.start).line}"
