"""Offloaded ZeRO-3 parameters in pinned host memory (issue 15, row I17): torch's pinned host allocator rounds every
block up to a power of two and caches freed blocks, so zero.Init's per-parameter pinned partitions stay beside the
flat buffer stage3.py copies them into."""
from lintutil import build_written

from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import GIB, resolve_model
from rlhf_lint.memory.estimate import estimate


def host(pin, model="Qwen/Qwen2.5-32B", gpus=1, offload_param="cpu"):
    extra = {"deepspeed.offload_param_pin_memory": pin}
    job = _job_from_options(model, gpus, None, 3, "cpu", offload_param, "bf16", None, 1, 2048, True, True, "sft",
                            extra)
    est = estimate(job, Hardware(gpu="H100-NVL", gpus_per_node=gpus, host_memory=744 * 10**9))
    return {t.name: t.bytes for t in est.nodes[0].persistent}, est.nodes[0]


def test_tensor_list_adds_up_to_the_parameter_count():
    for name in ("Qwen/Qwen2.5-32B", "meta-llama/Llama-2-13b-hf", "Qwen/Qwen3-30B-A3B", "gpt2"):
        arch = resolve_model(name).arch
        assert sum(arch.tensor_numels()) == arch.param_count() - arch.extra_params


def test_pinned_parameters_round_to_powers_of_two_and_stay_cached():
    plain, _ = host(False)
    pinned, node = host(True)
    assert "pinned_cache:policy" not in plain
    # one rank: the flat buffer of 2 B x 32.76B (61.0 GiB) is a 64 GiB pinned block
    assert plain["params:policy"] < 64 * GIB == pinned["params:policy"]
    # Qwen2.5-32B's MLP projections (27648 x 5120 x 2 B = 270 MiB) take 512 MiB blocks each: the cached per-parameter
    # blocks exceed the parameters themselves
    arch = resolve_model("Qwen/Qwen2.5-32B").arch
    assert pinned["pinned_cache:policy"] > 1.7 * 2 * sum(arch.tensor_numels())
    # 744 GB of RAM: killed (LLaMA-Factory 6755); without pinning the same job would fit
    assert node.fits is False and host(False)[1].fits is True


def test_pinned_cache_only_with_parameter_offload():
    terms, _ = host(True, offload_param=None)
    assert "pinned_cache:policy" not in terms and "params:policy" not in terms


def test_ds_config_pin_memory_reaches_the_estimate(tmp_path):
    (job,) = build_written(tmp_path, {
        "ds.json": '{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, '
                   '"offload_param": {"device": "cpu", "pin_memory": true}}}',
        "train.sh": "deepspeed train.py --deepspeed ds.json --model_name_or_path Qwen/Qwen2.5-32B --bf16\n",
    }).jobs
    assert job.settings.get("deepspeed.offload_param_pin_memory").value is True


def lora_host(zero, quantization=None, offload_param=None):
    extra = {"train.lora_rank": 64, "train.quantization": quantization}
    job = _job_from_options("meta-llama/Llama-2-70b-hf", 8, 8, zero, "cpu", offload_param, "bf16", None, 1, 2048,
                            True, True, "sft", extra)
    node = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8, host_memory=512 * 10**9)).nodes[0]
    return {t.name: t.bytes for t in node.persistent + node.transient}, node


def test_cpu_adam_of_a_lora_job_holds_the_adapters_states_only():
    """70B LoRA r 64 with the optimizer on the CPU: Adam's 12 B and the fp32 gradient cover the 828M adapters, not
    the 69B frozen base (which would be 1 TB of host RAM)."""
    terms, node = lora_host(2)
    adapters = 828_375_040
    assert terms["optimizer_states:policy"] == 12 * adapters
    assert terms["gradients:policy"] == 4 * adapters
    # ZeRO-2 keeps the whole model on rank 0's GPU: PEFT saves the adapters alone
    assert terms["saving:policy"] == 2 * adapters
    # what stays is the processes and the adapters' states; eight full bf16 copies while loading are the peak
    assert sum(t.bytes for t in node.persistent) < 40 * 2**30 and terms["loading:policy"] > 10**12


def test_quantized_load_is_streamed_and_zero3_saving_gathers_everything():
    terms, _ = lora_host(2, quantization="4bit")
    assert terms["loading:policy"] == 8 * 5_000_000_000  # one checkpoint shard per rank, not 8 full copies
    full, _ = lora_host(2)
    assert full["loading:policy"] == 8 * 2 * 68_976_648_192
    # under ZeRO-3 the HF Trainer gathers the full 16-bit state dict before PEFT picks the adapters
    z3, _ = lora_host(3, offload_param="cpu")
    assert z3["saving:policy"] == 2 * 68_976_648_192 and z3["params:policy"] == 2 * 68_976_648_192
