"""S001 broken-line-continuation."""
from __future__ import annotations

import re
from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity, Span
from rlhf_lint.engine.registry import rule
from rlhf_lint.startup.lazyre import lazy_compile
from rlhf_lint.readers.shell import script_of


# `\  # note` at the end of a line: the backslash escapes a blank, not the newline
_BACKSLASH_COMMENT = lazy_compile(r"\\[ \t]+#[^\r\n]*(?=\r?\n)")

# a dotted Hydra override (`actor.optim.lr=1e-6`) is no valid shell assignment: at a line start bash runs it as a
# command, so such a line is an orphaned piece of the launch above
_HYDRA_OVERRIDE = lazy_compile(r"^[+~]{0,2}[A-Za-z_][\w-]*(?:\.[\w-]+)+=")


def _node_type_at(script, char_offset: int) -> str:
    """The tree-sitter node type at a character offset of the top-level script (ASCII prefix assumed exact)."""
    doc = script.doc
    byte = len(doc.text[:char_offset].encode("utf-8"))
    node = doc.tree.root_node.descendant_for_byte_range(byte, byte + 1)
    types = []
    while node is not None:
        types.append(node.type)
        node = node.parent
    return ",".join(types)


def _crlf_continuations(ctx, script, text: str, to_lf: tuple):
    for m in re.finditer(r"\\\r(?=\n)", text) if to_lf else ():
        start = m.start()
        backslashes = len(text[:start + 1]) - len(text[:start + 1].rstrip("\\"))
        line = ctx.source.position(start).line
        if backslashes % 2 == 0 or ctx.source.line_text(line).lstrip().startswith("#"):
            continue
        types = _node_type_at(script, start).split(",")
        if any(t in types for t in ("comment", "raw_string", "string", "heredoc_body")):
            continue
        nxt = ctx.source.line_text(line + 1).strip() if line < ctx.source.line_count() else ""
        if not nxt or nxt.startswith("#"):
            continue
        yield Finding(Span(start, start + 1),
                      "the line ends in CR-LF: bash reads `\\` + CR as an escaped carriage return, not a line "
                      "continuation (shellcheck SC1017), so the command ends here",
                      fix=Fix("convert the script to LF line endings", to_lf, Applicability.SAFE))


