"""M007 vllm-kv-cache-too-small: the KV cache of vLLM cannot hold one sequence of the configured maximum length."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _assumed, _estimate, _gib, _no_verdict, _span_of


@rule("M007", "vllm-kv-cache-too-small", Severity.ERROR, scope="job", when="gpu")
def vllm_kv_cache_too_small(ctx):
    """The KV cache of vLLM cannot hold one sequence of the configured maximum length.

    ## What it does
    Computes what is left of vLLM's reservation for the KV cache after the weights of one tensor-parallel shard and
    the profiling peak, and the KV bytes per token (2 x layers x KV heads per rank x head size x 2 bytes). Reports
    when the cache holds fewer tokens than prompt + generation length, and says how many sequences fit otherwise.
    An error when the weights alone leave no room for one sequence; a warning when only the assumed terms (the
    profiling peak, and the memory outside torch vLLM takes out of it: what the profile run adds where vLLM measures
    from a snapshot (V0 from 0.6.4, V1 from 0.9.2), else the CUDA context too) do.

    ## Why it matters
    vLLM refuses to start: "The model's max seq len is larger than the maximum number of tokens that can be stored
    in KV cache" - after the weights are loaded.

    ## Example
    A 70B model with tensor parallel 2 on 80 GB GPUs at gpu_memory_utilization 0.5.

    ## Fix
    Raise gpu_memory_utilization (if the GPU is not shared), raise tensor parallelism, or shorten the sequences.

    ## References
    https://github.com/vllm-project/vllm/issues/2418
    https://github.com/OpenRLHF/OpenRLHF/issues/336
    """
    est = _estimate(ctx)
    vllm = est.role("vllm")
    if _no_verdict(est) or vllm is None or vllm.kv.get("kv_bytes") is None:
        return
    kv = vllm.kv
    if kv["tokens"] >= kv["one_sequence"]:
        return
    span = _span_of(ctx, "vllm.gpu_memory_utilization")
    if kv["kv_bytes"] <= 0:
        what = (f"the weights ({_gib(kv['weights_per_gpu'])} per GPU at tensor parallel {kv['tensor_parallel']}) "
                f"and the profiling peak ({_gib(kv['profile_peak'])}) already fill the reservation of "
                f"{_gib(vllm.term('vllm_reservation'))}")
    else:
        what = (f"{_gib(kv['kv_bytes'])} of KV cache holds {kv['tokens']} tokens at {kv['bytes_per_token']} B per "
                f"token")
    if kv["kv_bytes_at_most"] // kv["bytes_per_token"] >= kv["one_sequence"]:
        yield Finding(span, f"vLLM may not hold one {kv['one_sequence']}-token sequence: {what}; the weights alone "
                            f"leave {_gib(kv['kv_bytes_at_most'])}, so this rests on the assumed profiling peak and "
                            f"memory outside torch{_assumed(est)}", severity=Severity.WARNING)
        return
    yield Finding(span, f"vLLM cannot hold one {kv['one_sequence']}-token sequence: {what}{_assumed(est)}")
