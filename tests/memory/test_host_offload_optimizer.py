"""ZeRO-Offload's host buffers (issue 15): the fp32 partition, its gradients and the release's 16-bit, staging and flat
gradient buffers, page-locked blocks rounded up to a power of two when offload_optimizer.pin_memory pins them
(schemas/deepspeed/offload_host_buffers.json). The figures are the ones measured on one H200 (bench/calibration/
measured.json, rows HZ2o-host, HZ3o-host and the held-out HZ2on-host, HL2o-host, HL3o-host, HZ2o3-host)."""
import pytest
from lintutil import build_written

from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import GIB
from rlhf_lint.memory.estimate import estimate

QWEN_1_5B = 1_543_714_304  # Qwen2.5-1.5B, tied embeddings: 8 GiB of fp32 in one pinned block, 5.75 GiB unrounded


def host(zero=2, pin=True, deepspeed="0.19.8", torch="2.11.0", model="Qwen/Qwen2.5-1.5B", gpus=1, extra=None,
         framework=None):
    settings = {"deepspeed.offload_optimizer_pin_memory": pin} | (extra or {})
    job = _job_from_options(model, gpus, None, zero, "cpu", None, "bf16", None, 4, 2048, True, True, "sft", settings,
                            framework)
    versions = {k: v for k, v in (("deepspeed", deepspeed), ("torch", torch)) if v}
    est = estimate(job, Hardware(gpu="H200", gpus_per_node=gpus), versions=versions or None)
    return {t.name.split(":")[0]: t for t in est.nodes[0].persistent}, est


def test_zero2_pinned_blocks_round_up_to_powers_of_two():
    terms, _ = host()
    # fp32 partition 8 GiB (pinned) + CPU Adam's moments 8 B x P (never pinned)
    assert terms["optimizer_states"].bytes == 8 * GIB + 8 * QWEN_1_5B
    assert terms["gradients"].bytes == 8 * GIB and "pinned, rounded up" in terms["gradients"].formula
    # from 0.17.0 a 16-bit copy of the partition (2.88 GiB -> 4 GiB) and the largest parameter's staging buffer
    # (the 151936 x 1536 embedding in bf16, 0.43 GiB -> 0.5 GiB)
    assert terms["offload_buffers"].bytes == 4 * GIB + GIB // 2
    states = sum(t.bytes for name, t in terms.items() if name != "process")
    assert states / GIB == pytest.approx(32.0, abs=0.05)  # measured 32.98 GiB (HZ2o-host)


def test_unpinned_buffers_take_their_own_size():
    terms, _ = host(pin=False)
    assert terms["gradients"].bytes == 4 * QWEN_1_5B and "pinned" not in terms["gradients"].formula
    states = sum(t.bytes for name, t in terms.items() if name != "process")
    assert states / GIB == pytest.approx(26.3, abs=0.05)  # measured 27.34 GiB (HZ2on-host, held out)


@pytest.mark.parametrize("release, master_pinned, grads_pinned_without_pin, bit16", [
    ("0.9.5", False, True, False),     # the gradient partition was pinned whatever pin_memory said
    ("0.12.6", False, False, False),   # pin_memory respected (0.10.1); the fp32 partition itself not pinned
    ("0.16.9", True, False, False),    # the fp32 partition pinned too (0.14.1)
    ("0.19.8", True, False, True),     # and a 16-bit copy of the partition (0.17.0)
])
def test_zero2_host_buffers_follow_the_release(release, master_pinned, grads_pinned_without_pin, bit16):
    pinned, _ = host(deepspeed=release)
    assert (pinned["optimizer_states"].bytes == 8 * GIB + 8 * QWEN_1_5B) is master_pinned
    unpinned, _ = host(pin=False, deepspeed=release)
    assert (unpinned["gradients"].bytes == 8 * GIB) is grads_pinned_without_pin
    assert (pinned["offload_buffers"].bytes >= 4 * GIB) is bit16


def test_no_rounding_before_torch_1_11():
    terms, _ = host(torch="1.10.2")
    assert terms["gradients"].bytes == 4 * QWEN_1_5B and "rounded" not in terms["gradients"].formula


def test_unknown_deepspeed_release_takes_the_smallest_layout_and_says_so():
    # no host-RAM error may rest on the 16-bit copy only 0.17.0 and later allocate
    terms, est = host(deepspeed=None)
    assert terms["offload_buffers"].bytes == GIB // 2  # the staging buffer alone
    assert terms["optimizer_states"].bytes == 8 * GIB + 8 * QWEN_1_5B  # pinned as pin_memory says (0.14.1 on)
    assert any("without the 16-bit copy" in a for a in est.assumptions)


def test_zero3_holds_sub_group_gradients_beside_the_flat_partition():
    terms, _ = host(zero=3)
    # sub_group_size 1e9: the partition splits into 1.00B and 0.54B elements, 4 GiB blocks each once pinned; the flat
    # bf16 gradient partition of every parameter (2.88 GiB) is a 4 GiB block
    assert terms["gradients"].bytes == 4 * GIB + 4 * GIB + 4 * GIB
    assert "2 sub-group(s)" in terms["gradients"].formula
    # the fp32 sub-group partitions are plain copies: never rounded
    assert terms["optimizer_states"].bytes == 12 * QWEN_1_5B
    assert "offload_buffers" not in terms


