"""SkyPilot task YAML (rlhf_lint.frameworks.skypilot): the `run` script is the launch, read in place; the
accelerators and num_nodes are the hardware it asks for. Task files written for these tests."""
from __future__ import annotations

from lintutil import build_written

from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint

TASK = """\
name: grpo
resources:
  accelerators: {accel}
num_nodes: 1
setup: |
  pip install verl==0.7.0
run: {style}
  python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-32B-Instruct \\
    data.train_batch_size=256 actor_rollout_ref.actor.ppo_mini_batch_size=64 \\
    actor_rollout_ref.rollout.n=5 data.max_prompt_length=1024 data.max_response_length=2048
"""


def _jobs(tmp_path, accel="H100:8", style="|"):
    text = TASK.format(accel=accel, style=style)
    return build_written(tmp_path, {"task.yaml": text}).jobs, text


def test_the_run_script_is_the_launch_and_the_accelerators_its_hardware(tmp_path):
    (job,), text = _jobs(tmp_path)
    assert job.framework == "verl" and job.hardware == {"gpu": "H100", "gpus-per-node": "8", "nodes": "1"}
    assert text[job.span.start:job.span.start + len("python3 -m verl")] == "python3 -m verl"
    path = job.settings.get("model.actor.path")
    assert path.path.endswith("task.yaml") and text[path.span.start:path.span.end] == "Qwen/Qwen2.5-32B-Instruct"
    # with no hardware profile at all, the memory verdict is made on the task's H100s
    result = lint([str(tmp_path)], Config(), Options(select=["M001", "M008", "M012"]))
    assert not any(d.code == "M008" for d in result.diagnostics)


def test_candidate_accelerators_keep_only_what_they_agree_on(tmp_path):
    (job,), _ = _jobs(tmp_path, accel="{H100: 8, A100-80GB: 8}")
    assert job.hardware == {"gpus-per-node": "8", "nodes": "1"}
    assert any("any of them" in a for a in job.assumptions)
    # a name the GPU catalog does not know gives no GPU memory: no verdict (M008), the count still counts
    (tpu,), _ = _jobs(tmp_path / "b", accel="TPU-v5:8")
    assert tpu.hardware["gpus-per-node"] == "8" and any("gpu=TPU-v5" in a for a in tpu.assumptions)
    result = lint([str(tmp_path / "b")], Config(), Options(select=["M008"]))
    assert [d.code for d in result.diagnostics] == ["M008"]


def test_a_folded_block_or_a_file_that_is_no_task_is_not_read(tmp_path):
    jobs, _ = _jobs(tmp_path, style=">")  # `>` joins the lines: the script as written is not what runs
    assert jobs == []
    other = build_written(tmp_path / "c", {"ci.yaml": "run: |\n  deepspeed train.py\n"}).jobs
    assert other == []  # a top-level run with none of a task's other keys


def test_envs_and_skypilots_own_variables_reach_the_run_script(tmp_path):
    text = ("resources:\n  accelerators: A100-80GB:4\nnum_nodes: 2\nenvs:\n  MODEL: Qwen/Qwen2.5-7B-Instruct\n"
            "run: |\n  torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE \\\n"
            "    train.py --deepspeed ds.json --model_name_or_path $MODEL --per_device_train_batch_size 1\n")
    (job,) = build_written(tmp_path, {"task.yaml": text, "ds.json": '{"zero_optimization": {"stage": 3}}\n'}).jobs
    assert job.value("topology.world_size") == 8  # 2 nodes x 4, from the task, not guessed from a profile
    assert not job.settings.get("topology.world_size").filled
    model = job.settings.get("model.policy.path")
    assert model.value == "Qwen/Qwen2.5-7B-Instruct" and text[model.span.start:model.span.end] == "$MODEL"


def test_a_run_block_over_a_scripts_bound_is_left_unread(tmp_path):
    body = "".join(f"  echo step {i}\n" for i in range(6000))  # ~96 KiB of run script
    text = "resources:\n  accelerators: H100:8\nrun: |\n" + body + "  deepspeed train.py --deepspeed ds.json\n"
    assert build_written(tmp_path, {"task.yaml": text}).jobs == []
