"""vLLM's profile-run peak (rows I24-I26, vllm#10511): the sampler runs after the forward has freed its MLP
transients, on max_num_seqs full-vocabulary rows on the driver rank; the V0 engine forces top-k/top-p and sorts."""
from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import K, estimate

LLAMA3 = "meta-llama/Meta-Llama-3-8B"


def vllm_kv(tp=1, versions=None, max_num_seqs=256, batched=None):
    extra = {"vllm.num_engines": 1, "vllm.gpu_memory_utilization": 0.9, "vllm.tensor_parallel_size": tp,
             "vllm.max_num_seqs": max_num_seqs, "vllm.max_num_batched_tokens": batched}
    job = _job_from_options(LLAMA3, tp, None, None, None, None, "bf16", None, 1, 8192, True, True, "sft", extra)
    est = estimate(job, Hardware.from_mapping({"gpu-memory": "79.22GiB", "gpus-per-node": 8}), versions=versions)
    return est.role("vllm").kv


def test_v0_sampler_sets_the_profile_peak_whatever_the_tp_size():
    arch = resolve_model(LLAMA3).arch
    sampler = 256 * arch.vocab_size * K.vllm_v0_sampler_logit_bytes + 8192 * arch.hidden_size * 2
    for tp in (1, 2):
        assert vllm_kv(tp, {"vllm": "0.6.5"})["profile_peak"] == sampler  # measured 1.26 GiB at TP 1 and TP 2


def test_v1_or_unknown_release_keeps_fp32_logits_and_the_larger_of_forward_and_sampler():
    arch = resolve_model(LLAMA3).arch
    kv, current = vllm_kv(1, {"vllm": "0.8.5"}), vllm_kv(1)
    # V1 profiles max_num_batched_tokens: the LLM class's default on a card of 70 GiB or more is 16384
    forward = 16384 * (K.vllm_profile_intermediate_factor * arch.intermediate_size
                       + K.vllm_profile_hidden_factor * arch.hidden_size) * 2
    sampler = 256 * arch.vocab_size * K.vllm_sampler_logit_bytes + 16384 * arch.hidden_size * 2
    assert kv["profile_peak"] == current["profile_peak"] == max(forward, sampler) == forward
    # 0.8.x takes every byte outside torch, the CUDA context included, out of the KV cache; a current release
    # (unknown: taken as current) measures from a snapshot that holds the context, and takes only what profiling adds
    assert current["kv_bytes"] - kv["kv_bytes"] == K.cuda_context - int(K.vllm_non_torch_increase)
    # the launch's max_num_batched_tokens is what the profile puts through the model
    assert vllm_kv(1, batched=2048)["profile_peak"] == max(
        2048 * (K.vllm_profile_intermediate_factor * arch.intermediate_size
                + K.vllm_profile_hidden_factor * arch.hidden_size) * 2,
        256 * arch.vocab_size * K.vllm_sampler_logit_bytes + 2048 * arch.hidden_size * 2)
    # more scheduled sequences: the sampler's rows take over
    many = vllm_kv(1, {"vllm": "0.8.5"}, max_num_seqs=4096)
    assert many["profile_peak"] == 4096 * arch.vocab_size * K.vllm_sampler_logit_bytes + 16384 * arch.hidden_size * 2


def test_v1_defaults_depend_on_the_card():
    from rlhf_lint.memory.estimate import _vllm_engine

    gib = 2**30
    assert _vllm_engine(None, "H100-80GB", 79 * gib)["batched_tokens"] == 16384
    assert _vllm_engine(None, "H100-80GB", 79 * gib)["max_num_seqs"] == 1024
    # vLLM keeps the smaller defaults on the A100 (PR 17885) and on cards under 70 GiB
    assert _vllm_engine(None, "A100-80GB", 79 * gib)["batched_tokens"] == 8192
    assert _vllm_engine(None, "L40S", 44 * gib)["max_num_seqs"] == 256
    assert not _vllm_engine({"vllm": "0.6.3"}, "A100-80GB", 79 * gib)["v1"]
    assert [_vllm_engine({"vllm": v}, None, None)["snapshot"] for v in ("0.6.3", "0.6.4", "0.8.5", "0.9.2")] == \
        [False, True, False, True]
