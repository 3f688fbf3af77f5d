"""Human output: ``path:line:col: CODE severity message``, the source line with a caret, then a summary."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Severity
from rlhf_lint.reporters.escape import escaped, visible
from rlhf_lint.reporters.positions import related_range

_COLORS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


def _paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def _caret(diag) -> str:
    """The source line, escaped (rlhf_lint.reporters.escape), and a caret under the diagnostic's columns: a tab is
    one space and an escaped character as wide as its escape, so the caret stays under the same characters."""
    raw = diag.source_line or ""
    if not raw:
        return ""
    skipped = diag.source_line_start  # the source line is an excerpt: columns count from its first character
    col = max(diag.start.column - skipped, 1)
    width = ((diag.end.column - diag.start.column) if diag.end.line == diag.start.line else len(raw) - col + 1)
    width = max(1, min(width, max(1, len(raw) - col + 1)))
    if raw.isprintable():  # the usual line: every character one column wide (no tab, nothing escaped)
        line, before, under = raw, col - 1, min(width, max(1, len(raw) - col + 1))
    else:
        pieces = [" " if ch == "\t" else escaped(ch) for ch in raw]
        line = "".join(pieces)
        before = sum(len(p) for p in pieces[:col - 1]) + max(0, col - 1 - len(raw))
        under = max(1, sum(len(p) for p in pieces[col - 1:col - 1 + width]))
    lead = "..." if skipped else ""
    return f"    {lead}{line}{'...' if diag.source_line_cut else ''}\n    {' ' * (before + len(lead))}{'^' * under}"


def rule_pages(diagnostics) -> list[str]:
    """The page of each code reported: docs/rules.md on the repository and the rule's anchor (a full URL per code
    would pass 100 characters; `rlhf-lint rule CODE` prints it)."""
    return pages_of({d.code for d in diagnostics})


def pages_of(codes) -> list[str]:
    from rlhf_lint.engine.registry import REGISTRY, RULES_PAGE_URL

    anchors = [f"  {code} #{rule.anchor}" for code in sorted(codes)
               if (rule := REGISTRY.get(code)) is not None]
    return ["", f"Rule pages: {RULES_PAGE_URL}", *anchors] if anchors else []


def wrap_header(head: str, message: str, width: int | None) -> list[str]:
    """``head message`` as one line, or on a terminal of ``width`` columns, wrapped with the rest indented."""
    line = f"{head} {message}"
    if width is None or len(line) <= width:
        return [line]
    import textwrap  # only long messages on a terminal

    return textwrap.wrap(line, width=width, subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False) or [line]


def render_text(result, *, show_fixes: bool = False, quiet: bool = False, fixing: bool = False,
                color: bool = False, dry_run: bool = False, width: int | None = None) -> str:
    return "".join(iter_text(result, show_fixes=show_fixes, quiet=quiet, fixing=fixing, color=color,
                             dry_run=dry_run, width=width))


def iter_text(result, *, show_fixes: bool = False, quiet: bool = False, fixing: bool = False,
              color: bool = False, dry_run: bool = False, width: int | None = None):
    """The report line by line, each with its newline: the CLI writes it as it goes (memory flat in findings)."""
    fixable = 0
    lines = 0
    counts = dict.fromkeys(Severity, 0)
    codes: set[str] = set()
    for d in result.diagnostics:
        counts[d.severity] += 1
        codes.add(d.code)
        out: list[str] = []
        sev = _paint(d.severity.label, _COLORS[d.severity], color)
        where = _paint(f"{visible(d.path)}:{d.start.line}:{d.start.column}:", "1", color)
        mark = ""
        if d.fix is not None and d.fix.applicability != Applicability.DISPLAY:
            fixable += 1
            mark = " [*]" if d.fix.applicability == Applicability.SAFE else " [unsafe fix]"
        # wrapped before painting, so colour codes do not count as columns
        prefix = f"{visible(d.path)}:{d.start.line}:{d.start.column}: {d.code} {d.severity.label}"
        plain = wrap_header(prefix, f"{visible(d.message)}{mark}", width)
        if not plain[0].startswith(prefix + " "):  # a path wider than the terminal: leave the line whole
            plain = [f"{prefix} {visible(d.message)}{mark}"]
        out.append(f"{where} {_paint(d.code, '1', color)} {sev}" + plain[0][len(prefix):])
        out.extend(plain[1:])
        if not quiet:
            caret = _caret(d)
            if caret:
                out.append(caret)
            for rel in d.related:
                got = related_range(result, rel)
                at = f"{visible(rel.path)}:{got[0].line}:{got[0].column}" if got else visible(rel.path)
                out.append(f"    note: {at}: {visible(rel.message)}")
            if d.fix is not None and (show_fixes or d.fix.applicability == Applicability.DISPLAY):
                out.append(f"    {'fix' if d.fix.applicability != Applicability.DISPLAY else 'suggestion'}: {visible(d.fix.message)}")
        lines += len(out)
        yield "".join(line + "\n" for line in out)
    if not quiet:
        tail = pages_of(codes)
        parts = [f"{counts[s]} {s.label}{'s' if counts[s] != 1 else ''}" for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)]
        summary = f"Checked {result.files_checked} file{'s' if result.files_checked != 1 else ''}: {', '.join(parts)}."
        if result.fixed:
            summary += f" Would fix {result.fixed} (nothing written)." if dry_run else f" Fixed {result.fixed}."
        if fixable and not fixing and not dry_run:
            summary += f" {fixable} fixable with --fix (those marked [unsafe fix] need --unsafe-fixes)."
        if lines or tail:
            tail.append("")
        tail.append(summary)
        yield "".join(line + "\n" for line in tail)

