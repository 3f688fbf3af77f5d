"""A model path under a folder the linter cannot read (`$HOME/models/Qwen2.5-7B-Instruct`) still names its model, in
every reader that takes a model from a launch word (verl's case: tests/frameworks/test_verl.py)."""
import pytest

from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.engine.runner import build_project
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.model import UNKNOWN

LAUNCHES = {
    "openrlhf": "deepspeed --module openrlhf.cli.train_sft --pretrain $HOME/models/Qwen2.5-7B-Instruct "
                "--zero_stage 3 --micro_train_batch_size 1 --max_len 2048 --bf16\n",
    "hf": "torchrun --nproc_per_node 8 -m trl.scripts.sft --model_name_or_path $HOME/models/Qwen2.5-7B-Instruct "
          "--per_device_train_batch_size 1 --max_length 2048 --bf16\n",
    "swift": "NPROC_PER_NODE=8 swift sft --model $MODEL_ROOT/Qwen2.5-7B-Instruct --train_type full --deepspeed zero3\n",
}


@pytest.mark.parametrize("framework", sorted(LAUNCHES))
def test_the_known_end_of_an_unread_path_names_the_model(tmp_path, framework):
    (tmp_path / "run.sh").write_text(LAUNCHES[framework])
    project, _ = build_project([str(tmp_path)], Config())
    (job,) = project.jobs
    path = next(s for s in job.settings.items if s.key.startswith("model.") and s.key.endswith(".path"))
    assert path.value is UNKNOWN and path.tail.endswith("/Qwen2.5-7B-Instruct")
    est = estimate(job, Hardware(gpu="H100-80GB", gpus_per_node=8))
    assert {r.model for r in est.roles} == {"Qwen/Qwen2.5-7B"}
    assert any("'Qwen2.5-7B-Instruct', the end of '..." in a for a in est.assumptions)


def test_a_tail_without_a_folder_names_nothing(tmp_path):
    (tmp_path / "run.sh").write_text("deepspeed --module openrlhf.cli.train_sft --pretrain ${ORG}-7B --bf16\n")
    project, _ = build_project([str(tmp_path)], Config())
    (job,) = project.jobs
    est = estimate(job, Hardware(gpu="H100-80GB", gpus_per_node=8))
    assert not est.roles


def test_a_tail_that_spells_a_hub_id_takes_that_entry(tmp_path):
    (tmp_path / "run.sh").write_text("deepspeed --module openrlhf.cli.train_sft --pretrain "
                                     "$ROOT/models/Qwen/Qwen2.5-7B-Instruct --zero_stage 3 --bf16\n")
    project, _ = build_project([str(tmp_path)], Config())
    (job,) = project.jobs
    est = estimate(job, Hardware(gpu="H100-80GB", gpus_per_node=8))
    # the exact hub id (a catalog variant of Qwen2.5-7B, with its own context length), not a name guess
    assert {r.model for r in est.roles} == {"Qwen/Qwen2.5-7B-Instruct"}
    assert est.models["Qwen/Qwen2.5-7B-Instruct"].how == "catalog, path tail"
