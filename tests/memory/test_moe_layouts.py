"""MoE layer layouts (dense layers beside routed ones), multi-head latent attention, and names that give only the
active parameters: each read from a config.json the way the hub writes it."""
import json

import pytest

from rlhf_lint.memory.catalog import ModelArch, resolve_model
from rlhf_lint.memory.estimate import lora_params


def from_config(**fields):
    res = resolve_model("./local-model", read_config=lambda ref: json.dumps(fields))
    assert res.how == "config.json"
    return res.arch


# a DeepSeek-V2-Lite-shaped config: MLA without a q latent, one dense layer first, two shared experts
DEEPSEEK_STYLE = dict(model_type="deepseek_v2", hidden_size=2048, num_hidden_layers=27, num_attention_heads=16,
                      num_key_value_heads=16, intermediate_size=10944, moe_intermediate_size=1408,
                      n_routed_experts=64, n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1,
                      moe_layer_freq=1, q_lora_rank=None, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128, vocab_size=102400, tie_word_embeddings=False)


def test_deepseek_layout_counts_dense_layers_shared_experts_and_latent_attention():
    arch = from_config(**DEEPSEEK_STYLE)
    assert (arch.moe_layer_count, arch.dense_layer_count) == (26, 1)
    assert arch.shared_expert_intermediate_size == 2 * 1408
    h, heads = 2048, 16
    attention = h * heads * 192 + h * (512 + 64) + 512 * heads * 256 + heads * 128 * h + 512
    assert arch.attention_params() == attention
    moe_layer = 64 * 3 * h * 1408 + h * 64 + 3 * h * 2 * 1408 + h
    dense_layer = 3 * h * 10944
    expected = 2 * 102400 * h + 27 * (attention + 2 * h) + 26 * moe_layer + dense_layer + h
    assert arch.param_count() == expected
    assert abs(arch.param_count() - 15.7e9) / 15.7e9 < 0.01  # the model card's 15.7B
    # the element count of every tensor adds up to the same total (ZeRO-3's pinned-block estimate reads them)
    assert sum(arch.tensor_numels()) == expected
    # vLLM caches the 512-wide latent and the 64-wide rotary key per layer, the same on every TP rank
    assert arch.kv_bytes_per_token(2, tp=4) == 27 * (512 + 64) * 2
    # transformers' DynamicCache holds every head's K (192) and V (128)
    assert arch.kv_bytes_per_token(2, latent=False) == 27 * 16 * (192 + 128) * 2


def test_expert_parallel_splits_only_the_routed_experts_of_moe_layers():
    arch = from_config(**DEEPSEEK_STYLE)
    assert arch.expert_params() == 26 * 64 * 3 * 2048 * 1408


def test_llama4_layout_interleaves_dense_and_moe_layers():
    text = dict(model_type="llama4_text", hidden_size=5120, num_hidden_layers=48, num_attention_heads=40,
                num_key_value_heads=8, head_dim=128, intermediate_size=8192, intermediate_size_mlp=16384,
                num_local_experts=128, num_experts_per_tok=1, interleave_moe_layer_step=2, vocab_size=202048,
                tie_word_embeddings=False)
    arch = from_config(model_type="llama4", text_config=text)
    assert (arch.moe_layer_count, arch.dense_layer_count) == (24, 24)
    assert (arch.moe_intermediate_size, arch.shared_expert_intermediate_size, arch.intermediate_size) == \
        (8192, 8192, 16384)
    assert abs(arch.param_count() - 400e9) / 400e9 < 0.01  # Maverick: 400B in all
    every = from_config(**{**text, "interleave_moe_layer_step": 1, "num_local_experts": 16})
    assert every.moe_layer_count == 48
    assert abs(every.param_count() - 109e9) / 109e9 < 0.015  # Scout: 109B with its vision encoder


