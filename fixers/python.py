"""Format-preserving Python edits: a libcst node's exact character span, and an Edit replacing only that node.

libcst reports byte offsets of the UTF-8 text it parsed; Source.char_offset turns them into the character offsets
spans use. Positions are computed once per module tree and cached beside it.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.model import Edit, Span
from rlhf_lint.readers.source import Source

# id(module) -> (module, {node: CodeSpan}); the module is kept so the id cannot be reused while cached
_POSITIONS: dict[int, tuple[Any, Any]] = {}
_MAX_CACHED = 64


def _byte_spans(module) -> Any:
    from libcst.metadata import ByteSpanPositionProvider, MetadataWrapper

    cached = _POSITIONS.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1]
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    spans = wrapper.resolve(ByteSpanPositionProvider)
    if len(_POSITIONS) >= _MAX_CACHED:
        _POSITIONS.clear()
    _POSITIONS[id(module)] = (module, spans)
    return spans


def node_span(source: Source, node) -> Span | None:
    """The character span of ``node`` (a node of ``source.tree``) in ``source.text``, or None if it is not there."""
    if source.tree is None:
        return None
    span = _byte_spans(source.tree).get(node)
    if span is None:
        return None
    start = source.char_offset(span.start)
    end = source.char_offset(span.start + span.length)
    return Span(start, end)


def replace_node(source: Source, node, value: Any) -> Edit | None:
    """An edit that replaces exactly the node's text by the literal ``value``; None when the node is not found."""
    span = node_span(source, node)
    if span is None:
        return None
    return Edit.replace(span, repr(value))  # plain values only: numbers, strings, booleans, None
