"""M001 gpu-out-of-memory: the estimated peak GPU memory of a role (with the roles sharing its GPUs) exceeds the GPU."""
from __future__ import annotations

import itertools

from rlhf_lint.model import Applicability, Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import (
    PHASE_NOTES, _m001_reports, _assumed, _best_utilization, _breakdown, _checkpointing_off, _estimate, _gib, _need,
    _no_verdict, _replicas_guessed, _shape_guessed, _tail_named, _unmeasured_backend, _unread_config,
    _world_size_guessed,
    _what_if, rollout_label,
)


def _phase(name: str) -> str:
    return f"{name} phase" + (f" ({PHASE_NOTES[name]})" if name in PHASE_NOTES else "")


# what a change costs the run, cheapest first: recomputation (results unchanged: a safe fix), vLLM's cache, a fused
# optimizer (the same update), the numerics of the accumulation, smaller micro batches (more steps), a reference
# streamed from the CPU, ZeRO-3 communication, CPU Adam (slowest)
_COST = {"checkpointing": 1, "vllm_util": 1, "fused": 1, "dtype": 2, "vllm_sleep": 2, "distributed": 2, "micro": 3,
         "ref": 4, "tensor_parallel": 4, "zero3": 5, "pipeline_parallel": 5, "offload": 6}
MAX_TENSOR_PARALLEL = 8  # tensor parallelism stays within a node's NVLink domain
MAX_COMBINED = 3  # changes tried together when none fits alone (at most C(9, 3) = 84 more estimates)


def _candidates(ctx, est, group) -> list[tuple[str, dict, str]]:
    job = ctx.job
    value = job.value
    out: list[tuple[str, dict, str]] = []
    trainable = any(r.trainable for r in group.roles)
    dtype = str(value("precision.param_dtype", "bf16") or "bf16")
    if trainable:
        off = _checkpointing_off(ctx, group)
        if off:
            out.append(("turn on gradient checkpointing" + (f" ({', '.join(off.values())})" if len(off) > 1 or
                        "critic" in off.values() else ""), {key: True for key in off}, "checkpointing"))
        stage = value("zero.stage", 0)
        megatron = value("train.strategy") == "megatron"
        if isinstance(stage, int) and stage < 3 and not megatron:
            out.append(("ZeRO stage 3", {"zero.stage": 3}, "zero3"))
        if value("offload.optimizer") in (None, "none", False):
            out.append(("offload the optimizer to CPU", {"offload.optimizer": "cpu"}, "offload"))
        mb = value("batch.micro_train")
        if isinstance(mb, int) and mb > 1:
            out.append(("micro train batch 1", {"batch.micro_train": 1}, "micro"))
        if str(value("precision.grad_accum_dtype", "")).lower() == "fp32" and dtype in ("bf16", "fp16"):
            out.append((f"accumulate gradients in {dtype}", {"precision.grad_accum_dtype": dtype}, "dtype"))
        if megatron:
            out += _megatron_candidates(value, max(r.gpus for r in group.roles if r.trainable))
        if _copies_adam_state(group):
            # the same update without the step's copy of the second moment (torch >= 2.0)
            out.append(("a fused AdamW (optim adamw_torch_fused: the step copies no Adam state)",
                        {"train.optimizer": "adamw_torch_fused"}, "fused"))
    names = group.names
    if "ref" in names and not value("offload.ref"):
        out.append(("offload the reference model", {"offload.ref": True}, "ref"))
    if "vllm" in names and len(names) > 1:
        if not value("vllm.enable_sleep"):
            out.append(("let vLLM sleep while training", {"vllm.enable_sleep": True}, "vllm_sleep"))
        best = _best_utilization(ctx, est)
        if best is not None:
            out.append((f"{rollout_label(ctx)} gpu_memory_utilization {best:g}", {"vllm.gpu_memory_utilization": best},
                        "vllm_util"))
    return out


