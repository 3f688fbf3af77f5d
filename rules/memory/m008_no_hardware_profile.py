"""M008 no-hardware-profile."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _assumed, _estimate, _gib


@rule("M008", "no-hardware-profile", Severity.INFO, scope="job")
def no_hardware_profile(ctx):
    """No GPU is declared, so the memory rules give no verdict; the estimate is shown for information.

    ## What it does
    When neither the configuration (`gpu`, `gpu-memory`), the command line (`--gpu`, `--gpu-memory`) nor a
    `# rlhf-lint: hardware gpu=...` comment in the script names the GPU, reports the estimated per-GPU peak of
    each group of roles and the assumptions it rests on, instead of a verdict. An ORZ config evaluated once per
    environment-flag scenario (`DEBUG_MODE`) names the scenario of each figure, or reports once when every scenario
    gives the same figures.

    ## Why it matters
    A memory verdict against a guessed GPU would be a guess; the figures still help to size the job.

    ## Example
    `rlhf-lint train_ppo.sh` without hardware: "actor needs 23.5 GiB per GPU ...".

    ## Fix
    Declare the hardware: `rlhf-lint --gpu A100-80GB --gpus-per-node 8 --host-memory 1TB`, or in the script
    `# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 host-memory=1TB`.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/master/docs/code-docs/source/memory.rst
    """
    est = _estimate(ctx)
    if est.hardware_known or not est.groups:
        return

    def peaks(est) -> str:
        return "; ".join(f"{' + '.join(g.names)} {_gib(g.peak)}" for g in est.groups if g.peak) + _assumed(est)

    text = peaks(est)
    where = ""
    scenario = getattr(ctx.job, "scenario", "")
    if scenario:
        # one job per environment-flag scenario of the same config (ORZ's DEBUG_MODE): name it, or report once
        # when every scenario gives the same figures
        siblings = [j for j in ctx.project.jobs if j.path == ctx.job.path and j.span == ctx.job.span
                    and getattr(j, "scenario", "")]
        if all(peaks(_estimate(ctx, j)) == text for j in siblings):
            if siblings[0] is not ctx.job:
                return
            where = f" (the same in every scenario: {'; '.join(j.scenario for j in siblings)})"
        else:
            where = f" with {scenario}"
    yield Finding(ctx.job.span, f"no GPU in the hardware profile, so no memory verdict; estimated peak per "
                                f"GPU{where}: {text}")
