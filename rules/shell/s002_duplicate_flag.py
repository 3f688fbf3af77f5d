"""S002 duplicate-flag: a flag is given twice to the same launch; the program keeps the last one."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.frameworks.launchers import commands_of


@rule("S002", "duplicate-flag", Severity.WARNING, kinds={"shell"}, fixable=False)
def duplicate_flag(ctx):
    """A flag is given twice to the same launch; the program keeps the last one.

    ## What it does
    Reports every earlier occurrence of a flag that the same command repeats later (after expanding variables,
    arrays and heredocs), with the value that actually wins.

    ## Why it matters
    argparse keeps the last value without a warning, so a value edited in one place silently has no effect when
    a shared array or a later line sets it again. Scripts grown by copy and paste often carry both.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --micro_train_batch_size 4 ... --micro_train_batch_size 8
    ```

    ## Fix
    Delete the occurrence you do not mean (shown as a suggestion: which one is intended is for you to say).

    ## References
    - https://docs.python.org/3/library/argparse.html#action
    """
    from rlhf_lint.fixers.shell import remove_flag

    text = ctx.source.text
    for command in commands_of(ctx.source, ctx.project):
        seen: dict[str, list] = {}
        for arg in command.args:
            if arg.word is not None and not arg.word.known:
                continue
            seen.setdefault(arg.flag, []).append(arg)
        for flag, args in seen.items():
            if len(args) < 2:
                continue
            last = args[-1]
            last_value = " ".join(str(v.text) for v in last.values) if last.values else "(no value)"
            last_line = ctx.source.position(last.flag_span.start).line if last.word.path == ctx.source.path else 0
            for arg in args[:-1]:
                if arg.word is None or arg.word.path != ctx.source.path:
                    continue
                value = " ".join(str(v.text) for v in arg.values) if arg.values else "(no value)"
                fix = None
                if all(v.path == ctx.source.path for v in arg.values):
                    fix = Fix(f"remove this {flag}", remove_flag(text, command, arg), Applicability.DISPLAY)
                where = f"line {last_line}" if last_line else "later"
                yield Finding(arg.flag_span, f"`{flag}` is given again on {where}; the last value ({last_value}) "
                                             f"wins and this one ({value}) is ignored",
                              fix=fix, related=(Related(last.word.path, last.flag_span, f"`{flag}` repeated here"),))