def _megatron_candidates(value, world: int) -> list[tuple[str, dict, str]]:
    """Megatron-Core's own levers: full recompute, the distributed optimizer, and the next tensor or pipeline
    parallel size that divides the GPUs."""
    out: list[tuple[str, dict, str]] = []
    if value("megatron.recompute") != "full":
        out.append(("full recompute (recompute_granularity full, uniform, 1 layer)",
                    {"megatron.recompute": "full", "megatron.recompute_method": "uniform",
                     "megatron.recompute_num_layers": 1}, "checkpointing"))
    if value("megatron.distributed_optimizer") is False:
        out.append(("use_distributed_optimizer true", {"megatron.distributed_optimizer": True}, "distributed"))
    sizes = {k: value(f"megatron.{k}") for k in ("tensor_parallel", "pipeline_parallel", "context_parallel")}
    sizes = {k: v if type(v) is int and v > 0 else 1 for k, v in sizes.items()}
    used = sizes["tensor_parallel"] * sizes["pipeline_parallel"] * sizes["context_parallel"]
    tp = sizes["tensor_parallel"] * 2
    if tp <= MAX_TENSOR_PARALLEL and world % (used * 2) == 0:
        out.append((f"tensor_model_parallel_size {tp} with sequence_parallel",
                    {"megatron.tensor_parallel": tp, "megatron.sequence_parallel": True}, "tensor_parallel"))
    if world % (used * 2) == 0:
        pp = sizes["pipeline_parallel"] * 2
        out.append((f"pipeline_model_parallel_size {pp}", {"megatron.pipeline_parallel": pp}, "pipeline_parallel"))
    return out


def _copies_adam_state(group) -> bool:
    """A trained role whose optimizer step copies Adam's second moment (torch's foreach AdamW, or a torch-level Adam
    stepping DeepSpeed's flat partition)."""
    return any(t.name == "optimizer_step" and "sqrt(v)" in t.formula for r in group.roles if r.trainable
               for t in r.terms)


def _cost(kind: str) -> int:
    """What a change costs the run; a combination ("zero3+offload") costs what its parts do."""
    return sum(_COST[part] for part in kind.split("+"))


def _tried(ctx, group, label: str, changes: dict, kind: str):
    est = _what_if(ctx, changes)
    after = est.group_of(group.roles[0].role)
    if after is None:
        return None
    # a change that moves the overflow into host RAM (CPU Adam on a node with too little of it) does not fit
    host_fits = all(node.fits is not False for node in est.nodes)
    return label, group.peak - after.peak, bool(after.fits) and host_fits, changes, kind


def _ranked_changes(ctx, est, group) -> list[tuple[str, int, bool, dict, str]]:
    """(label, bytes saved, fits, changes, kind): the changes that fit first, cheapest first; then the others by
    the memory they save. When no single change fits, the cheapest pairs (then triples) of them that do are the
    ones that fit: a 70B model under ZeRO-2 needs ZeRO-3 and CPU Adam together."""
    tried = [(c, _tried(ctx, group, *c)) for c in _candidates(ctx, est, group)]
    rows = [row for _, row in tried if row is not None]
    useful = [c for c, row in tried if row is not None and row[1] > 0]  # a change saving nothing adds nothing
    for size in range(2, MAX_COMBINED + 1):
        if any(r[2] for r in rows):
            break
        for combo in itertools.combinations(useful, size):
            changes = {key: value for _, part, _ in combo for key, value in part.items()}
            row = _tried(ctx, group, " + ".join(c[0] for c in combo), changes, "+".join(c[2] for c in combo))
            if row is not None and row[2]:
                rows.append(row)
    rows.sort(key=lambda r: (not r[2], _cost(r[4]) if r[2] else 0, -r[1]))
    return [r for r in rows if r[1] > 0]


def _fix(ctx, change):
    if change is None:
        return None
    from rlhf_lint.memory.fixes import setting_fix

    label, _, _, changes, kind = change
    safe = Applicability.SAFE if kind == "checkpointing" else Applicability.UNSAFE
    return setting_fix(ctx.project, ctx.job, changes, label, safe)


