"""Where comments are, per file kind: the (start, end) character ranges of comments, so that a `#` inside a string
(a Python literal, a quoted shell word, a quoted YAML scalar, a JSON or TOML string) is not read as one.

Only suppression scanning asks (rlhf_lint.engine.suppressions), and only for files that mention `rlhf-lint:`.
"""
from __future__ import annotations

_SHELL_WORD_BREAK = " \t\n;&|()<>"
_YAML_SCALAR_START = ":-[{,?"


def comment_ranges(text: str, kind: str) -> list[tuple[int, int]]:
    if kind == "python":
        got = _python(text)
        if got is not None:
            return got
        return _quoted(text, quotes="'\"", hash_needs_space=False)
    if kind in ("shell", "dockerfile"):
        return _shell(text)
    if kind == "yaml":
        return _yaml(text)
    if kind in ("json", "ds_config"):
        return _quoted(text, quotes='"', hash_needs_space=False, slashes=True)
    if kind == "pyproject_toml":
        return _quoted(text, quotes="'\"", hash_needs_space=False)
    return _quoted(text, quotes="", hash_needs_space=True)  # requirements, setup.cfg: `#` after a space


def _python(text: str) -> list[tuple[int, int]] | None:
    import io
    import tokenize

    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.ERRORTOKEN and tok.string.strip():
                return None  # an unterminated string (Python < 3.12 goes on tokenizing after it)
            if tok.type == tokenize.COMMENT:
                (row, col), (erow, ecol) = tok.start, tok.end
                out.append((starts[row - 1] + col, starts[erow - 1] + ecol))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None  # a file that does not tokenize: the plain scanner decides
    return out


def _line_end(text: str, i: int) -> int:
    j = text.find("\n", i)
    return len(text) if j == -1 else j


def _quoted(text: str, quotes: str, hash_needs_space: bool, slashes: bool = False) -> list[tuple[int, int]]:
    """Comments of a format whose strings are quoted on one line (JSON, TOML, requirements): `#` (and `//` with
    ``slashes``) outside quotes; ``hash_needs_space``: only at a line start or after whitespace."""
    out = []
    i, n = 0, len(text)
    quote = ""
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote or ch == "\n":
                quote = ""
        elif ch in quotes:
            quote = ch
        elif ch == "#" or (slashes and text.startswith("//", i)):
            if not hash_needs_space or i == 0 or text[i - 1] in " \t\n":
                end = _line_end(text, i)
                out.append((i, end))
                i = end
                continue
        i += 1
    return out


def _shell(text: str) -> list[tuple[int, int]]:
    """bash: `#` starts a comment only at the start of a word, outside quotes (a `\\` escapes the next character)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == "'":
            j = text.find("'", i + 1)
            i = n if j == -1 else j + 1
        elif ch == "$" and text.startswith("$'", i):
            i += 2
            while i < n and text[i] != "'":
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif ch == "#" and (i == 0 or text[i - 1] in _SHELL_WORD_BREAK):
            end = _line_end(text, i)
            out.append((i, end))
            i = end
        else:
            i += 1
    return out


def _yaml(text: str) -> list[tuple[int, int]]:
    """YAML: `#` at a line start or after whitespace, outside quoted scalars (which may span lines) and outside
    the content lines of block scalars (`key: |`)."""
    out = []
    pos = 0
    quote = ""
    block_indent = None  # indent of the line that opened a block scalar
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        indent = len(body) - len(body.lstrip(" "))
        if block_indent is not None and not quote:
            if not body.strip() or indent > block_indent:
                pos += len(line)
                continue
            block_indent = None
        i = 0
        while i < len(body):
            ch = body[i]
            if quote:
                if quote == '"' and ch == "\\":
                    i += 2
                    continue
                if ch == quote:
                    if quote == "'" and body.startswith("''", i):
                        i += 2
                        continue
                    quote = ""
            elif ch in "'\"":
                before = body[:i].rstrip()
                if not before or before[-1] in _YAML_SCALAR_START:
                    quote = ch
            elif ch == "#" and (i == 0 or body[i - 1] in " \t"):
                out.append((pos + i, pos + len(body)))
                break
            i += 1
        else:
            stripped = body.rstrip()
            head, _, tail = stripped.rpartition(" ")
            if not quote and tail[:1] in ("|", ">") and tail.lstrip("|>+-0123456789") == "" and \
                    (head.endswith(":") or head.lstrip().startswith("-") or not head):
                block_indent = indent
        pos += len(line)
    return out
