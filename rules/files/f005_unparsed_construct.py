"""F005 unparsed-construct: a shell word rlhf-lint's parser misreads although bash reads it; its value is unknown."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule


@rule("F005", "unparsed-construct", Severity.INFO, when="unparsed constructs", kinds={"shell"})
def unparsed_construct(ctx):
    """A construct rlhf-lint could not parse, although bash reads it: the file is checked, its value is unknown.

    ## What it does
    Reports a word of a shell script that tree-sitter-bash, the parser rlhf-lint reads scripts with, misreads where
    bash reads it as one word: arithmetic as the default of a `${VAR:-...}` (`${N:-$(((a + b) * 2))}`), brackets
    there (`${L:-['npu','cpu']}`), `$(((a + b) * 2))` in a heredoc body. The word ends where bash ends it, so the
    rest of the file is read and checked as usual; only this word's value is unknown.

    ## Why it matters
    Nothing is wrong with the script, but a check whose input comes from this word (a flag value, a variable used
    later) cannot tell what it holds and stays silent about it. Errors bash itself rejects are F003.

    ## Example
    ```bash
    CONTENTS=${CONTENTS:-['npu','cpu']}
    ```

    ## Fix
    Nothing is required. To let rlhf-lint read the value, quote the default (`${CONTENTS:-"['npu','cpu']"}`, the
    same value for bash) or compute it in a statement of its own.
    """
    script = ctx.source.tree
    for span in getattr(script, "unparsed", ()):
        yield Finding(span, "rlhf-lint could not parse this construct, which bash reads as one word: its value is "
                            "unknown to the checks")
