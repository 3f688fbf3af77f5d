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
