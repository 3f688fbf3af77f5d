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
