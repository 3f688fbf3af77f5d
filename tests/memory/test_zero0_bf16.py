"""DeepSpeed without ZeRO in bf16: BF16_Optimizer (fp32 accumulation, the default before 0.17.6) partitions the fp32
master and the optimizer states over the ranks; from 0.17.6 the default bf16 accumulation keeps them on every rank
(FP16_Optimizer's DDP_BFLOAT16 layout)."""
import pytest

from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import estimate

MODEL = "meta-llama/Llama-2-7b-hf"
HW = Hardware(gpu="A100-80GB", gpus_per_node=8)
P = resolve_model(MODEL).param_count


def _group(versions=None, dtype="bf16", accum=None):
    job = _job_from_options(MODEL, 8, None, 0, None, None, dtype, accum, 4, 2048, True, True, "sft",
                            {"train.optimizer": "adamw_torch"}, "hf")
    est = estimate(job, HW, versions=versions)
    return est.groups[0], est.role("policy")


def _sure(role, name):
    return sum(t.bytes for t in role.terms if t.name == name and not t.unsure)


def test_before_0_17_6_bf16_optimizer_partitions_the_master_and_states():
    group, role = _group({"deepspeed": "0.16.9"})
    assert _sure(role, "optimizer_states") == 12 * P // 8
    assert _sure(role, "gradients") == 4 * P  # the fp32 gradient buffer of every parameter
    # the HF Trainer's AdamW copies v of the rank's fp32 partition in step()
    assert any("sqrt(v)" in t.formula and t.bytes == 4 * -(-P // 8) for t in role.terms)
    assert group.fits


def test_from_0_17_6_the_master_and_states_sit_on_every_rank():
    group, role = _group({"deepspeed": "0.17.6"})
    assert _sure(role, "optimizer_states") == 12 * P
    assert _sure(role, "gradients") == 2 * P  # bf16 accumulation
    step = [t for t in role.terms if t.name == "optimizer_step"]
    assert {t.bytes for t in step} == {4 * P}  # the flat fp32 gradient and the sqrt(v) copy of the whole master
    assert group.certain_overflow  # 7B full fine-tune in 8 x 80 GB without ZeRO: every rank holds 12 B x 6.74B


def test_an_unknown_release_is_a_warning_not_an_error():
    group, role = _group()
    old, _ = _group({"deepspeed": "0.16.9"})
    new, _ = _group({"deepspeed": "0.17.6"})
    assert group.peak == new.peak  # the figure is the current release's
    assert group.low_peak <= min(old.low_peak, new.low_peak)
    assert group.tight and not group.certain_overflow


@pytest.mark.parametrize("release", ["0.16.9", "0.17.6"])
def test_a_named_fp32_accumulation_takes_bf16_optimizer(release):
    _, role = _group({"deepspeed": release}, accum="fp32")
    assert _sure(role, "optimizer_states") == 12 * P // 8


def test_fp16_keeps_its_master_on_every_rank_and_flattens_the_gradients_in_step():
    _, role = _group({"deepspeed": "0.16.9"}, dtype="fp16")
    assert _sure(role, "optimizer_states") == 12 * P  # FP16_Optimizer keeps the fp32 master on every rank
    assert _sure(role, "gradients") == 2 * P
    assert sorted(t.bytes for t in role.terms if t.name == "optimizer_step") == [4 * P, 4 * P]
