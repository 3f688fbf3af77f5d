"""V007 verl-vllm-version-unsupported: the vLLM version is not one this verl release accepts."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import _cfg


@rule("V007", "verl-vllm-version-unsupported", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_vllm_version_unsupported(ctx):
    """The vLLM version is not one this verl release accepts.

    ## What it does
    With the verl and vLLM versions known (configured, else pinned: `verl==` and `vllm==` pins count), checks the vLLM version against the allowlist
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
    from rlhf_lint.frameworks.edge import target_version

    if cfg.fork is not None:
        return  # a checkout's own vLLM checks are not in the table
    verl_t, vllm_t = cfg.target, target_version(ctx.project, "vllm")  # configuration > pin
    if verl_t is None or vllm_t is None:
        return
    verl_v, vllm_v = verl_t.version, vllm_t.version
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
        yield Finding(ctx.job.span, f"verl {verl_v} refuses vllm {vllm_v} at rollout start ({row['message']}; "
                                    f"verl {verl_t.origin}, vllm {vllm_t.origin})", path=ctx.job.path)
        return
