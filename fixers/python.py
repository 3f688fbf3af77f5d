"""Format-preserving Python edits: an Edit replacing exactly one libcst node (its span: rlhf_lint.readers.python)."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.model import Edit
from rlhf_lint.readers.python import node_span
from rlhf_lint.readers.source import Source

def replace_node(source: Source, node, value: Any) -> Edit | None:
    """An edit that replaces exactly the node's text by the literal ``value``; None when the node is not found."""
    span = node_span(source, node)
    if span is None:
        return None
    return Edit.replace(span, repr(value))  # plain values only: numbers, strings, booleans, None
