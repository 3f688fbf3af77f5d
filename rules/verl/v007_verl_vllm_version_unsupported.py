"""V007 verl-vllm-version-unsupported: the vLLM version is not one this verl release accepts."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import _cfg


@rule("V007", "verl-vllm-version-unsupported", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_vllm_version_unsupported(ctx):
    """The vLLM version is not one this verl release accepts.

    ## What it does
    With `verl-version` and `vllm-version` configured (or pinned), checks the vLLM version against the allowlist
    that verl releases up to 0.5 apply when the rollout imports vLLM (schemas/verl/vllm_support.json).

    ## Why it matters
    The job stops with "ValueError: vllm version 0.6.3.post1 not supported" once the rollout worker starts.

    ## Example
    verl 0.2.0 with vllm 0.6.4 or 0.7.3.

    ## Fix
    Pin a vLLM version the release accepts, or upgrade verl.

    ## References
    https://github.com/verl-project/verl/issues/245
    https://github.com/verl-project/verl/issues/513
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    verl_v, vllm_v = ctx.config.version("verl"), ctx.config.version("vllm")
    if not verl_v or not vllm_v:
        return
    # imported only past the early returns: packaging.specifiers costs ~25 ms of a one-file run
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    from rlhf_lint.frameworks.verl import vllm_support

    try:
        verl_version, vllm_version = Version(verl_v), Version(vllm_v)
    except InvalidVersion:
        return
    for row in vllm_support():
        if verl_version not in SpecifierSet(row["verl"]):
            continue
        if vllm_v in row["exact"] or any(vllm_v.startswith(p) for p in row["prefix"]):
            return
        if vllm_version >= Version(row["minimum"]):
            return
        yield Finding(ctx.job.span, f"verl {verl_v} refuses vllm {vllm_v} at rollout start ({row['message']})",
                      path=ctx.job.path)
        return
