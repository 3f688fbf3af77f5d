"""Models RL and SFT launches of 2025-2026 name: each resolves to its own catalog entry by hub id, by the names
launches give it (-Instruct, a local checkpoint path) and without taking an existing alias's place."""
import pytest

from rlhf_lint.memory.catalog import resolve_model


@pytest.mark.parametrize("reference, how, name", [
    # Qwen2.5-Coder and Qwen2.5-Math-1.5B: aliases on the Qwen2.5 base of the same shape
    ("Qwen/Qwen2.5-Math-1.5B", "name", "Qwen/Qwen2.5-1.5B"),
    ("Qwen/Qwen2.5-Math-1.5B-Instruct", "name", "Qwen/Qwen2.5-1.5B"),
    ("Qwen/Qwen2.5-Coder-0.5B-Instruct", "name", "Qwen/Qwen2.5-0.5B"),
    ("Qwen/Qwen2.5-Coder-3B", "name", "Qwen/Qwen2.5-3B"),
    ("Qwen/Qwen2.5-Coder-7B-Instruct", "name", "Qwen/Qwen2.5-7B"),
    ("/ckpt/qwen2.5-coder-32b-instruct/global_step_50", "name", "Qwen/Qwen2.5-32B"),
    # vision-language models: their own entries, not the text model of the same size
    ("Qwen/Qwen2.5-VL-7B-Instruct", "catalog", "Qwen/Qwen2.5-VL-7B-Instruct"),
    ("/ckpt/Qwen2.5-VL-7B-Instruct/global_step_100", "name", "Qwen/Qwen2.5-VL-7B-Instruct"),
    ("qwen2.5-vl-7b", "name", "Qwen/Qwen2.5-VL-7B-Instruct"),
    ("Qwen/Qwen2.5-VL-3B-Instruct", "catalog", "Qwen/Qwen2.5-VL-3B-Instruct"),
    ("Qwen/Qwen2-VL-7B", "name", "Qwen/Qwen2-VL-7B-Instruct"),
    ("Qwen/Qwen3-VL-8B-Instruct", "catalog", "Qwen/Qwen3-VL-8B-Instruct"),
    ("/models/Qwen3-VL-30B-A3B-Instruct", "name", "Qwen/Qwen3-VL-30B-A3B-Instruct"),
    # large MoE models
    ("moonshotai/Kimi-K2-Instruct", "catalog", "moonshotai/Kimi-K2-Instruct"),
    ("moonshotai/Kimi-K2-Base", "catalog", "moonshotai/Kimi-K2-Instruct"),  # same_config
    ("MiniMaxAI/MiniMax-M2", "catalog", "MiniMaxAI/MiniMax-M2"),
    ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", "catalog", "meta-llama/Llama-3.1-70B"),  # same_config
    # existing aliases keep their entries
    ("Qwen2.5-7B-Instruct", "name", "Qwen/Qwen2.5-7B"),
    ("Qwen/Qwen2.5-Math-7B", "name", "Qwen/Qwen2.5-7B"),
    ("Qwen/Qwen2.5-Math-72B-Instruct", "name", "Qwen/Qwen2.5-72B"),
    ("Qwen/Qwen2-7B-Instruct", "catalog", "Qwen/Qwen2-7B-Instruct"),  # a variant: Qwen2-7B's shape, 32768 tokens
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "name", "Qwen/Qwen3-30B-A3B"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "catalog", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"),
])
def test_2025_models_resolve_to_their_entries(reference, how, name):
    res = resolve_model(reference)
    assert (res.how, res.arch.name) == (how, name)


def test_vision_towers_are_counted_and_match_the_hub_totals():
    # the hub's index total_size / 2 (bf16), which the LM shape plus the tower counted from vision_config equal
    assert resolve_model("Qwen/Qwen2.5-VL-7B-Instruct").param_count == 16_584_333_312 // 2
    assert resolve_model("Qwen/Qwen2-VL-7B-Instruct").param_count == 16_582_751_232 // 2
    assert resolve_model("Qwen/Qwen3-VL-8B-Instruct").param_count == 17_534_247_392 // 2
    vl = resolve_model("Qwen/Qwen2.5-VL-7B-Instruct").arch
    text = resolve_model("Qwen/Qwen2.5-7B").arch
    assert vl.param_count() - vl.extra_params == text.param_count()


@pytest.mark.parametrize("reference", ["Qwen/Qwen2.5-VL-72B-Instruct", "moonshotai/Kimi-K2.5"])
def test_unverified_relatives_are_not_taken_for_a_catalog_entry(reference):
    # Qwen2.5-VL-72B's tower differs from the 3B/7B one; Kimi-K2.5 adds a vision encoder
    res = resolve_model(reference)
    assert res.how in ("size", "unknown") and res.guessed or res.arch is None


@pytest.mark.parametrize("reference, params", [
    ("huggyllama/llama-7b", 6_738_415_616), ("huggyllama/llama-13b", 13_015_864_320),
    ("huggyllama/llama-30b", 32_528_943_616), ("/ckpt/llama-65b/step-100", 65_285_660_672),
])
def test_llama_1_checkpoints_get_their_own_shapes(reference, params):
    # read by size before (7.00B, 65.0B) with a neighbour's shape; the 65B has no grouped-query attention
    res = resolve_model(reference)
    assert res.how in ("catalog", "name") and res.param_count == params
    assert res.arch.num_kv_heads == res.arch.num_heads
