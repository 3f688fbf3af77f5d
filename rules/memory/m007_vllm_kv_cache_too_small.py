"""M007 vllm-kv-cache-too-small: the KV cache of vLLM cannot hold one sequence of the configured maximum length."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _assumed, _estimate, _gib, _no_verdict, _span_of, _stand_in, _tail_named


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

    The length is vLLM's max_model_len: what the launch passes, else the prompt + generation length, except where
    the framework leaves it to vLLM, which then takes the model's max_position_embeddings (verl 0.7.0 always, verl
    0.7.1 on when `rollout.max_model_len` is unset; TRL's colocated GRPO engine from 0.26 when
    `vllm_max_model_length` is unset; OpenRLHF's engines before 0.3.2). That length is used only when the model's config was read (the
    catalog entry of that exact model, or its config.json); with the framework's release unknown the finding is a
    warning. So is a shortfall that rests on a stand-in layer shape (a size read from the name) unless the weights
    alone fill the reservation, or on a model named by the end of a path the linter cannot read.

    ## Fix
    Raise gpu_memory_utilization (if the GPU is not shared), raise tensor parallelism, or shorten the sequences
    (verl: set `actor_rollout_ref.rollout.max_model_len`, TRL: `vllm_max_model_length`, to the prompt + response
    length).

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
    sure = kv.get("one_sequence_sure", True)
    if not sure and kv["tokens"] >= kv["one_sequence_min"]:
        yield Finding(span, f"vLLM may not hold {_length(kv, kv['one_sequence'])}: {what}; the length rests on the "
                            f"framework's release, which is not known{_assumed(est)}", severity=Severity.WARNING)
        return
    tokens = kv["one_sequence"] if sure else kv["one_sequence_min"]  # not sure: the least it can be
    if kv["kv_bytes_at_most"] // kv["bytes_per_token"] >= tokens:
        yield Finding(span, f"vLLM may not hold {_length(kv, tokens)}: {what}; the weights alone leave "
                            f"{_gib(kv['kv_bytes_at_most'])}, so this rests on the assumed profiling peak and memory "
                            f"outside torch{_assumed(est)}", severity=Severity.WARNING)
        return
    # a stand-in layer shape sizes the KV per token and the profile peak, not the weights: weights that fill the
    # reservation alone overflow whatever the shape
    unsure = _tail_named(est) or (_stand_in(est) if kv["kv_bytes_at_most"] > 0 else "")
    yield Finding(span, f"vLLM cannot hold {_length(kv, tokens)}: {what}{unsure}{_assumed(est)}",
                  severity=Severity.WARNING if unsure else None)


def _length(kv: dict, tokens: int) -> str:
    why = kv.get("one_sequence_why") if tokens == kv["one_sequence"] else ""
    return f"one {tokens}-token sequence" + (f" ({why})" if why else "")
