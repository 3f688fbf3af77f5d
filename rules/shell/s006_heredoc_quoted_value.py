"""S006 heredoc-quoted-value."""
from __future__ import annotations

import re
from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity, Span
from rlhf_lint.engine.registry import rule
from rlhf_lint.frameworks.launchers import commands_of


@rule("S006", "heredoc-quoted-value", Severity.ERROR, kinds={"shell"}, fixable=True)
def heredoc_quoted_value(ctx):
    """Quotes inside a `read -d '' cmd <<EOF` body reach the program as characters, and do not group words.

    ## What it does
    Reports arguments of a command built from a heredoc variable (`deepspeed --module $training_commands`) that
    contain quote characters. Bash expands `$training_commands` unquoted: the text is split on blanks and the
    quotes are not removed. An empty pair (`--input_template ""`) is a warning: such a heredoc cannot pass an empty
    value at all, and whether two quote characters act as empty depends on the program.

    ## Why it matters
    `--input_template "User: {}"` arrives as two arguments, `"User:` and `{}"`: argparse stops with
    `unrecognized arguments`, or the template silently contains quote characters. `--save_path "./ckpt"` saves
    to a directory literally named `"`.

    ## Example
    ```bash
    read -r -d '' training_commands <<EOF
    openrlhf.cli.train_sft \\
       --input_template "User: {}"
    EOF
    deepspeed --module $training_commands
    ```

    ## Fix
    Quotes around a value without blanks are removed (safe). A value with blanks cannot be passed this way:
    move that flag out of the heredoc into the command line, quoted there.

    ## References
    - https://www.gnu.org/software/bash/manual/bash.html#Word-Splitting
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.9.5/examples/scripts/train_rejection_sampling_llama.sh
    """
    text = ctx.source.text
    seen: set[int] = set()
    for command in commands_of(ctx.source, ctx.project):
        for arg in command.args:
            quoted = [v for v in arg.values if v.literal_quotes and v.path == ctx.source.path]
            if not quoted or quoted[0].span.start in seen:
                continue
            seen.add(quoted[0].span.start)
            span = Span(quoted[0].span.start, quoted[-1].span.end)
            shown = " ".join(f"`{v.text}`" for v in quoted)
            fix = None
            if len(quoted) == 1:
                word = quoted[0]
                written = text[word.span.start : word.span.end]
                inner = written[1:-1]
                if written == word.text and len(written) > 2 and written[0] == written[-1] and written[0] in "'\"" \
                        and not re.search(r"[\s'\"\\$`*?\[]", inner):
                    fix = Fix("remove the quotes", (Edit.replace(word.span, inner),), Applicability.SAFE)
                message = f"`{arg.flag}` receives {shown} with the quote characters: quotes are not removed when " \
                          f"a heredoc variable is expanded"
                if word.text in ('""', "''"):
                    # an empty value cannot be passed through such a heredoc at all (without the quotes the flag
                    # takes the next word); whether two quote characters act as empty is the program's business
                    # (OpenRLHF's train_sft drops a template without {}): a warning
                    yield Finding(span, message + ", not an empty value, which such a heredoc cannot pass: check "
                                  "that the program treats it as empty", severity=Severity.WARNING)
                    continue
            else:
                message = f"`{arg.flag}` receives {len(quoted)} separate arguments {shown}: the heredoc variable is " \
                          f"split on blanks and its quotes are kept"
            yield Finding(span, message, fix=fix)
