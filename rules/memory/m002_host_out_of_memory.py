"""M002 host-out-of-memory: the estimated host RAM of a node exceeds the node's memory or its container limit."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import _assumed, _estimate, _gib, _tail_named


@rule("M002", "host-out-of-memory", Severity.ERROR, scope="job", when="host memory")
def host_out_of_memory(ctx):
    """The estimated host RAM of a node exceeds the node's memory or its container limit.

    ## What it does
    Sums per node, over the roles placed there: CPU-offloaded optimizer states (CPU Adam keeps fp32 master
    weights, momentum and variance: 3 x 4 bytes per parameter of each trained model, partitioned over that
    model's ranks), offloaded gradients (fp32; under ZeRO-3 also the flat partition in the accumulation dtype),
    the 16-bit and staging buffers of the DeepSpeed release, offloaded parameters and reference/reward weights,
    vLLM sleep copies, one process baseline per GPU, plus the larger of the model-loading copies and the
    checkpoint-saving copy. Page-locked buffers (`pin_memory`) count as torch's pinned allocator holds them:
    each block rounded up to a power of two. Compares it with `host-memory` and `container-memory` of the hardware profile; for
    jobs whose workers are Ray actors (verl, OpenRLHF's `*_ray` entry points, Open-Reasoner-Zero) with 95% of it,
    where Ray's memory monitor kills an actor (`memory_usage_threshold`).
    Names the CPU Adam figure of each trained model (in GB and GiB) and, when two trained models with offloaded
    optimizers share the node, that their states add up there; when they are on separate nodes, what one node
    holding both would need. Models of one process (OpenRLHF without Ray) count one process baseline per rank and
    load one after another.

    ## Why it matters
    The kernel or the container runtime kills the process (SIGKILL, "Ray worker died") with no Python traceback,
    often after the first training round when the checkpoint is saved.

    ## Example
    70B actor and critic with `--adam_offload` on one node: 2 x 12 B x 70e9 = 1680 GB of Adam states.

    ## Fix
    Spread each model over more nodes (ZeRO partitions the states), place actor and critic on different nodes,
    accumulate gradients in bf16, drop optimizer offload where the GPUs have room, set `pin_memory` false (slower
    transfers, no rounding), or raise the container limit.

    ## References
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    https://github.com/OpenRLHF/OpenRLHF/issues/360
    https://github.com/OpenRLHF/OpenRLHF/issues/171
    https://github.com/pytorch/pytorch/issues/95823
    https://github.com/OpenRLHF/OpenRLHF/issues/1013
    """
    est = _estimate(ctx)
    for node in est.nodes:
        if node.fits is not False:
            continue
        parts: dict[str, int] = {}
        for t in node.persistent + node.transient:
            parts[t.name] = parts.get(t.name, 0) + t.bytes
        top = sorted(((v, k) for k, v in parts.items() if v), reverse=True)[:5]
        detail = ", ".join(f"{k.replace(':', ' of ').replace('_', ' ')} {_gib(v)}" for v, k in top)
        roles = ", ".join(f"{r} x{n}" for r, n in node.ranks.items())
        # host RAM grows with the processes on a node; when no launch says how many, the count is the hardware
        # profile's guess, and so is the verdict
        guessed = not _launch_counts_processes(ctx.job)
        note = "; the processes per node are the hardware profile's, no launch gives them" if guessed else ""
        note += _tail_named(est)
        guessed = guessed or bool(_tail_named(est))
        yield Finding(ctx.job.span,
                      f"node {node.index} ({roles}) needs {_gib(node.total)} host RAM, its {node.limit_name} is "
                      f"{_gib(node.limit)}: {detail}{_cpu_adam_note(est, node)}{note}{_assumed(est)}",
                      severity=Severity.WARNING if guessed else None)


def _launch_counts_processes(job) -> bool:
    """Whether the launch itself (not the hardware profile) says how many processes run per node or in all."""
    from rlhf_lint.settings import ROLES

    keys = ["topology.world_size", "topology.gpus_per_node"] + [f"topology.{r}.gpus_per_node" for r in ROLES]
    for key in keys:
        setting = job.settings.get(key)
        if setting is not None and not setting.filled:
            return True
    return False


def _gb(n: float) -> str:
    return f"{n / 1e9:.0f} GB ({n / 2**30:.1f} GiB)"


def _cpu_adam_note(est, node) -> str:
    """Per trained model, what CPU Adam keeps in host RAM; whether those states add up on this node, or what
    placing the models together would need."""
    if not node.cpu_adam:
        return ""
    whole: dict[str, int] = {}
    for other in est.nodes:
        for role, (_, model_bytes) in other.cpu_adam.items():
            whole[role] = model_bytes
    per_model = []
    for role, (here, model_bytes) in node.cpu_adam.items():
        r = est.role(role)
        k = round(model_bytes / r.params)
        per = "3 x 4 B" if k == 12 else f"{k} B"
        ranks = f"{node.ranks[role]} of its {r.gpus} ranks here" + (f": {_gb(here)}" if here != model_bytes else "")
        per_model.append(f"{role} {per} x {r.params / 1e9:.2f}B = {_gb(model_bytes)}, {ranks}")
    note = "; CPU Adam (fp32 master, momentum, variance) per model: " + "; ".join(per_model)
    if len(node.cpu_adam) > 1:
        names = " and ".join(node.cpu_adam)
        note += (f"; {names} share this node, so their CPU Adam states add up to "
                 f"{_gb(sum(h for h, _ in node.cpu_adam.values()))} here: on separate nodes each carries its own")
    else:
        elsewhere = [role for role in whole if role not in node.cpu_adam]
        if elsewhere:
            names = " and ".join(list(node.cpu_adam) + elsewhere)
            where = "keeps its states on another node" if len(elsewhere) == 1 else "keep theirs on other nodes"
            note += (f"; {' and '.join(elsewhere)} {where}: {names} on one node would need "
                     f"{_gb(sum(whole.values()))} of CPU Adam states there (the states add up)")
    return note
