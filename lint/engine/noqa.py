"""``--add-noqa``: suppress every current finding with the project's own inline directive
(``# rlhf-lint: ignore[CODE]``, rlhf_lint.engine.suppressions) at the end of the line it points at, as ruff's
``--add-noqa`` does. Only formats with comments (shell, Python, YAML, requirements); JSON has none (use a baseline,
rlhf_lint.engine.baseline). A directive is added only where it is certainly a comment that changes nothing else: never
after a line continuation, and the file with the comment must mean the same (same Python AST, same YAML data, a
shell comment token at that place), else that line is left alone and counted as skipped.
"""
from __future__ import annotations

import os

from rlhf_lint.engine.suppressions import DIRECTIVE

NOQA_KINDS = ("shell", "python", "yaml", "requirements")
NEVER = {"F001", "F002", "F010", "F100"}  # about the file or the tool, not a line; F100 would suppress itself


def _line_bounds(text: str, line: int) -> tuple[int, int] | None:
    """(start, end before the line break) of 1-based ``line``."""
    start = 0
    for _ in range(line - 1):
        nl = text.find("\n", start)
        if nl == -1:
            return None
        start = nl + 1
    end = text.find("\n", start)
    end = len(text) if end == -1 else end
    if end > start and text[end - 1] == "\r":
        end -= 1
    return start, end


def _with_directive(text: str, line: int, codes: list[str]) -> tuple[str, int] | None:
    """The text with ``codes`` suppressed on ``line`` and the offset of the inserted '#', or None."""
    bounds = _line_bounds(text, line)
    if bounds is None:
        return None
    start, end = bounds
    content = text[start:end]
    if content.rstrip().endswith("\\"):
        return None  # a comment after a continuation would end the command there
    for m in DIRECTIVE.finditer(content):
        if m.group(1) != "ignore":
            continue
        if m.group(2) is None:
            return text, -1  # a bare ignore already silences every rule on the line
        have = [c.strip() for c in m.group(2).split(",") if c.strip()]
        merged = ", ".join(have + [c for c in codes if c not in have])
        close = start + m.end() - 1  # the "]"
        open_ = start + m.start(2)
        return text[:open_] + merged + text[close:], -1
    directive = f"  # rlhf-lint: ignore[{', '.join(codes)}]"
    cut = start + len(content.rstrip())
    return text[:cut] + directive + text[cut:], cut + 2


def _same_meaning(kind: str, old: str, new: str, hash_at: int) -> bool:
    try:
        if kind == "python":
            import ast

            from rlhf_lint.readers.python import quiet_ast_parse

            return ast.dump(quiet_ast_parse(old)) == ast.dump(quiet_ast_parse(new))
        if kind == "yaml":
            import yaml

            return list(yaml.safe_load_all(old)) == list(yaml.safe_load_all(new))
        if kind == "shell":
            if hash_at < 0:
                return True  # codes added inside an existing directive's brackets
            from rlhf_lint.readers.shell import _parse

            raw = new.encode("utf-8", "surrogatepass")
            offset = len(new[:hash_at].encode("utf-8", "surrogatepass"))
            node = _parse(raw).root_node.descendant_for_byte_range(offset, offset + 1)
            return node is not None and node.type == "comment" and node.start_byte == offset
    except Exception:  # cannot tell: leave the line alone
        return False
    return True  # requirements: " #" ends a line's requirement (pip), continuations are refused above


def add_noqa(diagnostics: list, kinds: dict[str, str]) -> tuple[int, list[str], list[str]]:
    """Insert directives for ``diagnostics`` (``kinds``: path -> file kind). Returns (directives added,
    paths changed, 'path:line' of the lines left alone)."""
    from rlhf_lint.engine.runner import atomic_write
    from rlhf_lint.readers.source import Source

    by_path: dict[str, dict[int, list[str]]] = {}
    for d in diagnostics:
        if d.code in NEVER or d.span is None or kinds.get(d.path) not in NOQA_KINDS:
            continue
        codes = by_path.setdefault(d.path, {}).setdefault(d.start.line, [])
        if d.code not in codes:
            codes.append(d.code)
    added, changed, skipped = 0, [], []
    for path, lines in sorted(by_path.items()):
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
            source = Source.from_bytes(path, raw, kind=kinds[path])
        except Exception:
            skipped.extend(f"{path}:{line}" for line in sorted(lines))
            continue
        text = source.text
        for line in sorted(lines, reverse=True):  # bottom up: earlier offsets stay valid
            got = _with_directive(text, line, sorted(lines[line]))
            if got is None or not _same_meaning(kinds[path], text, got[0], got[1]):
                skipped.append(f"{path}:{line}")
                continue
            if got[0] != text:
                text = got[0]
                added += 1
        if text != source.text:
            atomic_write(path, source.encode(text), None, expected=raw)
            changed.append(path)
    return added, changed, skipped
