"""GitHub Actions workflow commands: one ``::error file=...,line=...::`` annotation per diagnostic."""
from __future__ import annotations

from rlhf_lint.reporters.escape import visible

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    # control characters other than CR and LF (an escape sequence would colour or rewrite the log) and bidi overrides
    # shown as escapes; then the workflow-command escapes, so a file's content cannot start a `::` command
    text = visible(text, keep="\r\n")
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(result) -> str:
    return "".join(iter_github(result))


def iter_github(result):
    """One annotation line at a time (the CLI writes them as they come)."""
    for d in result.diagnostics:
        where = f"file={_escape_property(d.path)},line={d.start.line}"
        if d.end.line == d.start.line:
            where += f",col={d.start.column},endLine={d.end.line},endColumn={d.end.column}"
        else:  # the annotation format takes columns only within one line
            where += f",endLine={d.end.line}"
        props = f"{where},title={_escape_property(f'{d.code} {d.name}')}"
        yield f"::{_LEVEL[d.severity.label]} {props}::{_escape_data(f'{d.code} {d.message}')}\n"
