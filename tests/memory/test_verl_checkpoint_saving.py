"""verl writes a checkpoint only when trainer.save_freq > 0 (-1 by default in every release): the host RAM of the
saving copy counts only then (a report of a Ray kill at 96 GB, verl#224, ran with save_freq=-1)."""
from lintutil import build_written


def _host_terms(tmp_path, save_freq: str) -> set[str]:
    from rlhf_lint.engine.config import Hardware, parse_size
    from rlhf_lint.memory.estimate import estimate

    folder = tmp_path / (save_freq or "unset")
    extra = f" trainer.save_freq={save_freq}" if save_freq else ""
    project = build_written(folder, {"run.sh": (
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct "
        "actor_rollout_ref.actor.fsdp_config.param_offload=True trainer.n_gpus_per_node=8 trainer.nnodes=1"
        f"{extra}\n")})
    job = next(j for j in project.jobs if j.framework == "verl")
    est = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8, host_memory=parse_size("1TB")))
    return {t.name for node in est.nodes for t in node.transient}


def test_the_saving_copy_counts_only_when_verl_saves(tmp_path):
    assert not any(name.startswith("saving:") for name in _host_terms(tmp_path, ""))
    assert not any(name.startswith("saving:") for name in _host_terms(tmp_path, "-1"))
    assert "saving:critic" in _host_terms(tmp_path, "20")  # the offloaded actor's shards are in host RAM already
