"""S007 unset-variable-in-launch."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.frameworks.launchers import commands_of
from rlhf_lint.rules.shell._common import assignments, sourced_by_others

# lower-case names the environment commonly holds (proxies): not the script's own
_ENVIRONMENT = frozenset({"http_proxy", "https_proxy", "no_proxy", "ftp_proxy", "all_proxy"})


def _plain_references(doc):
    """(name, node) of each `$name` / `${name}` of the script outside function bodies: no default, no index, no
    operator."""
    stack = [doc.tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            continue  # a caller may set the names a function uses
        if n.type in ("simple_expansion", "expansion"):
            named = n.named_children
            if len(named) == 1 and named[0].type == "variable_name":
                name = doc.text_of(named[0])
                if doc.text_of(n) in (f"${name}", f"${{{name}}}"):
                    yield name, n
            continue
        stack.extend(n.children)


@rule("S007", "unset-variable-in-launch", Severity.WARNING, kinds={"shell"})
def unset_variable_in_launch(ctx):
    """A launch expands a lower-case variable that nothing in the script assigns.

    ## What it does
    Reports `$name` and `${name}` in the arguments of a launch command when no line of the script (in any branch,
    any function, or a file it sources inside the repository) assigns `name`. Like shellcheck's SC2154, names in
    upper case are left alone: the environment often provides those (`$HOME`, `$WANDB_API_KEY`). Nothing is
    reported when the script runs `eval` or `set -a`, sources a file outside the repository, is sourced by another
    script of the repository, or when the launch sits inside a function (a caller may set the names).

    ## Why it matters
    The variable expands to nothing: `data.train_files=$data_path` becomes `data.train_files=`, and the job fails
    after its workers have started, or trains on a default it was not meant to use.

    ## Example
    ```bash
    gsm8k_train_path=$HOME/data/gsm8k/train.parquet
    python3 -m verl.trainer.main_ppo data.train_files=$data_path
    ```

    ## Fix
    Assign the variable, or use the name that is assigned (`$gsm8k_train_path`); `${name:?}` makes the shell stop
    with a message when a caller must provide it.

    ## References
    - https://www.shellcheck.net/wiki/SC2154
    """
    from rlhf_lint.readers.shell import script_of

    script = script_of(ctx.source)
    names = assignments(ctx.source, ctx.project)
    if script is None or names is None or not names.complete:
        return
    launches = [span for c in commands_of(ctx.source, ctx.project) if c.path == ctx.source.path
                for span in (c.span, c.heredoc_span) if span is not None]
    if not launches or sourced_by_others(ctx.source, ctx.project):
        return
    reported: set[str] = set()
    for name, node in _plain_references(script.doc):
        if name in reported or name.upper() == name or name in names.first_line or name in _ENVIRONMENT:
            continue
        span = script.doc.span(node)
        if not any(s.start <= span.start and span.end <= s.end for s in launches):
            continue
        reported.add(name)
        yield Finding(span, f"`${name}` is not assigned anywhere in this script: the launch receives an empty "
                            f"value here (unless the caller exports `{name}`)")
