"""S004 ray-job-submit-without-separator: ray job submission (`ray job submit`) without `--` before the entrypoint."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.readers.shell import script_of


def _ray_entry(words):
    from rlhf_lint.frameworks.launchers import _options, launcher_specs

    i = 0
    while i < len(words) and words[i].known and "=" in words[i].text and not words[i].text.startswith("-"):
        i += 1
    if [w.text for w in words[i : i + 3]] != ["ray", "job", "submit"]:
        return None, False
    if any(w.known and w.text == "--" for w in words[i + 3 :]):
        return None, False
    _, j = _options(words, i + 3, launcher_specs()["ray_job_submit"])
    return (words[j] if j < len(words) else None), True


@rule("S004", "ray-job-submit-without-separator", Severity.ERROR, kinds={"shell"}, fixable=True)
def ray_job_submit_without_separator(ctx):
    """Ray job submission (`ray job submit`) without `--` before the entrypoint.

    ## What it does
    Reports `ray job submit ... python3 -m ...` where no standalone `--` separates ray's options from the
    command to run.

    ## Why it matters
    Without `--`, ray's option parser reads the training flags as its own: it stops with `No such option` on the
    first one, or worse, takes one it knows (`--address`, `--working-dir`) as an option of the submission.

    ## Example
    ```bash
    ray job submit --address=http://127.0.0.1:8265 python3 -m openrlhf.cli.train_ppo_ray --pretrain m
    ```

    ## Fix
    `--` is inserted before the entrypoint.

    ## References
    - https://docs.ray.io/en/latest/cluster/running-applications/job-submission/cli.html
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/examples/scripts/train_ppo_with_reward_fn.sh
    """
    script = script_of(ctx.source, ctx.project)
    if script is None:
        return
    for simple in script.simple_commands:
        if simple.path != ctx.source.path:
            continue
        entry, is_ray = _ray_entry(simple.words)
        if not is_ray or entry is None:
            continue
        rest = simple.words[simple.words.index(entry) + 1 :]
        flags = any(w.known and w.text.startswith("-") for w in rest)
        fix = None
        if entry.path == ctx.source.path and entry.origin_span is None \
                and ctx.source.span_text(entry.span) == entry.text:
            fix = Fix("insert `--` before the entrypoint", (Edit.insert(entry.span.start, "-- "),), Applicability.SAFE)
        yield Finding(entry.span, "`ray job submit` needs `--` before the entrypoint"
                      + (": ray would read the training flags as its own options" if flags else ""),
                      fix=fix, severity=None if flags else Severity.WARNING)
