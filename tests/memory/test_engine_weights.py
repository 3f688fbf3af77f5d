"""gpt-oss's routed experts are stored in MXFP4 (17 bytes per 32 weights) and vLLM serves them as stored, while a
trainer dequantizes them to bf16 (issue 15, change 62; row V6: gpt-oss-120b at TP 4 on A100-80GB)."""
import json

from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import MXFP4_BYTES, arch_from_config_json, resolve_model
from rlhf_lint.memory.estimate import estimate

GPT_OSS = "openai/gpt-oss-120b"


def roles(model, tp=4):
    extra = {"vllm.num_engines": 1, "vllm.gpu_memory_utilization": 0.8, "vllm.tensor_parallel_size": tp}
    job = _job_from_options(model, tp, None, 3, None, None, "bf16", None, 1, 4096, True, True, "sft", extra)
    return estimate(job, Hardware.from_mapping({"gpu": "A100-80GB", "gpus-per-node": 8}))


def test_vllm_holds_the_experts_as_stored_and_the_rest_in_bf16():
    arch = resolve_model(GPT_OSS).arch
    experts, params = arch.expert_params(), arch.param_count()
    est = roles(GPT_OSS)
    assert est.role("vllm").kv["weights_per_gpu"] == int(2 * (params - experts) + MXFP4_BYTES * experts) // 4
    assert "MXFP4" in est.role("vllm").kv["formula"]
    # the trained copy is bf16 (ZeRO-3 over the 4 GPUs)
    assert est.role("policy").term("weights") == 2 * params // 4


def test_a_dense_model_is_unchanged():
    arch = resolve_model("Qwen/Qwen2.5-7B").arch
    assert roles("Qwen/Qwen2.5-7B", tp=1).role("vllm").kv["weights_per_gpu"] == 2 * arch.param_count()


def test_config_json_with_mxfp4_experts():
    config = {"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64,
              "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "vocab_size": 201088,
              "num_local_experts": 32, "num_experts_per_tok": 4}
    plain = arch_from_config_json(json.dumps(config), "local/dequantized")
    stored = arch_from_config_json(json.dumps({**config, "quantization_config": {"quant_method": "mxfp4"}}), "local")
    assert (plain.expert_weight_bytes, stored.expert_weight_bytes) == (0.0, 17 / 32)


def test_fp8_checkpoints_are_served_in_fp8_and_trained_in_bf16():
    """DeepSeek-V3 stores its decoder linear weights in block-scaled FP8 (1 B + an fp32 scale per 128 x 128)."""
    from rlhf_lint.memory.estimate import _engine_weights

    arch = resolve_model("deepseek-ai/DeepSeek-V3").arch
    params = arch.param_count()
    norms = arch.num_layers * arch.norms_per_layer * arch.hidden_size
    linear = arch.decoder_params() - norms
    assert _engine_weights(arch, params, 2) == int(2 * (params - linear) + (1 + 4 / 16384) * linear)
    # the embedding and the LM head (and the norms) stay bf16: between 1 and 1.01 B per parameter overall
    assert 1.0 < _engine_weights(arch, params, 2) / params < 1.01
    config = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
              "vocab_size": 129280, "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    assert arch_from_config_json(json.dumps(config), "local").linear_weight_bytes == 1 + 4 / 16384
    per_tensor = {**config, "quantization_config": {"quant_method": "fp8"}}
    assert arch_from_config_json(json.dumps(per_tensor), "local").linear_weight_bytes == 1.0


def test_sleep_backup_parks_the_weights_as_the_engine_holds_them():
    """vLLM's sleep level 1 copies each GPU's weights to pinned host RAM: the MXFP4 experts at their own size."""
    from rlhf_lint.memory.estimate import _vllm_sleep_backup
    from rlhf_lint.startup.records import replace

    arch = resolve_model(GPT_OSS).arch
    stored, as_bf16 = _vllm_sleep_backup(arch, 4, 2), _vllm_sleep_backup(replace(arch, expert_weight_bytes=0.0), 4, 2)
    from rlhf_lint.memory.estimate import _engine_weights

    raw = _engine_weights(arch, arch.param_count(), 2) // 4
    # each tensor's pinned block is rounded up to a power of two, so the backup is more than the weights, but the
    # MXFP4 experts keep it near half the bf16 one
    assert raw <= stored < 0.6 * as_bf16
