"""Expandable segments (PYTORCH_CUDA_ALLOC_CONF): the allocator's fragmentation slack, fitted on runs without them,
stays in the figure but leaves the band's low end, so a "does not fit" error never rests on it."""
from lintutil import project_of_texts

from rlhf_lint.memory.estimate import estimate

DS = '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}'
LAUNCH = ("#!/bin/bash\n# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8\n{env}"
          "{prefix}deepspeed --num_gpus 8 train.py --deepspeed ds.json --model_name_or_path Qwen/Qwen2.5-7B "
          "--per_device_train_batch_size 4 --max_seq_length 4096 --bf16 --gradient_checkpointing\n")


def _estimate(env: str, versions=None, prefix: str = ""):
    project = project_of_texts({"train.sh": LAUNCH.format(env=env, prefix=prefix), "ds.json": DS}, versions)
    [job] = project.jobs
    return job, estimate(job, project.config.hardware_for(job.hardware), versions=versions)


def _slack_terms(est):
    return [t for t in est.role("policy").terms if t.name == "allocator_slack"]


def test_the_launch_variable_makes_the_slack_unsure_and_keeps_the_figure():
    job_off, off = _estimate("")
    job_on, on = _estimate("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n")
    assert job_off.settings.get("runtime.expandable_segments") is None
    setting = job_on.settings.get("runtime.expandable_segments")
    assert setting.value is True and setting.span is not None
    assert on.groups[0].peak == off.groups[0].peak  # the nominal figure is the fitted one
    assert on.groups[0].high_peak == off.groups[0].high_peak
    assert on.groups[0].low_peak < off.groups[0].low_peak
    assert all(t.unsure for t in _slack_terms(on)) and _slack_terms(on)
    assert not any(t.unsure for t in _slack_terms(off))
    assert any("expandable segments" in a for a in on.assumptions)


def test_other_allocator_options_and_false_change_nothing():
    _, off = _estimate("")
    for env, prefix in (("", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 "),
                        ("", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False "),
                        ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:true\n", "")):  # only True / False
        job, est = _estimate(env, prefix=prefix)
        assert job.settings.get("runtime.expandable_segments").value is False, (env, prefix)
        assert est.groups[0].low_peak == off.groups[0].low_peak, (env, prefix)


def test_the_device_generic_name_is_read_first():
    job, _ = _estimate("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
                       "export PYTORCH_ALLOC_CONF=expandable_segments:False\n")
    assert job.settings.get("runtime.expandable_segments").value is False


def test_an_unknown_value_changes_nothing():
    _, off = _estimate("")
    job, est = _estimate('export PYTORCH_CUDA_ALLOC_CONF="$ALLOC"\n')
    assert not isinstance(job.settings.get("runtime.expandable_segments").value, bool)
    assert est.groups[0].low_peak == off.groups[0].low_peak


def test_llamafactory_cli_sets_it_for_torchrun_from_0_9_3_unless_optim_torch_is_off():
    recipe = ("model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\ndo_train: true\nfinetuning_type: full\n"
              "deepspeed: ds.json\ncutoff_len: 4096\nper_device_train_batch_size: 4\nbf16: true\n")

    def setting(env: str, release: str):
        launch = f"#!/bin/bash\n{env}FORCE_TORCHRUN=1 NPROC_PER_NODE=8 llamafactory-cli train sft.yaml\n"
        project = project_of_texts({"run.sh": launch, "sft.yaml": recipe, "ds.json": DS}, {"llamafactory": release})
        [job] = project.jobs
        return job.settings.get("runtime.expandable_segments")

    assert setting("", "0.9.4").value is True
    assert setting("", "0.9.3").value is True
    assert setting("", "0.9.2") is None
    assert setting("export OPTIM_TORCH=0\n", "0.9.4").value is False
    # the launcher writes the variable itself: what the script exports does not reach torchrun's processes
    assert setting("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False\n", "0.9.4").value is True


def test_verl_turns_it_on_for_fsdp_training_from_0_6():
    from rlhf_lint.memory.estimate import _expandable_segments

    class Job:
        framework = "verl"

    class Inputs:
        class settings:
            @staticmethod
            def get(key):
                return None

    notes: list[str] = []
    assert _expandable_segments(Job(), Inputs(), "fsdp", {"verl": "0.6.0"}, notes) is True
    assert "verl 0.6.0" in notes[0]
    assert _expandable_segments(Job(), Inputs(), "fsdp2", {"verl": "0.5.0"}, []) is False
    assert _expandable_segments(Job(), Inputs(), "megatron", {"verl": "0.7.0"}, []) is False
    assert _expandable_segments(Job(), Inputs(), "fsdp", {}, []) is False

    class SaysFalse:  # verl sets the allocator itself during training: the launch's variable does not decide
        class settings:
            @staticmethod
            def get(key):
                from rlhf_lint.model import Setting

                return Setting(key, False, "run.sh", None, "export PYTORCH_CUDA_ALLOC_CONF")

    assert _expandable_segments(Job(), SaysFalse(), "fsdp", {"verl": "0.6.1"}, []) is True