# what a stand-in layer shape sizes (the vocabulary, widths and depth), beside the states the parameter count sizes
SHAPE_TERMS = ("activations", "logits", "gathered_params", "allocator_slack", "runtime", "deepspeed_buffers",
               "generate_kv_cache", "generate_forward")
REPLICAS_GUESSED = (" if every GPU holds a full replica (DDP: no DeepSpeed config seen; FSDP from a launcher config "
                    "would shard it)")


@rule("M001", "gpu-out-of-memory", Severity.ERROR, scope="job", when="gpu", fixable=True)
def gpu_out_of_memory(ctx):
    """The estimated peak GPU memory of a role (with the roles sharing its GPUs) exceeds the GPU.

    ## What it does
    Estimates, per role (actor/policy, critic, reference, reward, vLLM engines) and per GPU, the weights, gradients
    (in their accumulation dtype), optimizer states (partitioned by ZeRO stage, or offloaded), activations of one
    micro batch (with or without gradient checkpointing and flash attention), fp32 logits, DeepSpeed buckets and
    the CUDA context. Roles placed on the same GPUs add up phase by phase (generation, experience, training, the
    optimizer step), vLLM
    with the whole reservation its gpu_memory_utilization makes. Sleep modes change what each phase holds: a
    sleeping vLLM keeps only its CUDA context outside generation and the weight sync (the phase where it is woken
    while the policy sends it its weights), a sleeping DeepSpeed engine (OpenRLHF `--deepspeed_enable_sleep`, ORZ
    `colocate_all`) keeps its 16-bit partitions outside its own work and the trained models train one after another.
    Reports the peak phase against the GPU of the
    hardware profile, with the largest terms and the changes that would make it fit, ranked by memory saved.
    verl's FSDP workers are modelled as FSDP (fp32 master parameters, gradients and Adam moments sharded over the
    role's GPUs, gradients freed after the update, offloaded states loaded back for the update, one gathered wrap
    unit at a time), not as ZeRO. Fires only when the overflow happens whatever the sequence lengths; one that
    needs padding-free micro batches or token budgets filled to their bound is M009's warning.
    ms-swift's Megatron-Core launches (`megatron sft|rlhf`) are modelled per rank of their layout: tensor,
    pipeline, context and expert parallel sizes, the distributed optimizer, recompute, optimizer CPU offload; for
    them the changes tried include full recompute and the next tensor or pipeline parallel size.
    verl's Megatron workers are sized the same way, with their parameter and optimizer offload parked between
    phases (the gradient buffer freed); no measured verl run backs them yet, so their overflow is a warning.
    A DeepSpeed or accelerate config the launch names but that is not among the files checked leaves its sharding
    and offload open: the band's low end is the ZeRO-3 reading with CPU offload, so the verdict is at most a warning
    that says to lint the config with the launch.
    Likewise when a model's layer shape is a stand-in (its size read from the name, the vocabulary and widths of
    the nearest catalog model), and when no launch gives the world size (a recipe or script run by a README
    command) and the overflow lies in states ZeRO or FSDP shard: the hardware profile's GPU count is a guess, and
    more GPUs would shard further. A model named only by the end of a path the linter cannot read
    (`model.path=$HOME/models/Qwen3-8B`: Qwen3-8B) is sized, and its verdicts (here and in M002, M005, M007) are
    warnings that say so.

    ## Why it matters
    An OOM after model loading costs the whole start-up (often tens of minutes on many nodes); an OOM after the
    first rollout costs more. The arithmetic is known before launch.

    ## Example
    A 70B actor on 8 x A100-80GB with ZeRO-2 and no offload: the replicated 16-bit weights alone are 140 GB.

    ## Fix
    Apply the suggested change (the fix writes the cheapest one that fits when the launch can express it):
    gradient checkpointing, a fused AdamW (`optim adamw_torch_fused`: its step copies no Adam state), ZeRO-3,
    optimizer offload, a smaller micro batch, a lower vLLM gpu_memory_utilization, or more GPUs. When no single
    change fits, the cheapest pair or triple of them that does is proposed (ZeRO-3 with CPU Adam for a 70B model
    on one node); a change that would overflow the node's host RAM (hardware profile) is not proposed.

    ## References
    https://arxiv.org/abs/1910.02054
    https://arxiv.org/abs/2205.05198
    https://github.com/OpenRLHF/OpenRLHF/issues/392
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/issues/24
    """
    est = _estimate(ctx)
    if _no_verdict(est):
        return
    for group in est.groups:
        if not _m001_reports(group):
            continue  # fits with its whole band, or overflows only at the length bound of micro batches (M009)
        changes = _ranked_changes(ctx, est, group)
        fitting = [c for c in changes if c[2]]
        partial = [c for c in changes if not c[2]]
        advice = ""
        if fitting and "+" in fitting[0][4]:
            advice = "; no single change fits; together these fit: " + "; or ".join(
                f"{c[0]} (-{_gib(c[1])})" for c in fitting[:2])
        elif fitting:
            first = fitting[0]
            advice = f"; cheapest change that fits: {first[0]} (-{_gib(first[1])})"
            if len(fitting) > 1:
                advice += "; also fits with: " + ", ".join(f"{c[0]} (-{_gib(c[1])})" for c in fitting[1:4])
        elif partial:
            advice = "; no single change fits; largest savings: " + ", ".join(
                f"{c[0]} (-{_gib(c[1])})" for c in partial[:4])
        else:  # the step of sharded fp32 states, say: no micro batch, checkpointing or offload lowers it
            advice = (f"; none of the changes tried (checkpointing, ZeRO-3, offload, micro batch, fused AdamW, vLLM) "
                      f"lowers the {_phase(group.peak_phase)}: more GPUs to shard over, or fewer trained parameters")
        unread = _unread_config(ctx)
        if unread is not None:  # its ZeRO stage may be the change suggested: say what to do instead
            advice = (f"; {unread} was not read, so its sharding and offload are open (the band's low end assumes "
                      f"ZeRO-3 with CPU offload): lint it with the launch")
        gpu = est.gpu.name if est.gpu is not None else "the GPU"
        band = f"{_gib(group.low_peak)} to {_gib(max(group.high_peak, group.peak))}"
        guessed_ddp = _replicas_guessed(ctx, group)
        guessed_world = _world_size_guessed(ctx, group) if group.certain_overflow else None
        stand_in = _shape_guessed(est, group)
        if stand_in and group.band_total(group.peak_phase, 0, leave_out=SHAPE_TERMS) > group.gpu_memory:
            stand_in = None  # the states the parameter count sizes overflow alone: no shape could change that
        # an overflow is an error only when it rests on nothing the estimate had to guess
        qualifier = ""
        if guessed_ddp:
            qualifier = REPLICAS_GUESSED
        elif stand_in and group.certain_overflow:
            qualifier = (f" with a stand-in layer shape for {stand_in} (its size read from the name: vocabulary and "
                         f"widths of the nearest catalog model)")
        elif _unmeasured_backend(ctx):
            qualifier = _unmeasured_backend(ctx)
        elif _tail_named(est):
            qualifier = _tail_named(est)
        elif ctx.job.value("topology.layout_guess"):
            qualifier = f" if {ctx.job.value('topology.layout_guess')}"
        elif guessed_world:
            qualifier = (f" on {guessed_world} GPUs (the hardware profile's: no launch gives the world size, and "
                         f"more GPUs shard the states further)")
        certain = group.certain_overflow
        severity = None if certain and not qualifier else Severity.WARNING
        head = (f"{'' if certain else 'tight: '}{_need(group.names)} {_gib(group.peak)} per GPU (band {band}) in the "
                f"{_phase(group.peak_phase)}{qualifier}, {gpu} has {_gib(group.gpu_memory)}"
                + ("" if certain else ": the band straddles the GPU"))
        yield Finding(ctx.job.span, f"{head}: {_breakdown(group)}{advice}{_assumed(est)}",
                      fix=_fix(ctx, fitting[0] if fitting else None), severity=severity)
