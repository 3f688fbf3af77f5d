"""S005 unquoted-glob-in-value."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.frameworks.launchers import commands_of


def _has_glob(text: str) -> bool:
    """`*`, `?` or a `[...]` class: bash would expand the word against file names."""
    return "*" in text or "?" in text or ("[" in text and _has_bracket_class(text))


def _has_bracket_class(text: str) -> bool:
    """Whether ``\\[[^\\]\\s]+\\]`` matches somewhere, in one pass: that expression, searched, backtracks over every
    later '[' from each '[' (a 64 KB run of '[' took 33 s). A class can open at the first '[' after the last ']' or
    blank and closes at the next ']' if at least one character lies between."""
    opened = -1
    for i, ch in enumerate(text):
        if ch == "]":
            if opened != -1 and i - opened >= 2:
                return True
            opened = -1
        elif ch.isspace():
            opened = -1
        elif ch == "[" and opened == -1:
            opened = i
    return False


def _unquoted_glob(token: str) -> bool:
    """Whether a token as written has a glob character outside quotes and not escaped."""
    i, quote, plain = 0, "", []
    while i < len(token):
        ch = token[i]
        if quote:
            if ch == quote:
                quote = ""
            elif quote == '"' and ch == "\\":
                i += 1
            i += 1
            plain.append(" ")
            continue
        if ch in ("'", '"'):
            quote = ch
            plain.append(" ")
        elif ch == "\\":
            i += 1
            plain.append(" ")
        elif ch == "$":
            return False  # an expansion in the token: too complex to judge by text
        else:
            plain.append(ch)
        i += 1
    return _has_glob("".join(plain))


@rule("S005", "unquoted-glob-in-value", Severity.WARNING, kinds={"shell"}, fixable=True)
def unquoted_glob_in_value(ctx):
    """A flag value with an unquoted `*`, `?` or `[...]`, which bash replaces with matching file names.

    ## What it does
    Reports values of launch flags that contain glob characters bash expands: written unquoted in the command or
    an array, or anywhere in a heredoc body expanded as `$cmd` (quotes there do not protect).

    ## Why it matters
    The value the program receives depends on the files in the directory the job starts in: `--include *.json`
    becomes a list of file names, or stays a pattern when nothing matches. Jobs then behave differently per node.

    ## Example
    ```bash
    python train.py --data_glob data/*.parquet
    ```

    ## Fix
    The value is put in single quotes (outside heredocs). In a heredoc, pass the value through a quoted
    variable instead.

    ## References
    - https://www.gnu.org/software/bash/manual/bash.html#Filename-Expansion
    """
    from rlhf_lint.fixers.shell import shell_quote

    text = ctx.source.text
    seen: set[tuple[int, int]] = set()
    for command in commands_of(ctx.source, ctx.project):
        for arg in command.launcher_args + command.args:
            for word in arg.values:
                if not word.known or word.path != ctx.source.path or (word.span.start, word.span.end) in seen:
                    continue
                in_heredoc = command.heredoc_span is not None and word.span.start in command.heredoc_span
                written = text[word.span.start : word.span.end]
                if in_heredoc:
                    if not _has_glob(word.text):
                        continue
                    fix = None
                elif word.origin_span is None and written and _unquoted_glob(written) and "$" not in written:
                    fix = None
                    if "'" not in written and '"' not in written and "\\" not in written:
                        fix = Fix("quote the value", (Edit.replace(word.span, shell_quote(word.text)),),
                                  Applicability.SAFE)
                else:
                    continue
                seen.add((word.span.start, word.span.end))
                yield Finding(word.span, f"`{word.text}` (value of `{arg.flag}`) has unquoted glob characters: bash "
                                         f"replaces it with matching file names"
                                         + (" (quotes inside a heredoc do not prevent it)" if in_heredoc else ""),
                              fix=fix)
