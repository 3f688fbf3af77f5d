"""M010 job-cannot-be-scheduled."""
from __future__ import annotations

from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule


def _where(ctx, setting):
    """(path, span) of the token a demand came from; the launch command when it has no token."""
    if setting is not None and setting.span is not None and setting.path:
        return setting.path, setting.span
    return ctx.job.path, ctx.job.span


def _origin(setting) -> str:
    return f" ({setting.origin})" if setting is not None and setting.origin else ""


@rule("M010", "job-cannot-be-scheduled", Severity.ERROR, scope="job")
def job_cannot_be_scheduled(ctx):
    """The launch asks for more GPUs per node or in total than the hardware has, or for GPUs that do not exist.

    ## What it does
    Reads what the launch asks for (`rlhf_lint.frameworks.launchers.launch_topology` and `gpu_demand`; the table of
    launchers is docs/launch-model.md) and compares it with the hardware profile (`gpus-per-node`, `nodes`):
    - processes per node of a launcher (`deepspeed --num_gpus`, `--include localhost:...`, `torchrun
      --nproc_per_node`, `accelerate launch --num_processes / --num_machines`, `srun --ntasks-per-node`) or of verl
      (`trainer.n_gpus_per_node`: one STRICT_PACK placement group per node) above the node's GPUs;
    - a GPU index (`CUDA_VISIBLE_DEVICES`, `--include localhost:4,5,6,7`, `--gpu_ids`) the node does not have;
    - more processes per node than `CUDA_VISIBLE_DEVICES` leaves visible (torchrun, accelerate, the TRL CLI,
      llamafactory-cli; DeepSpeed's runner turns the variable into `--include` instead);
    - nodes above the profile's `nodes`; the GPUs a Ray job holds at once (OpenRLHF / ORZ: each role's
      `num_nodes x num_gpus_per_node`, colocated roles counted once, vLLM engines x tensor parallel size unless
      everything is colocated; a verl recipe whose rollout has a pool of its own: the trainer's GPUs plus
      `rollout.nnodes x rollout.n_gpus_per_node`) above `nodes x gpus-per-node`. Without `nodes` in the profile, a
      Ray job that needs more than one node of GPUs is a warning that says so.
    Values the hardware profile filled (a bare `deepspeed`, `--nproc_per_node gpu`) are not checked against it.

    ## Why it matters
    A Ray job whose placement groups cannot be satisfied waits for resources forever without an error; a launcher
    asking a GPU index the node lacks fails in `torch.cuda.set_device` ("invalid device ordinal") after the cluster
    is allocated, or DeepSpeed's runner refuses the include filter.

    ## Example
    `# rlhf-lint: hardware gpus-per-node=4` and `deepspeed --include localhost:4,5,6,7 train.py`.

    ## Fix
    Ask for the GPUs the nodes have, or correct the hardware profile if it is the one that is wrong.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/v0.16.4/deepspeed/launcher/runner.py (parse_resource_filter, CUDA_VISIBLE_DEVICES)
    https://github.com/pytorch/pytorch/blob/v2.5.1/torch/distributed/run.py (--nproc_per_node gpu/auto)
    https://github.com/volcengine/verl/blob/v0.4.1/verl/single_controller/ray/base.py (STRICT_PACK per node)
    https://github.com/OpenRLHF/OpenRLHF/blob/v0.8.11/openrlhf/cli/train_ppo_ray.py (placement groups per role)
    """
    from rlhf_lint.frameworks.launchers import gpu_demand

    job = ctx.job
    hw = ctx.config.hardware_for(job.hardware)
    per_node_hw, nodes_hw = hw.gpus_per_node, hw.nodes
    d = gpu_demand(job)
    profile = f"the hardware profile has {per_node_hw} GPUs per node" if per_node_hw else ""
    per = d.per_node.value if d.per_node is not None else None
    per = per if isinstance(per, int) and not isinstance(per, bool) else None
    visible = d.visible.value if d.visible is not None else None
    if per is not None and isinstance(visible, int) and not isinstance(visible, bool) and per > visible:
        path, span = _where(ctx, d.per_node)
        vpath, vspan = _where(ctx, d.visible)
        yield Finding(span, f"the launch starts {per} processes per node{_origin(d.per_node)} but "
                            f"CUDA_VISIBLE_DEVICES leaves {visible} GPU(s) visible: the extra ranks fail in "
                            "torch.cuda.set_device", path=path,
                      related=(Related(vpath, vspan, "the visible GPUs are set here"),))
        return
    if not per_node_hw:
        return
    if per is not None and per > per_node_hw:
        path, span = _where(ctx, d.per_node)
        yield Finding(span, f"asks for {per} GPUs per node{_origin(d.per_node)}, {profile}", path=path)
        return
    ids = d.devices.value if d.devices is not None else None
    if isinstance(ids, tuple) and ids and max(ids) >= per_node_hw:
        path, span = _where(ctx, d.devices)
        yield Finding(span, f"names GPU {max(ids)}{_origin(d.devices)}, but {profile} (indices 0-"
                            f"{per_node_hw - 1})", path=path)
        return
    nodes = d.nodes.value if d.nodes is not None else None
    if nodes_hw and isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > nodes_hw:
        path, span = _where(ctx, d.nodes)
        yield Finding(span, f"asks for {nodes} nodes{_origin(d.nodes)}, the hardware profile has {nodes_hw}",
                      path=path)
        return
    if d.ray and d.total:
        have = per_node_hw * (nodes_hw or 1)
        if d.total > have:
            path, span = _where(ctx, d.at)
            how = " + ".join(d.parts)
            if nodes_hw:
                yield Finding(span, f"the Ray job holds {d.total} GPUs at once ({how}), the hardware profile has "
                                    f"{nodes_hw} x {per_node_hw} = {have}: Ray waits for resources forever",
                              path=path)
            else:
                yield Finding(span, f"the Ray job holds {d.total} GPUs at once ({how}), more than one node of "
                                    f"{per_node_hw}: on a cluster of fewer than {-(-d.total // per_node_hw)} such "
                                    "nodes Ray waits for resources forever (declare `nodes` in the hardware "
                                    "profile for a verdict)", path=path, severity=Severity.WARNING)
