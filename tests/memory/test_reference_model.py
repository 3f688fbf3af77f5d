"""Which preference jobs hold a second copy of the model as their reference: not SimPO, ORPO or CPO (no reference),
and not an HF-family LoRA policy whose adapters are switched off for the reference pass."""
import pytest

from lintutil import project_of_texts

from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.estimate import estimate

HW = Hardware(gpu="A100-80GB", gpus_per_node=8)
DS = '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}, "bf16": {"enabled": "auto"}}'


def _roles(est):
    return [r.role for r in est.roles]


@pytest.mark.parametrize("kind, roles", [("dpo", ["policy", "ref"]), ("kto", ["policy", "ref"]),
                                         ("ipo", ["policy", "ref"]), ("simpo", ["policy"]), ("orpo", ["policy"])])
def test_estimate_job_types(kind, roles):
    job = _job_from_options("Qwen/Qwen2.5-7B", 8, None, 3, None, None, "bf16", None, 1, 2048, True, True, kind)
    est = estimate(job, HW)
    assert _roles(est) == roles
    # chosen and rejected run together either way: two rows per pair
    assert est.role("policy").micro_tokens["training"][0] == 2 * 2048


def _estimate(files):
    project = project_of_texts(files)
    [job] = project.jobs
    return estimate(job, project.config.hardware_for(job.hardware))


LF_LAUNCH = "#!/bin/bash\n# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8\nllamafactory-cli train dpo.yaml\n"
LF_RECIPE = ("model_name_or_path: Qwen/Qwen2.5-7B\nstage: dpo\ndo_train: true\nfinetuning_type: {tuning}\n"
             "deepspeed: ds.json\ncutoff_len: 2048\nper_device_train_batch_size: 1\nbf16: true\n{extra}")


@pytest.mark.parametrize("tuning, extra, roles", [
    ("full", "", ["policy", "ref"]),
    ("full", "pref_loss: simpo\n", ["policy"]),
    ("full", "pref_loss: orpo\n", ["policy"]),
    ("full", "pref_loss: ipo\n", ["policy", "ref"]),
    ("lora", "", ["policy"]),  # create_ref_model returns None for LoRA: adapters disabled
    ("lora", "ref_model: Qwen/Qwen2.5-7B-Instruct\n", ["policy", "ref"]),  # a named reference is loaded
])
def test_llamafactory_dpo(tuning, extra, roles):
    est = _estimate({"train.sh": LF_LAUNCH, "dpo.yaml": LF_RECIPE.format(tuning=tuning, extra=extra), "ds.json": DS})
    assert _roles(est) == roles
    if roles == ["policy"]:
        assert any("no reference model" in a or "adapters disabled" in a for a in est.assumptions)


@pytest.mark.parametrize("peft, roles", [("", ["policy", "ref"]), (" --use_peft --lora_r 16", ["policy"])])
def test_trl_dpo_with_and_without_peft(peft, roles):
    launch = ("#!/bin/bash\n# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8\naccelerate launch --num_processes 8 "
              "examples/scripts/dpo.py --model_name_or_path Qwen/Qwen2.5-7B --per_device_train_batch_size 1 "
              f"--max_length 2048 --bf16 --gradient_checkpointing{peft}\n")
    assert _roles(_estimate({"train.sh": launch})) == roles


def test_openrlhf_dpo_with_lora_still_loads_its_reference():
    launch = ("#!/bin/bash\n# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8\ndeepspeed --module "
              "openrlhf.cli.train_dpo --pretrain Qwen/Qwen2.5-7B --zero_stage 3 --bf16 --micro_train_batch_size 1 "
              "--train_batch_size 64 --max_len 2048 --lora_rank 16 --gradient_checkpointing\n")
    assert "ref" in _roles(_estimate({"train.sh": launch}))


@pytest.mark.parametrize("release, roles", [("0.23.0", ["policy"]), ("0.29.0", ["policy", "ref"]),
                                            (None, ["policy", "ref"])])
def test_trl_precompute_ref_log_probs_drops_the_reference_up_to_0_28(release, roles):
    launch = ("#!/bin/bash\n# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8\naccelerate launch --num_processes 8 "
              "examples/scripts/dpo.py --model_name_or_path Qwen/Qwen2.5-7B --per_device_train_batch_size 1 "
              "--max_length 2048 --bf16 --precompute_ref_log_probs\n")
    versions = {"trl": release} if release else None
    project = project_of_texts({"train.sh": launch}, versions)
    [job] = project.jobs
    est = estimate(job, project.config.hardware_for(job.hardware), versions=versions)
    assert _roles(est) == roles
    assert any("precompute_ref_log_probs" in a for a in est.assumptions)
