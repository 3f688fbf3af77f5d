"""A node count of 2^32 in a launch, or verl's trainer.nnodes=100000, must not make host RAM placement loop per
node (it never finished before)."""
import json
import time

import pytest

from lintutil import run_cli

LAUNCHES = {
    "verl-100000": ("run_verl.sh", "python3 -m verl.trainer.main_ppo trainer.nnodes=100000 trainer.n_gpus_per_node=8"
                    " actor_rollout_ref.model.path=Qwen/Qwen2.5-7B actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"
                    " actor_rollout_ref.actor.fsdp_config.param_offload=True\n"),
    "verl-2^32": ("run_verl.sh", "python3 -m verl.trainer.main_ppo trainer.nnodes=4294967296 trainer.n_gpus_per_node=8"
                  " actor_rollout_ref.model.path=Qwen/Qwen2.5-7B\n"),
    "deepspeed-2^32": ("run.sh", "deepspeed --num_nodes 4294967296 --num_gpus 8 train.py --deepspeed ds.json\n"),
}


@pytest.mark.parametrize("case", sorted(LAUNCHES))
def test_huge_node_counts_are_estimated_at_once(tmp_path, case):
    name, text = LAUNCHES[case]
    (tmp_path / name).write_text(text)
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 3, '
                                      '"offload_optimizer": {"device": "cpu"}}}\n')
    started = time.monotonic()
    proc = run_cli("--no-cache", "--format", "json", "--gpu", "A100-80GB", "--host-memory", "1TB", ".", cwd=tmp_path)
    assert time.monotonic() - started < 20
    assert proc.returncode in (0, 1), proc.stderr
    assert "F010" not in {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}


def test_placement_is_bounded_per_group():
    from rlhf_lint.memory import estimate

    class Group:  # the one attribute _place reads
        def __init__(self, role):
            self.roles = [type("R", (), {"role": role})()]

    nodes = estimate._place({"actor": (2 ** 32, 8), "vllm": (3, 4)}, [Group("actor"), Group("vllm")], 8)
    assert len(nodes) == estimate.MAX_PLACED_NODES + 2  # the vLLM chunks of 4 share nodes two by two
    assert nodes[0] == {"actor": 8} and nodes[-1] == {"vllm": 4}
