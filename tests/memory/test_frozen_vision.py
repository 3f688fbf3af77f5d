"""Full tuning of a vision-language model with its vision tower frozen (LLaMA-Factory's freeze_vision_tower and
ms-swift's freeze_vit, both on by default): the tower keeps its 16-bit weights but gets no gradients, no fp32 master
copy and no optimizer states."""
import pytest

from lintutil import project_of_texts

from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.memory.catalog import model_by_id
from rlhf_lint.memory.estimate import estimate

VL = "Qwen/Qwen2.5-VL-7B-Instruct"
HW = Hardware.from_mapping({"gpu": "A100-80GB", "gpus-per-node": 4})
DS = '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}, "bf16": {"enabled": "auto"}}'


def _options(model: str, freeze, zero=3, strategy=None, lora_rank=None):
    job = _job_from_options(model, 4, None, zero, None, None, "bf16", None, 1, 2048, True, True, "sft",
                            {"train.freeze_vision": freeze, "train.strategy": strategy, "train.lora_rank": lora_rank},
                            None)
    return estimate(job, HW).role("policy")


def _bytes(role, name):
    return sum(t.bytes for t in role.terms if t.name == name)


@pytest.mark.parametrize("zero", [2, 3])
def test_the_tower_keeps_its_weights_but_no_gradients_or_states(zero):
    tower = model_by_id(VL).extra_params
    assert tower > 5 * 10**8  # Qwen2.5-VL-7B's vision tower: about 0.68B parameters
    trained, frozen = _options(VL, None, zero), _options(VL, True, zero)
    assert trained.trained_params - frozen.trained_params == tower
    assert _bytes(frozen, "weights") == _bytes(trained, "weights")  # every weight is still held, in bf16
    shards = 4  # ZeRO-2 and -3 both partition the fp32 master and Adam moments over the 4 GPUs
    assert _bytes(trained, "optimizer_states") - _bytes(frozen, "optimizer_states") == pytest.approx(
        12 * tower / shards, rel=1e-3)
    assert _bytes(frozen, "gradients") < _bytes(trained, "gradients")


def test_without_deepspeed_only_the_trained_part_is_upcast():
    trained, frozen = _options(VL, None, 0, "ddp"), _options(VL, True, 0, "ddp")
    tower = model_by_id(VL).extra_params
    # the HF Trainer keeps fp32 weights of what trains (autocast); a frozen tower stays in bf16
    assert _bytes(trained, "weights") - _bytes(frozen, "weights") == pytest.approx(2 * tower, rel=1e-3)


def test_a_text_model_and_lora_are_unchanged():
    for model, rank in (("Qwen/Qwen2.5-7B", None), (VL, 8)):
        off, on = _options(model, None, lora_rank=rank), _options(model, True, lora_rank=rank)
        assert off.trained_params == on.trained_params and off.terms == on.terms, model


RECIPE = (f"model_name_or_path: {VL}\nstage: sft\ndo_train: true\nfinetuning_type: {{tuning}}\ndeepspeed: ds.json\n"
          "template: qwen2_vl\ncutoff_len: 2048\nper_device_train_batch_size: 1\nbf16: true\n{extra}")


@pytest.mark.parametrize("tuning, extra, frozen", [
    ("full", "", True),  # LLaMA-Factory's default
    ("full", "freeze_vision_tower: false\n", False),
    ("lora", "", None),  # LoRA targets leave the tower out anyway: the switch is not read
])
def test_llamafactory_recipe(tuning, extra, frozen):
    launch = "#!/bin/bash\n# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=4\nllamafactory-cli train sft.yaml\n"
    project = project_of_texts({"train.sh": launch, "sft.yaml": RECIPE.format(tuning=tuning, extra=extra), "ds.json": DS})
    [job] = project.jobs
    setting = job.settings.get("train.freeze_vision")
    assert (setting.value if setting else None) is frozen
    if tuning == "full" and not extra:
        assert "freeze_vision_tower" in setting.origin and setting.path == "sft.yaml"
    if extra:
        assert setting.span is not None and setting.path == "sft.yaml"


@pytest.mark.parametrize("flags, frozen", [("", True), (" --freeze_vit false", False)])
def test_swift_full_tuning(flags, frozen):
    launch = (f"# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=4\nNPROC_PER_NODE=4 swift sft --model {VL} "
              f"--train_type full --deepspeed zero3 --max_length 2048 --torch_dtype bfloat16{flags}\n")
    project = project_of_texts({"sft.sh": launch})
    [job] = project.jobs
    assert job.settings.value("train.freeze_vision") is frozen
    role = estimate(job, project.config.hardware_for(job.hardware)).role("policy")
    assert role.trained_params == model_by_id(VL).param_count() - (model_by_id(VL).extra_params if frozen else 0)


def test_verl_actor_freeze_vision_tower(tmp_path):
    from pathlib import Path

    from lintutil import ROOT
    from rlhf_lint.engine.runner import build_project

    text = (Path(ROOT) / "tests" / "fixtures" / "memory" / "M001_fsdp_grpo_good.sh").read_text()
    text = text.replace("Qwen/Qwen2.5-7B-Instruct", VL)
    states = []
    for extra in ("", "    actor_rollout_ref.actor.freeze_vision_tower=True \\\n"):
        launch = tmp_path / f"run{len(states)}.sh"
        launch.write_text(text.replace("    trainer.n_gpus_per_node=8", extra + "    trainer.n_gpus_per_node=8"))
        project, _ = build_project([str(launch)], Config(versions={"verl": "0.7.0"}))
        [job] = [j for j in project.jobs if j.framework == "verl"]
        actor = estimate(job, project.config.hardware_for(job.hardware), versions={"verl": "0.7.0"}).role("actor")
        states.append((job.settings.value("train.freeze_vision"), _bytes(actor, "optimizer_states"),
                       _bytes(actor, "weights")))
    (off, trained_states, weights), (on, frozen_states, frozen_weights) = states
    assert off is False and on is True  # verl's default (off) from 0.6.1, then the launch's override
    assert frozen_weights == weights  # the tower keeps its fp32 shards
    # Adam's two fp32 moments of the tower, sharded over the 8 GPUs, are gone
    assert trained_states - frozen_states == pytest.approx(8 * model_by_id(VL).extra_params // 8, abs=8)