def test_qwen_moe_mlp_only_layers_are_dense():
    base = dict(model_type="qwen3_moe", hidden_size=2048, num_hidden_layers=48, num_attention_heads=32,
                num_key_value_heads=4, head_dim=128, intermediate_size=6144, moe_intermediate_size=768,
                num_experts=128, num_experts_per_tok=8, vocab_size=151936)
    assert from_config(**base, decoder_sparse_step=1, mlp_only_layers=[]).moe_layers == 48
    assert from_config(**base, decoder_sparse_step=1, mlp_only_layers=[0, 47]).moe_layers == 46
    assert from_config(**base, decoder_sparse_step=2).moe_layers == 24
    assert from_config(**base).moe_layers is None  # no layout key: every layer routes


def test_lora_on_latent_attention_uses_its_module_names():
    arch = from_config(**DEEPSEEK_STYLE)
    h = 2048
    attention = 16 * (h + 16 * 192) + 16 * (h + 576) + 16 * (512 + 16 * 256) + 16 * (16 * 128 + h)
    assert lora_params(arch, 16, ["q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"]) == 27 * attention
    assert lora_params(arch, 16, ["k_proj", "v_proj"]) == 0  # MLA has no such modules
    mlp = 3 * 16 * (h + 1408)
    shared = 3 * 16 * (h + 2 * 1408)
    dense = 3 * 16 * (h + 10944)
    assert lora_params(arch, 16, None) == 27 * attention + 26 * (64 * mlp + shared) + dense


def test_layer_params_is_the_largest_layer_for_fsdp_units():
    arch = from_config(**DEEPSEEK_STYLE)
    assert arch.layer_params() == arch.attention_params() + arch.moe_ffn_params() + 2 * 2048


@pytest.mark.parametrize("reference", ["org/Llama-4-Custom-17B-16E-Instruct", "org/MyModel-17B-128E",
                                       "/ckpt/llama4-17b_16e/step100"])
def test_names_that_give_active_parameters_are_not_read_as_the_total(reference):
    res = resolve_model(reference)
    assert res.arch is None and res.how == "unknown"
    assert "active parameters" in res.note


def test_dense_models_are_unchanged_by_the_layout_fields():
    dense = ModelArch(name="d", hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8,
                      intermediate_size=14336, vocab_size=128256)
    assert dense.moe_layer_count == 0 and dense.dense_layer_count == 32
    assert dense.layer_params() * 32 == dense.decoder_params()
    assert sum(dense.tensor_numels()) == dense.param_count()


@pytest.mark.parametrize("reference, name", [
    ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3"),  # same_config: matched exactly
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3"),  # a dated release of a catalog name
    ("/ckpt/gpt-oss-20b-sft/global_step10", "openai/gpt-oss-20b"),
    ("microsoft/Phi-4-mini-instruct", "microsoft/Phi-4-mini-instruct"),  # not phi-4 (14B)
    ("zai-org/GLM-4.5V", "zai-org/GLM-4.5-Air"),  # not GLM-4.5 (355B)
])
def test_new_catalog_names_resolve_to_their_own_shape(reference, name):
    assert resolve_model(reference).arch.name == name


@pytest.mark.parametrize("reference", ["org/deepseek-r1-qwen-7b-sft", "gpt2-1.5b"])
def test_names_near_a_catalog_name_are_not_taken_for_it(reference):
    # a user's name with deepseek-r1 in it is not the 671B model; gpt2-1.5b is a size, not gpt2 (124M)
    res = resolve_model(reference)
    assert res.how == "size" and res.param_count in (7_000_000_000, 1_500_000_000)


@pytest.mark.parametrize("reference, params", [("nnheui/stablelm-2-1_6b-sft-full", 1_600_000_000),
                                               ("org/model_7b", 7_000_000_000), ("org/my-13b-sft", 13_000_000_000)])
def test_sizes_read_from_names(reference, params):
    # stablelm-2-1_6b writes 1.6B with an underscore: it is not a 6B model
    assert resolve_model(reference).param_count == params


def test_a_name_with_total_and_active_sizes_takes_its_moe_siblings_shape_or_none():
    sibling = resolve_model("OpenGVLab/InternVL3_5-30B-A3B")
    assert sibling.arch is not None and sibling.arch.num_experts and sibling.guessed
    assert "Qwen3-30B-A3B" in sibling.note
    # no catalog MoE with those sizes: no dense stand-in of the total size
    assert resolve_model("example-org/Unknown-57B-A9B").arch is None
