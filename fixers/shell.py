"""Edits of launch commands as a person would make them: set, insert, remove or rename a flag.

Each function returns Edits (character spans of the Source text) and changes nothing else: indentation, quoting,
comments and the command's continuation style stay as written. A value that came from a variable is edited where
it was assigned (``Word.edit_span``); a flag that came from a heredoc is edited inside the heredoc body.
"""
from __future__ import annotations

import re

from rlhf_lint.readers.commands import Arg, Command, Word
from rlhf_lint.model import Edit, Span
from rlhf_lint.startup.lazyre import lazy_compile

# a leading "=" is quoted: tree-sitter-bash reads a bare `==` or `=~` argument as a test operator and the
# command then swallows the next line (bash itself would not)
_SAFE_UNQUOTED = lazy_compile(r"^[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*$")
_LINE_SEP = lazy_compile(r"[ \t]*\\\r?\n[ \t]*$")


def shell_quote(value: str) -> str:
    """The value as one shell word: bare when that is safe, else single-quoted."""
    if value and _SAFE_UNQUOTED.match(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def _in_heredoc(command: Command, span: Span) -> bool:
    return command.heredoc_span is not None and command.heredoc_span.start <= span.start < command.heredoc_span.end


def _quote_context(text: str, span: Span) -> str:
    """'"' or "'" when the span sits inside quotes that it does not include, else ''."""
    before = text[span.start - 1] if span.start > 0 else ""
    after = text[span.end] if span.end < len(text) else ""
    if before == after and before in ("'", '"'):
        return before
    return ""


def format_value(text: str, span: Span, value: str, command: Command | None = None) -> str:
    """The replacement for a value at ``span``: kept bare inside existing quotes, quoted when it needs it."""
    context = _quote_context(text, span)
    if context == '"':
        return re.sub(r'([$`"\\])', r"\\\1", value)
    if context == "'":
        return value.replace("'", "'\\''")
    if command is not None and _in_heredoc(command, span):
        return value  # quotes are not removed inside a heredoc: a value there must not need them
    return shell_quote(value)


def set_flag_value(text: str, command: Command, arg: Arg, value: str) -> tuple[Edit, ...]:
    """Give ``arg`` the single value ``value``: edit its (first) value where it was written or assigned."""
    if arg.values:
        word = arg.values[0]
        span = word.edit_span
        if word.origin_span is not None and not _SAFE_UNQUOTED.match(value):
            span = word.span  # `$VAR` may be expanded unquoted: a value with blanks is written at the use, quoted
        token = arg.word
        if token is not None and token.origin_span is None and text.startswith(arg.flag + "=", token.span.start) \
                and token.span.end <= len(text):
            span = Span(token.span.start + len(arg.flag) + 1, token.span.end)  # --flag=value: the part after '='
        return (Edit.replace(span, format_value(text, span, value, command)),)
    # a switch: the value goes right after the flag
    return (Edit.insert(arg.flag_span.end, " " + format_value(text, Span(arg.flag_span.end, arg.flag_span.end),
                                                               value, command)),)


def rename_flag(command: Command, arg: Arg, new_flag: str) -> tuple[Edit, ...]:
    return (Edit.replace(arg.flag_span, new_flag),)


def _last_word(command: Command, path: str) -> Word | None:
    words = []
    if command.entry is not None:
        words.append(command.entry)
    for a in command.args:
        if a.word is not None:
            words.append(a.word)
        words.extend(a.values)
    words.extend(command.positionals)
    words = [w for w in words if w.path == path]
    if not words:
        words = [w for w in command.words if w.path == path]
    return max(words, key=lambda w: w.span.end) if words else None


def insert_flag(text: str, command: Command, flag: str, values: tuple[str, ...] = ()) -> tuple[Edit, ...]:
    """Add ``flag values...`` after the command's last argument, on a new line when the command is written one
    flag per line (in the heredoc body when the arguments come from one)."""
    last = _last_word(command, command.path)
    if last is None:
        return ()
    at = last.span.end
    rendered = " ".join([flag] + [format_value(text, Span(at, at), v, command) for v in values])
    sep = command.continuation
    if sep and "\n" in sep:
        newline = "\r\n" if "\r\n" in sep else "\n"
        indent = sep.split("\n")[-1]
        in_heredoc = _in_heredoc(command, last.span)
        if in_heredoc and "\\" not in sep:
            sep = newline + indent
        elif "\\" not in sep:
            sep = " \\" + newline + indent
        # keep the spacing before the backslash that the command uses
        return (Edit.insert(at, sep + rendered),)
    return (Edit.insert(at, " " + rendered),)


def remove_flag(text: str, command: Command, arg: Arg) -> tuple[Edit, ...]:
    """Delete the flag and its values, and the line or separator they leave behind."""
    start = arg.flag_span.start
    end = arg.span.end
    for w in arg.values:
        if w.path == command.path and w.span.start >= start:
            end = max(end, w.span.end)
    line_start = text.rfind("\n", 0, start) + 1
    eol = text.find("\n", end)
    eol = len(text) if eol == -1 else eol
    line_end = eol - 1 if eol > end and text[eol - 1] == "\r" else eol  # before a CRLF's \r
    before = text[line_start:start]
    after = text[end:line_end]
    if not before.strip() and (not after.strip() or after.strip() == "\\"):
        # the flag owns its line: remove the line; if it ended the command, move the end to the previous line
        if after.strip() == "\\" or _in_heredoc(command, arg.flag_span):
            return (Edit(line_start, min(eol + 1, len(text)), ""),)
        prev_end = line_start - 1  # the previous line's newline
        if prev_end > 0:
            prev_start = text.rfind("\n", 0, prev_end) + 1
            prev = text[prev_start:prev_end].rstrip("\r")
            m = re.search(r"[ \t]*\\$", prev)
            if m:
                # `--a 1 \` then `--b 2` (removed): drop the backslash so the command ends on the line before
                return (Edit(prev_start + m.start(), line_end, ""),)
        return (Edit(line_start, min(eol + 1, len(text)), ""),)
    # inline: remove the flag with the blanks before it
    i = start
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    return (Edit(i, end, ""),)
