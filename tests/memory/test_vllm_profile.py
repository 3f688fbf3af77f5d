"""vLLM's profile-run peak (rows I24-I26, vllm#10511): the sampler runs after the forward has freed its MLP
transients, on max_num_seqs full-vocabulary rows on the driver rank; the V0 engine forces top-k/top-p and sorts."""
from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import K, estimate

LLAMA3 = "meta-llama/Meta-Llama-3-8B"


def vllm_kv(tp=1, versions=None, max_num_seqs=256):
    extra = {"vllm.num_engines": 1, "vllm.gpu_memory_utilization": 0.9, "vllm.tensor_parallel_size": tp,
             "vllm.max_num_seqs": max_num_seqs}
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
    kv = vllm_kv(1, {"vllm": "0.8.5"})
    assert kv == vllm_kv(1)  # unknown release: the V1 figure
    forward = 8192 * (K.vllm_profile_intermediate_factor * arch.intermediate_size
                      + K.vllm_profile_hidden_factor * arch.hidden_size) * 2
    sampler = 256 * arch.vocab_size * K.vllm_sampler_logit_bytes + 8192 * arch.hidden_size * 2
    assert kv["profile_peak"] == max(forward, sampler) == forward
    # more scheduled sequences: the sampler's rows take over
    many = vllm_kv(1, {"vllm": "0.8.5"}, max_num_seqs=4096)
    assert many["profile_peak"] == 4096 * arch.vocab_size * K.vllm_sampler_logit_bytes + 8192 * arch.hidden_size * 2
