"""Positions the reporters compute from a Result's line indexes: related locations and fix edits (the runner keeps
a LineIndex for every file a diagnostic's fix or related location points into)."""
from __future__ import annotations


def related_range(result, rel):
    """(start, end) Positions of a related location, or None when it has no span or its file's lines are unknown."""
    if rel.span is None:
        return None
    index = (getattr(result, "sources", None) or {}).get(rel.path)
    if index is None:
        return None
    return index.position(rel.span.start), index.position(rel.span.end)

