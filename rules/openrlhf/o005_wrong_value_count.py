"""O005 wrong-value-count: a flag with too few values, or words argparse does not consume."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _invocations, _judged


@rule("O005", "wrong-value-count", Severity.ERROR, kinds=SHELL)
def wrong_value_count(ctx):
    """A flag with too few values, or words argparse does not consume.

    ## What it does
    Counts the words after each flag the way argparse does: one for a plain option, exactly two for
    `nargs=2` options (`--actor.eps_clip_low_high 0.2 0.28`, `--reward.clip_range -10 10`), any number for
    `nargs="*"` (`--ds.lora.target_modules`). A missing value, or words left over (OpenRLHF's CLIs take no
    positional arguments), stop the launch. Words whose count the linter cannot know (`$EXTRA`) are not judged.

    ## Why it matters
    A value that went missing (an unset variable, a lost line) makes argparse exit with `expected one argument`
    or `unrecognized arguments` on every rank.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --actor.eps_clip_low_high 0.2 --rollout.batch_size 128
    ```

    ## Fix
    Give every option its values; quote values with spaces.

    ## References
    - https://docs.python.org/3/library/argparse.html#nargs
    """
    for inv in _invocations(ctx):
        for word in inv.stray:
            if word.known:
                yield _judged(inv, word.span, f"`{word.text}` is not an option of {inv.cli}: argparse exits with "
                                              f"'unrecognized arguments'")
        for use in inv.uses:
            spec = use.spec
            if spec is None or spec.is_switch or not use.count_known:
                continue
            need = 1 if spec.nargs is None else spec.nargs
            if spec.nargs in ("*", "?"):
                need = 0
            elif spec.nargs == "+":
                need = 1
            if len(use.values) < need:
                what = "one argument" if need == 1 else f"{need} arguments"
                yield _judged(inv, use.flag_span, f"{spec.flag} expects {what}, got {len(use.values)}")
            elif use.extra:
                extra = " ".join(w.text for w in use.extra if w.known)
                yield _judged(inv, use.extra[0].span, f"{spec.flag} takes {need} value(s); argparse exits with "
                                                      f"'unrecognized arguments: {extra}'")
