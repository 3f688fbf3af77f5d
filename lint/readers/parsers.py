"""Parsers for the formats the engine itself owns. Other formats register theirs in project.PARSERS."""
from __future__ import annotations

from rlhf_lint.readers.json import JSONDocument, JSONError, parse_json
from rlhf_lint.engine.project import ParseError
from rlhf_lint.readers.source import Source


def parse_json_source(source: Source) -> JSONDocument:
    try:
        return parse_json(source.text)
    except JSONError as exc:
        raise ParseError(f"invalid JSON: {exc.message}", exc.offset) from None
