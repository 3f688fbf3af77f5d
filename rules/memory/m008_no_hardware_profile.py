"""M008 no-hardware-profile."""
from __future__ import annotations

from rlhf_lint.model import HARDWARE_KEYS, Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _assumed, _estimate, _gib, once_per_repository, others_phrase


def _comment_findings(ctx):
    """A warning at each word of the launch file's `# rlhf-lint: hardware` comment that cannot be used: the
    configuration's checks say why (Config.hardware_errors); the comment's other words still count."""
    source = ctx.project.sources.get(ctx.job.path)
    if source is None or "rlhf-lint" not in source.text:
        return
    from rlhf_lint.readers.shell import declared_hardware, hardware_items

    items = hardware_items(source.text)
    declared = declared_hardware(items)
    errors = ctx.config.hardware_errors(declared)
    last = {key: span for key, _value, span in items}  # the word of a key that counts (the last one)
    for key, value, span in items:
        if key not in HARDWARE_KEYS:
            why = f"unknown key {key!r} (the keys: {', '.join(HARDWARE_KEYS)})"
        elif not value:
            why = f"{key} has no value (write {key}=...)"
        elif key in errors and span == last[key]:
            why = errors[key]
        else:
            continue
        yield Finding(span, f"hardware comment: {why}; this word is ignored, the others count",
                      severity=Severity.WARNING, path=ctx.job.path)


@rule("M008", "no-hardware-profile", Severity.INFO, scope="job")
def no_hardware_profile(ctx):
    """No GPU is declared, so the memory rules give no verdict; the estimate is shown for information.

    ## What it does
    When neither the configuration (`gpu`, `gpu-memory`), the command line (`--gpu`, `--gpu-memory`) nor a
    `# rlhf-lint: hardware gpu=...` comment in the script names the GPU, reports the estimated per-GPU peak of
    each group of roles and the assumptions it rests on, instead of a verdict. An ORZ config evaluated once per
    environment-flag scenario (`DEBUG_MODE`) names the scenario of the figure. Other launches: `rlhf-lint
    estimate`.
    Reported once per repository, on its first launch without hardware, with the count
    of the others (a verl or OpenRLHF tree has hundreds of launches: one line, not one per launch).
    A word of the `# rlhf-lint: hardware` comment that cannot be used is a warning at that word: an unknown GPU
    (with the catalog's close names; any name goes with `gpu-memory=`), a size without its unit (`512` would be
    bytes), a count below 1, an unknown key or a key without a value. The comment's other words still count. (The
    same value in the configuration or on the command line is a configuration error, exit 2.)

    ## Why it matters
    A memory verdict against a guessed GPU would be a guess; the figures still help to size the job.

    ## Example
    `rlhf-lint train_ppo.sh` without hardware: "actor needs 23.5 GiB per GPU ...".
    `# rlhf-lint: hardware gpu=RTX-4O90 gpus-per-node=8`: "hardware comment: gpu 'RTX-4O90': unknown GPU (close:
    RTX-4090, ...)"; the 8 GPUs per node still count.

    ## Fix
    Declare the hardware: `rlhf-lint --gpu A100-80GB --gpus-per-node 8 --host-memory 1TB`, or in the script
    `# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 host-memory=1TB`.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/master/docs/code-docs/source/memory.rst
    """
    yield from _comment_findings(ctx)
    est = _estimate(ctx)
    if est.hardware_known or not est.groups:
        return
    # once per repository (a run's project): the first launch without hardware speaks for all of them
    def without_hardware(job) -> bool:
        other = _estimate(ctx, job)
        return not other.hardware_known and bool(other.groups)

    launches = once_per_repository(ctx, "m008", without_hardware)
    if launches is None:
        return

    def peaks(est) -> str:
        return "; ".join(f"{' + '.join(g.names)} {_gib(g.peak)}" for g in est.groups if g.peak) + _assumed(est)

    text = peaks(est)
    where = ""
    scenario = getattr(ctx.job, "scenario", "")
    if scenario:
        # one job per environment-flag scenario of the same config (ORZ's DEBUG_MODE): name it
        where = f" with {scenario}"
    scope = others_phrase(launches, ": `rlhf-lint estimate FILE` shows each")
    yield Finding(ctx.job.span, f"no GPU in the hardware profile, so no memory verdict{scope}; estimated peak per "
                                f"GPU{where}: {text}")
