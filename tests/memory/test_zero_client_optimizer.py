"""DeepSpeed ZeRO hands the optimizer one flat fp32 tensor per parameter group (the rank's partition under ZeRO-1/2,
a sub-group under ZeRO-3): a torch-level Adam that is not fused copies v of that whole tensor in step(). The HF
Trainer passes its own optimizer unless the ds_config has an optimizer section."""
import json

import pytest

from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.frameworks.deepspeed import settings_from_ds_config
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.readers.json import parse_json

QWEN7 = "Qwen/Qwen2.5-7B"
HW = Hardware(gpu="A100-80GB", gpus_per_node=8)


def _policy(zero=2, framework="hf", versions=None, **extra):
    job = _job_from_options(QWEN7, 8, None, zero, extra.pop("offload", None), None, "bf16", None, 1, 2048, True,
                            True, "sft", extra, framework)
    return estimate(job, HW, versions=versions).role("policy")


def _copies(role):
    return [t for t in role.terms if t.name == "optimizer_step" and "sqrt(v)" in t.formula]


def _partition():
    return -(-resolve_model(QWEN7).param_count // 8)


def test_the_hf_trainer_s_adamw_copies_the_whole_zero2_partition():
    [copy] = _copies(_policy(versions={"transformers": "4.46.0"}))  # its default optim: adamw_torch
    assert copy.bytes == 4 * _partition() and not copy.unsure
    assert "adamw_torch" in copy.formula


def test_zero3_copies_one_sub_group():
    [copy] = _copies(_policy(zero=3, versions={"transformers": "4.46.0"}))
    assert copy.bytes == 4 * min(10**9, _partition())  # DeepSpeed's default sub_group_size
    [small] = _copies(_policy(zero=3, versions={"transformers": "4.46.0"}, **{"deepspeed.sub_group_size": 10**8}))
    assert small.bytes == 4 * 10**8


@pytest.mark.parametrize("extra, framework", [
    ({"deepspeed.optimizer": "AdamW"}, "hf"),  # the ds_config's own optimizer: DeepSpeed's fused Adam
    ({"train.optimizer": "adamw_torch_fused"}, "hf"),
    ({"train.optimizer": "adamw_8bit"}, "hf"),
    ({"offload": "cpu"}, "hf"),  # the step runs on the CPU
    ({}, "openrlhf"),  # builds FusedAdam itself
    ({}, "deepspeed"),
])
def test_no_copy(extra, framework):
    assert not _copies(_policy(framework=framework, versions={"transformers": "4.46.0"}, **extra))


def test_a_plain_deepspeed_launch_says_which_optimizer_it_assumed():
    job = _job_from_options(QWEN7, 8, None, 2, None, None, "bf16", None, 1, 2048, True, True, "sft", {}, "deepspeed")
    est = estimate(job, HW)
    [note] = [a for a in est.assumptions if "no optimizer named" in a]
    assert "fused Adam assumed" in note and "--optimizer adamw_torch" in note
    assert not _copies(est.role("policy"))


def test_a_named_torch_adam_copies_under_any_framework():
    for name in ("adamw_torch", "adamw_hf"):
        assert _copies(_policy(framework="deepspeed", **{"train.optimizer": name}))


def test_an_unknown_default_is_counted_but_not_at_the_low_end():
    [copy] = _copies(_policy())  # neither optim nor the transformers release: it may be adamw_torch_fused
    assert copy.unsure and "may not be allocated" in copy.formula
    # transformers >= 4.54 defaults to the fused AdamW from torch 2.8
    assert not _copies(_policy(versions={"transformers": "4.56.0", "torch": "2.8.0"}))
    assert _copies(_policy(versions={"transformers": "4.56.0", "torch": "2.7.1"}))


def test_an_unsure_copy_and_its_slack_leave_the_low_end_alone():
    def group(**extra):
        job = _job_from_options(QWEN7, 8, None, 2, None, None, "bf16", None, 1, 2048, True, True, "sft", extra, "hf")
        return estimate(job, HW).groups[0]

    unknown, fused = group(), group(**{"train.optimizer": "adamw_torch_fused"})
    assert unknown.phase_total("step") > fused.phase_total("step")
    assert unknown.low_peak == fused.low_peak


def test_ds_config_optimizer_section_and_overlap_comm_are_read():
    doc = parse_json(json.dumps({"optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
                                 "zero_optimization": {"stage": 2, "overlap_comm": True}}))
    values = {s.key: s.value for s in settings_from_ds_config(doc, "ds.json").items}
    assert values["deepspeed.optimizer"] == "AdamW" and values["deepspeed.overlap_comm"] is True
    doc = parse_json(json.dumps({"zero_optimization": {"stage": 2}}))
    values = {s.key: s.value for s in settings_from_ds_config(doc, "ds.json").items}
    assert "deepspeed.optimizer" not in values and "deepspeed.overlap_comm" not in values
    one, two = (_policy(**{"deepspeed.overlap_comm": on}) for on in (False, True))
    assert two.term("deepspeed_buffers") == 2 * one.term("deepspeed_buffers")  # double-buffered IPG bucket


def test_both_step_allocations_keep_their_formulas_in_json():
    from rlhf_lint.cli.estimate import _job_from_options as make

    job = make(QWEN7, 8, None, 2, None, None, "bf16", None, 1, 2048, True, True, "sft",
               {"train.optimizer": "adamw_torch"}, "hf")
    item = estimate(job, HW).as_dict()["roles"][0]
    formula = item["formulas"]["optimizer_step@step"]["formula"]
    assert "fp32 gradient partition" in formula and "sqrt(v)" in formula
    assert item["per_gpu"]["optimizer_step@step"] == 8 * _partition()
