"""S008 variable-name-without-dollar."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity, Span
from rlhf_lint.engine.registry import rule
from rlhf_lint.frameworks.launchers import commands_of
from rlhf_lint.rules.shell._common import assignments


def _candidate(text: str) -> bool:
    """A name one would give a variable (`model_path`, `MODEL`, `trainFiles`), not a plain word: an underscore,
    or upper case, or a length few literal values of a flag have."""
    return (text.isascii() and text.isidentifier() and len(text) >= 3
            and ("_" in text.strip("_") or text.isupper() or len(text) >= 10))


@rule("S008", "variable-name-without-dollar", Severity.WARNING, kinds={"shell"}, fixable=True)
def variable_name_without_dollar(ctx):
    """A launch passes the name of a variable the script assigns, without the `$` that would expand it.

    ## What it does
    Reports a launch argument whose value, as written, is exactly the name of a variable assigned earlier in the
    script (`actor_rollout_ref.model.path=model_path` after `model_path=Qwen/Qwen2-72B-Instruct`, or
    `--pretrain MODEL_PATH` after `MODEL_PATH=...`). Names that read like plain words (`vllm`, `error`) are left
    alone unless they have an underscore, are upper case or are long.

    ## Why it matters
    The program receives the name itself: a model path `model_path` that does not exist, found after the cluster
    has been allocated and the workers have started.

    ## Example
    ```bash
    model_path=Qwen/Qwen2-72B-Instruct
    python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=model_path
    ```

    ## Fix
    Add the `$` (an unsafe fix: it changes what the program receives). Values in single quotes are not fixed:
    there the `$` would not expand.

    ## References
    - https://www.gnu.org/software/bash/manual/bash.html#Shell-Parameter-Expansion
    """
    names = assignments(ctx.source, ctx.project)
    if names is None:
        return
    text = ctx.source.text
    seen: set[tuple[int, int]] = set()
    for command in commands_of(ctx.source, ctx.project):
        if command.path != ctx.source.path or command.heredoc_span is not None:
            continue
        line = ctx.source.position(command.span.start).line
        words = [w for a in command.args for w in a.values] + list(command.positionals)
        for word in words:
            if (not word.known or word.path != ctx.source.path or word.origin_span is not None or word.parts
                    or (word.span.start, word.span.end) in seen):
                continue
            written = text[word.span.start:word.span.end]
            value, offset = word.text, 0
            if "=" in value and not written.startswith(("'", '"')):
                key, _, value = value.partition("=")
                offset = len(key) + 1
            if not _candidate(value):
                continue
            first = names.first_line.get(value)
            if first is None or not 0 < first < line:
                continue
            seen.add((word.span.start, word.span.end))
            at = written.find(value, offset)
            if at < 0:
                continue
            span = Span(word.span.start + at, word.span.start + at + len(value))
            fix = None
            if "'" not in written and "\\" not in written:
                fix = Fix(f"expand the variable: ${value}", (Edit.replace(span, "$" + value),), Applicability.UNSAFE)
            yield Finding(span, f"`{value}` is the name of the variable assigned on line {first}, passed as text: "
                                f"`${value}` was probably meant", fix=fix)
