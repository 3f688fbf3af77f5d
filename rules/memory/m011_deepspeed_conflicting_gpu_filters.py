"""M011 deepspeed-conflicting-gpu-filters."""
from __future__ import annotations

from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule

RUNNER_URL = "https://github.com/deepspeedai/DeepSpeed/blob/v0.16.4/deepspeed/launcher/runner.py"


@rule("M011", "deepspeed-conflicting-gpu-filters", Severity.ERROR, kinds={"shell"})
def deepspeed_conflicting_gpu_filters(ctx):
    """The `deepspeed` launcher is given GPU selections it refuses together.

    ## What it does
    Reports a `deepspeed` launch that gives `--include`/`--exclude` together with `--num_gpus`/`--num_nodes` (a
    whole number), or `--include` together with `--exclude`.

    ## Why it matters
    DeepSpeed's runner raises "Cannot specify num_nodes/gpus with include/exclude" (runner.py main) or
    "include_str and exclude_str are mutually exclusive." (parse_resource_filter) before any process starts, in
    every release from 0.9 to 0.16 at least; the job never runs.

    ## Example
    `deepspeed --num_gpus 4 --include localhost:4,5,6,7 train.py`

    ## Fix
    Keep one way of choosing GPUs: `--include localhost:4,5,6,7` alone names them, `--num_gpus 4` takes the first
    four.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/v0.16.4/deepspeed/launcher/runner.py#L443
    https://github.com/deepspeedai/DeepSpeed/blob/v0.16.4/deepspeed/launcher/runner.py#L309
    https://github.com/deepspeedai/DeepSpeed/blob/v0.9.0/deepspeed/launcher/runner.py#L399
    """
    from rlhf_lint.frameworks.launchers import commands_of, launcher_specs

    aliases = launcher_specs()["deepspeed"]["aliases"]
    for command in commands_of(ctx.source, ctx.project):
        if command.launcher != "deepspeed":
            continue
        given = {}
        for arg in command.launcher_args:
            given[aliases.get(arg.flag, arg.flag)] = arg
        filters = [given[f] for f in ("--include", "--exclude") if f in given]
        counts = [a for f, a in given.items() if f in ("--num_gpus", "--num_nodes") and a.value is not None
                  and a.value.known and a.value.text.isascii() and a.value.text.isdigit()]
        if len(filters) == 2:
            yield Finding(filters[1].flag_span, "`deepspeed` refuses --include and --exclude together: \"include_str "
                                                f"and exclude_str are mutually exclusive.\" ({RUNNER_URL}#L309)",
                          path=command.path,
                          related=(Related(command.path, filters[0].flag_span, "the other filter"),))
        elif filters and counts:
            yield Finding(counts[0].flag_span, f"`deepspeed` refuses {counts[0].flag} with {filters[0].flag}: "
                                               "\"Cannot specify num_nodes/gpus with include/exclude\" "
                                               f"({RUNNER_URL}#L443)", path=command.path,
                          related=(Related(command.path, filters[0].flag_span, "the GPU filter"),))