@rule("S001", "broken-line-continuation", Severity.ERROR, kinds={"shell"}, fixable=True)
def broken_line_continuation(ctx):
    """A `\\` that does not continue the line, so the rest of the command runs as a separate command.

    ## What it does
    Finds a backslash followed by spaces before the end of a line (the backslash then escapes a space, and the
    newline ends the command), a backslash before a CR-LF line end (bash escapes the carriage return, not the
    newline: shellcheck SC1017), and lines that start with a flag after a line that did not end with `\\` (the
    flag runs as a command of its own).

    ## Why it matters
    The launch starts with only the flags before the break, so it trains with defaults for everything after it
    (or fails on a missing required flag), and the shell then prints `--actor_learning_rate: command not found`
    long after the job was queued. Invisible in review: trailing spaces do not show.

    ## Example
    ```bash
    deepspeed --module openrlhf.cli.train_sft \\
       --max_len 2048 \\   <- spaces after the backslash
       --zero_stage 3
    ```

    ## Fix
    Trailing blanks after the backslash are removed (safe). A script with CR-LF line endings is converted to LF
    (safe: no line of a bash script means its trailing CR). A missing backslash is added at the end of the line
    before the orphaned flag (unsafe: the command gains arguments it did not have).

    ## References
    - https://www.gnu.org/software/bash/manual/bash.html#Escape-Character
    - https://www.shellcheck.net/wiki/SC1017
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/examples/scripts/train_sft_mixtral_lora.sh
    """
    script = script_of(ctx.source, ctx.project)
    if script is None:
        return
    text = ctx.source.text
    # CR-LF: bash keeps the CR as a character, so `\` + CR-LF escapes the CR and the newline ends the command
    # (shellcheck SC1017); every fix of such a file also converts it to LF, or the break stays
    to_lf = tuple(Edit(m.start(), m.end(), "") for m in re.finditer(r"\r(?=\n)", text)) if "\r\n" in text else ()
    yield from _crlf_continuations(ctx, script, text, to_lf)
    # the patterns below need a backslash followed by a blank: most scripts have none
    spaced = "\\ " in text or "\\\t" in text
    for m in re.finditer(r"\\([ \t]+)(?=\r?\n)", text) if spaced else ():
        start = m.start()
        backslashes = len(text[:start + 1]) - len(text[:start + 1].rstrip("\\"))
        if backslashes % 2 == 0:
            continue  # `\\` is an escaped backslash
        line = ctx.source.position(start).line
        if ctx.source.line_text(line).lstrip().startswith("#"):
            continue
        types = _node_type_at(script, start)
        if any(t in types.split(",") for t in ("comment", "raw_string", "string")):
            continue
        nxt = ctx.source.line_text(line + 1).strip() if line < ctx.source.line_count() else ""
        if not nxt or nxt.startswith("#"):
            continue
        in_heredoc = "heredoc_body" in types
        what = ("inside the heredoc the backslash stays in the text and becomes a stray `\\` argument"
                if in_heredoc else "the backslash escapes the blank instead of the newline, so the command ends here")
        blank = Edit(m.start(1), m.end(1), "")
        fix = Fix("remove the whitespace after the backslash", (blank,), Applicability.SAFE)
        if to_lf:
            fix = Fix("remove the whitespace after the backslash and convert the script to LF line endings",
                      (blank, *to_lf), Applicability.SAFE)
        yield Finding(Span(start, m.end()), f"whitespace after the line-continuation backslash: {what}", fix=fix)
    commented = set()  # lines whose break the comment check below already reports
    for m in _BACKSLASH_COMMENT.finditer(text) if spaced else ():
        start = m.start()
        backslashes = len(text[:start + 1]) - len(text[:start + 1].rstrip("\\"))
        line = ctx.source.position(start).line
        if backslashes % 2 == 0 or ctx.source.line_text(line).lstrip().startswith("#"):
            continue
        types = _node_type_at(script, start)
        if any(t in types.split(",") for t in ("comment", "raw_string", "string", "heredoc_body")):
            continue
        nxt = ctx.source.line_text(line + 1).strip() if line < ctx.source.line_count() else ""
        if not nxt or nxt.startswith("#"):
            continue
        commented.add(line)
        yield Finding(Span(start, m.end()),
                      "a comment after the line-continuation backslash: the backslash escapes the blank, the "
                      "comment runs to the end of the line, so the command ends here (move the comment to a line "
                      "of its own)")
    commands = [c for c in script.simple_commands if c.path == ctx.source.path and c.depth == 0]
    for simple in commands:
        first = simple.words[0] if simple.words else None
        if first is None or not first.known or len(first.text) < 2:
            continue
        if not first.text.startswith("-") and not ("=" in first.text and _HYDRA_OVERRIDE.match(first.text)):
            continue
        line = ctx.source.position(simple.span.start).line
        if line < 2 or (line - 1) in commented:
            continue
        prev = ctx.source.line_text(line - 1)
        stripped = prev.rstrip()
        if not stripped or stripped.endswith("\\"):
            continue
        related = ()
        fix = None
        if "#" not in prev:
            end = ctx.source.line_span(line - 1).start + len(stripped)
            fix = Fix(f"end line {line - 1} with a line continuation", (Edit.insert(end, " \\"),),
                      Applicability.UNSAFE)
        yield Finding(Span(first.span.start, first.span.end),
                      f"`{first.text}` starts a command of its own: line {line - 1} does not end with `\\`, so the "
                      f"command above ends there and this line runs separately",
                      fix=fix, related=related)