def test_zero3_sub_group_size_from_the_ds_config_sets_the_blocks():
    terms, _ = host(zero=3, extra={"deepspeed.sub_group_size": 200_000_000})
    # more, smaller sub-groups round up less in total
    assert terms["gradients"].bytes < 12 * GIB and "sub-group(s)" in terms["gradients"].formula
    unrounded, _ = host(zero=3, pin=False, extra={"deepspeed.sub_group_size": 200_000_000})
    assert unrounded["gradients"].bytes == 4 * QWEN_1_5B + 2 * QWEN_1_5B


def test_openrlhf_pins_the_optimizer_partition_when_the_launch_says_nothing():
    terms, _ = host(pin=None, framework="openrlhf", deepspeed="0.15.4")
    assert terms["gradients"].bytes == 8 * GIB and "openrlhf sets pin_memory" in terms["gradients"].formula


def test_an_unset_pin_memory_takes_the_release_default():
    old, _ = host(pin=None, deepspeed="0.19.4")
    assert old["gradients"].bytes == 4 * QWEN_1_5B and "0.19.4's default: false" in old["gradients"].formula
    new, _ = host(pin=None, deepspeed="0.19.5")
    assert new["gradients"].bytes == 8 * GIB and "0.19.5's default: true" in new["gradients"].formula
    # an unknown release: the smaller figure, said
    unknown, est = host(pin=None, deepspeed=None)
    assert unknown["gradients"].bytes == 4 * QWEN_1_5B
    assert any("pin_memory unset read as false" in a for a in est.assumptions)


def test_ds_config_offload_optimizer_pin_memory_reaches_the_estimate(tmp_path):
    (job,) = build_written(tmp_path, {
        "ds.json": '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}}}',
        "train.sh": "deepspeed train.py --deepspeed ds.json --model_name_or_path Qwen/Qwen2.5-1.5B --bf16\n",
    }).jobs
    assert job.settings.get("deepspeed.offload_optimizer_pin_memory").value is True


def test_zero2_accumulation_buffers_only_with_several_micro_batches():
    one, _ = host()
    two, _ = host(extra={"batch.grad_accum": 2})
    # one whole-parameter bf16 buffer per parameter, each rounded on its own: 3.62 GiB for Qwen2.5-1.5B's 338
    # tensors (2.88 GiB unrounded); measured 3.66 GiB more host RAM than with one micro batch (row HZ2og-host)
    grown = two["offload_buffers"].bytes - one["offload_buffers"].bytes
    assert grown / GIB == pytest.approx(3.62, abs=0.01)
    assert "gradient_accumulation_steps 2" in two["offload_buffers"].formula
    unknown, _ = host(extra={"batch.grad_accum": None})  # not given: not counted (no error rests on it)
    assert unknown["offload_buffers"].bytes == one["offload_buffers"].bytes
    three, _ = host(zero=3, extra={"batch.grad_accum": 2})  # ZeRO-3 accumulates into its flat partition
    assert three["gradients"].bytes == host(zero=3)[0]["gradients"].bytes


def sleep_host(versions, framework="openrlhf"):
    job = _job_from_options("Qwen/Qwen2.5-1.5B", 1, None, 3, None, None, "bf16", None, 4, 2048, True, True, "sft",
                            {"deepspeed.enable_sleep": True}, framework)
    est = estimate(job, Hardware(gpu="H200", gpus_per_node=1), versions=versions)
    return {t.name.split(":")[0]: t for t in est.nodes[0].persistent}["sleep_states"], est


def test_openrlhf_sleep_parks_each_state_in_its_own_pinned_block():
    # ZeRO-3 sub-groups of 1.00B and 0.54B elements: the fp32 partition and two Adam moments of each, 4 GiB blocks
    # once pinned; from OpenRLHF 0.7.0 with DeepSpeed 0.16.5 also the flat bf16 gradients (2.88 GiB -> 4 GiB)
    term, _ = sleep_host({"openrlhf": "0.9.0", "deepspeed": "0.18.0", "torch": "2.7.1"})
    assert term.bytes == 6 * 4 * GIB + 4 * GIB and "lp_grads" in term.formula
    older_deepspeed, _ = sleep_host({"openrlhf": "0.9.0", "deepspeed": "0.16.4", "torch": "2.7.1"})
    assert older_deepspeed.bytes == 6 * 4 * GIB
    # the release unknown: the states every release parks, said
    unknown, est = sleep_host({"deepspeed": "0.18.0"})
    assert unknown.bytes == 6 * 4 * GIB and any("openrlhf release not given" in a for a in est.assumptions)
    # another framework's call is not known: the states at their own size
    other, _ = sleep_host({"deepspeed": "0.18.0"}, framework="deepspeed")
    assert other.bytes == 12 * QWEN_1_5B


def test_orz_parks_the_fp32_partitions_and_moments_in_pinned_blocks():
    term, est = sleep_host({"deepspeed": "0.18.0"}, framework="orz")
    assert term.bytes == 6 * 4 * GIB and "lp_grads" not in term.formula
    assert not any("release not given" in a for a in est.assumptions)  # one layout for every ORZ commit
