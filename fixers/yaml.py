"""Format-preserving YAML edits from PyYAML node marks: replace one scalar, delete one mapping entry, add a key
beside its siblings. Comments, quoting and layout outside the edited span stay as they were."""
from __future__ import annotations

from rlhf_lint.model import Edit
from rlhf_lint.readers.yaml import node_span


def yaml_scalar(value) -> str:
    """The YAML spelling of a plain value (lower-case booleans, null, numbers; strings quoted only if needed)."""
    import yaml

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text.removesuffix("\n...").strip()


def replace_scalar(node, value) -> Edit:
    """Replace a scalar node's text (inside its quotes when quoted, so the quoting style stays)."""
    span = node_span(node)
    style = getattr(node, "style", None)
    if style in ("'", '"') and isinstance(value, str):
        return Edit(span.start + 1, span.end - 1, value)
    return Edit.replace(span, yaml_scalar(value))


def _line_bounds(text: str, offset: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return start, (len(text) if end == -1 else end + 1)


def delete_entry(text: str, key_node, value_node) -> Edit | None:
    """Delete a block-mapping entry that sits on its own line(s); None for flow style or shared lines."""
    start, _ = _line_bounds(text, key_node.start_mark.index)
    if text[start:key_node.start_mark.index].strip():
        return None  # something else before the key on its line (flow mapping, "- key:")
    _, end = _line_bounds(text, max(value_node.end_mark.index - 1, key_node.end_mark.index))
    if value_node.end_mark.index > 0 and text[value_node.end_mark.index - 1:value_node.end_mark.index] == "\n":
        end = value_node.end_mark.index
    return Edit(start, end, "")


def insert_after_entry(text: str, key_node, value_node, new_key: str, value) -> Edit | None:
    """Insert ``new_key: value`` on a new line after an entry, with the entry's indentation and newline style."""
    start, _ = _line_bounds(text, key_node.start_mark.index)
    indent = text[start:key_node.start_mark.index]
    if indent.strip():
        return None
    end = value_node.end_mark.index
    _, line_end = _line_bounds(text, max(end - 1, key_node.end_mark.index))
    if text[end - 1:end] == "\n":
        line_end = end
    newline = "\r\n" if "\r\n" in text else "\n"
    prefix = "" if line_end > 0 and text[line_end - 1] == "\n" else newline
    return Edit.insert(line_end, f"{prefix}{indent}{new_key}: {yaml_scalar(value)}{newline if prefix == '' else ''}")
