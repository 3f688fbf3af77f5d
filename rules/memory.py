"""M: memory. Each rule reads the memory estimate of a job (rlhf_lint.memory) and names the numbers behind it."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Severity
from rlhf_lint.engine.registry import rule

MEMORY_TERMS = ("weights", "gradients", "optimizer_states", "activations", "logits", "deepspeed_buffers",
                "gathered_params", "vllm_reservation", "cuda_graphs", "runtime")


# -- shared helpers (cached per job: several rules read the same estimate) ----------------------------------------
def _hardware(ctx):
    return ctx.config.hardware_for(ctx.job.hardware)


def _reader(ctx):
    """config.json of a local model directory, when that file is among the checked files (read as data)."""
    def read(reference: str):
        found = ctx.project.resolve(ctx.job.path, reference.rstrip("/") + "/config.json")
        return None if found is None else found.text
    return read


def _estimate(ctx, job=None):
    from rlhf_lint.memory.estimate import estimate

    job = job or ctx.job
    cache = ctx.project.__dict__.setdefault("_memory_estimates", {})
    key = id(job)
    if key not in cache:
        cache[key] = (job, estimate(job, _hardware(ctx), _reader(ctx), ctx.config.versions))
    return cache[key][1]


def _what_if(ctx, changes: dict):
    from rlhf_lint.memory.estimate import estimate, with_settings

    return estimate(with_settings(ctx.job, changes), _hardware(ctx), _reader(ctx), ctx.config.versions)


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


PHASE_NOTES = {"weight-sync": "vLLM woken while the policy sends it its weights, at start-up and after every update"}


def _phase(name: str) -> str:
    return f"{name} phase" + (f" ({PHASE_NOTES[name]})" if name in PHASE_NOTES else "")


def _phase_note(name: str) -> str:
    return f": {PHASE_NOTES[name]}" if name in PHASE_NOTES else ""


def _breakdown(group) -> str:
    parts: dict[str, int] = {}
    for role, term in group.phases[group.peak_phase]:
        label = term.name if len(group.roles) == 1 else f"{role} {term.name}"
        parts[label] = parts.get(label, 0) + term.bytes
    top = sorted(((v, k) for k, v in parts.items() if v), reverse=True)[:5]
    return ", ".join(f"{k.replace('_', ' ')} {_gib(v)}" for v, k in top)


def _assumed(est) -> str:
    guessed = [r.note for r in est.models.values() if r.guessed and r.note]
    return f" (assumed: {'; '.join(guessed)})" if guessed else ""


def _span_of(ctx, key: str):
    """Where a setting is written in the launch file, else the launch command itself."""
    setting = ctx.job.settings.get(key)
    if setting is not None and setting.span is not None and setting.path == ctx.job.path:
        return setting.span
    return ctx.job.span


def _candidates(ctx, est, group) -> list[tuple[str, dict]]:
    job = ctx.job
    value = job.value
    out: list[tuple[str, dict]] = []
    trainable = any(r.trainable for r in group.roles)
    dtype = str(value("precision.param_dtype", "bf16") or "bf16")
    if trainable:
        off = _checkpointing_off(ctx, group)
        if off:
            out.append(("turn on gradient checkpointing" + (f" ({', '.join(off.values())})" if len(off) > 1 or
                        "critic" in off.values() else ""), {key: True for key in off}))
        stage = value("zero.stage", 0)
        if isinstance(stage, int) and stage < 3:
            out.append(("ZeRO stage 3", {"zero.stage": 3}))
        if value("offload.optimizer") in (None, "none", False):
            out.append(("offload the optimizer to CPU", {"offload.optimizer": "cpu"}))
        mb = value("batch.micro_train")
        if isinstance(mb, int) and mb > 1:
            out.append(("micro train batch 1", {"batch.micro_train": 1}))
        if str(value("precision.grad_accum_dtype", "")).lower() == "fp32" and dtype in ("bf16", "fp16"):
            out.append((f"accumulate gradients in {dtype}", {"precision.grad_accum_dtype": dtype}))
    names = group.names
    if "ref" in names and not value("offload.ref"):
        out.append(("offload the reference model", {"offload.ref": True}))
    if "vllm" in names and len(names) > 1:
        if not value("vllm.enable_sleep"):
            out.append(("let vLLM sleep while training", {"vllm.enable_sleep": True}))
        best = _best_utilization(ctx, est)
        if best is not None:
            out.append((f"vLLM gpu_memory_utilization {best:g}", {"vllm.gpu_memory_utilization": best}))
    return out


def _checkpointing_off(ctx, group) -> dict[str, str]:
    """{setting key: role} for the trained roles of the group that run without gradient checkpointing; a role with
    its own key (verl's critic.model.enable_gradient_checkpointing) is read there, the others share the job's."""
    off: dict[str, str] = {}
    for r in group.roles:
        if not r.trainable:
            continue
        own = f"train.{r.role}.gradient_checkpointing"
        key = own if ctx.job.settings.get(own) is not None else "train.gradient_checkpointing"
        if not ctx.job.value(key):
            off.setdefault(key, r.role)
    return off


def _ranked_changes(ctx, est, group) -> list[tuple[str, int, bool]]:
    lead = group.roles[0].role
    rows = []
    for label, changes in _candidates(ctx, est, group):
        after = _what_if(ctx, changes).group_of(lead)
        if after is None:
            continue
        rows.append((label, group.peak - after.peak, bool(after.fits)))
    rows.sort(key=lambda r: (not r[2], -r[1]))
    return [r for r in rows if r[1] > 0]


def _vllm_phases(group) -> list[str]:
    """The phases in which vLLM's reservation is on the GPU: generation, and every phase when it does not sleep."""
    return [p for p, items in group.phases.items()
            if any(role == "vllm" and t.name == "vllm_reservation" for role, t in items)]


def _vllm_overflow(group) -> str | None:
    """The largest phase that holds vLLM's reservation and does not fit, while what the other roles hold in it
    would fit alone: the overflow is the reservation's to fix. Overflows that need the length-dependent terms are
    M009's, those the other roles cause by themselves M001's."""
    if group.gpu_memory is None:
        return None

    def others(phase: str) -> int:
        return sum(t.bytes for role, t in group.phases[phase] if role != "vllm" and not t.at_length_bound)

    over = [p for p in _vllm_phases(group)
            if group.floor_total(p) > group.gpu_memory and others(p) <= group.gpu_memory]
    return max(over, key=group.phase_total) if over else None


def _best_utilization(ctx, est) -> float | None:
    """The highest gpu_memory_utilization (in steps of 0.05) at which every phase that holds vLLM's reservation
    fits (length-dependent terms at their bound included) and the KV cache still holds one full-length sequence.
    Phases without vLLM (training while it sleeps) do not depend on it and are left to M001/M009."""
    group = est.group_of("vllm")
    if group is None or group.gpu_memory is None:
        return None
    util = 0.95
    while util >= 0.099:
        util = round(util, 2)
        trial = _what_if(ctx, {"vllm.gpu_memory_utilization": util})
        g, v = trial.group_of("vllm"), trial.role("vllm")
        if (g is not None and all(g.phase_total(p) <= g.gpu_memory for p in _vllm_phases(g)) and v is not None
                and (v.kv.get("tokens") or 0) >= v.kv.get("one_sequence", 0)):
            return util
        util -= 0.05
    return None


def _no_verdict(est) -> bool:
    return not est.hardware_known or est.unmodelled is not None


# -- rules ----------------------------------------------------------------------------------------------------------
@rule("M001", "gpu-out-of-memory", Severity.ERROR, scope="job")
def gpu_out_of_memory(ctx):
    """The estimated peak GPU memory of a role (with the roles sharing its GPUs) exceeds the GPU.

    ## What it does
    Estimates, per role (actor/policy, critic, reference, reward, vLLM engines) and per GPU, the weights, gradients
    (in their accumulation dtype), optimizer states (partitioned by ZeRO stage, or offloaded), activations of one
    micro batch (with or without gradient checkpointing and flash attention), fp32 logits, DeepSpeed buckets and
    the CUDA context. Roles placed on the same GPUs add up phase by phase (generation, experience, training), vLLM
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
    No verdict (here and in M004-M007) for a training backend whose sharding the estimate does not model: verl's
    Megatron backend (tensor/pipeline parallelism, distributed optimizer).

    ## Why it matters
    An OOM after model loading costs the whole start-up (often tens of minutes on many nodes); an OOM after the
    first rollout costs more. The arithmetic is known before launch.

    ## Example
    A 70B actor on 8 x A100-80GB with ZeRO-2 and no offload: the replicated 16-bit weights alone are 140 GB.

    ## Fix
    Apply the suggested change: gradient checkpointing, ZeRO-3, optimizer offload, a smaller micro batch, a lower
    vLLM gpu_memory_utilization, or more GPUs. M004, M005 and M006 carry the automatic fixes.

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
        if group.fits is not False or not group.certain_overflow:
            continue  # fits, or overflows only at the length bound of unpadded micro batches (M009)
        who = " + ".join(group.names)
        changes = _ranked_changes(ctx, est, group)
        fitting = [f"{label} (-{_gib(saved)})" for label, saved, fits in changes if fits]
        partial = [f"{label} (-{_gib(saved)})" for label, saved, fits in changes if not fits]
        advice = ""
        if fitting:
            advice = "; fits with: " + ", ".join(fitting[:4])
        elif partial:
            advice = "; no single change fits; largest savings: " + ", ".join(partial[:4])
        gpu = est.gpu.name if est.gpu is not None else "the GPU"
        yield Finding(ctx.job.span,
                      f"{who} need {_gib(group.peak)} per GPU in the {_phase(group.peak_phase)}, {gpu} has "
                      f"{_gib(group.gpu_memory)}: {_breakdown(group)}{advice}{_assumed(est)}")


@rule("M002", "host-out-of-memory", Severity.ERROR, scope="job")
def host_out_of_memory(ctx):
    """The estimated host RAM of a node exceeds the node's memory or its container limit.

    ## What it does
    Sums per node, over the roles placed there: CPU-offloaded optimizer states (CPU Adam keeps fp32 master
    weights, momentum and variance: 3 x 4 bytes per parameter of each trained model, partitioned over that
    model's ranks), offloaded gradients in their accumulation dtype, offloaded parameters and reference/reward
    weights, vLLM sleep copies, one process baseline per GPU, plus the larger of the model-loading copies and the
    checkpoint-saving copy. Compares it with `host-memory` and `container-memory` of the hardware profile.
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
    accumulate gradients in bf16, drop optimizer offload where the GPUs have room, or raise the container limit.

    ## References
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    https://github.com/OpenRLHF/OpenRLHF/issues/360
    https://github.com/OpenRLHF/OpenRLHF/issues/171
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
        yield Finding(ctx.job.span,
                      f"node {node.index} ({roles}) needs {_gib(node.total)} host RAM, its {node.limit_name} is "
                      f"{_gib(node.limit)}: {detail}{_cpu_adam_note(est, node)}{_assumed(est)}")


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


@rule("M003", "grad-accum-dtype", Severity.WARNING, scope="job", fixable=True)
def grad_accum_dtype(ctx):
    """A bf16/fp16 job accumulates gradients in fp32, doubling the gradient memory.

    ## What it does
    Reports a launch whose gradient accumulation dtype is fp32 (written, or the default of the framework release)
    while the model trains in bf16 or fp16, with the memory that costs per GPU or per node (where the gradients
    live in host RAM under optimizer offload). A launch that names a ds_config file is left to the DeepSpeed rule
    on that file.

    ## Why it matters
    Maintainers of OpenRLHF answer host-RAM kills under `--adam_offload` with `--grad_accum_dtype bf16`; older
    OpenRLHF releases accumulated in fp32 by default.

    ## Example
    `--bf16 --adam_offload --zero_stage 2` on OpenRLHF 0.5: 4 bytes per parameter of gradients in host RAM.

    ## Fix
    Adds `--grad_accum_dtype bf16` (or sets the field that carries it). Unsafe: accumulation in 16 bits changes
    numerics slightly.

    ## References
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/engine.py
    """
    job = ctx.job
    setting = job.settings.get("precision.grad_accum_dtype")
    dtype = str(job.value("precision.param_dtype", "") or "").lower()
    if setting is None or str(setting.value).lower() != "fp32" or dtype not in ("bf16", "fp16"):
        return
    if job.settings.get("deepspeed.config_path") is not None:
        return  # the D rule on the ds_config file reports it
    from rlhf_lint.memory.fixes import setting_fix

    est = _estimate(ctx)
    after = _what_if(ctx, {"precision.grad_accum_dtype": dtype})
    saved_gpu = max((g.peak - a.peak for g, a in zip(est.groups, after.groups)), default=0)
    saved_host = max((n.total - m.total for n, m in zip(est.nodes, after.nodes)), default=0)
    cost = []
    if saved_gpu > 0:
        cost.append(f"{_gib(saved_gpu)} per GPU")
    if saved_host > 0:
        cost.append(f"{_gib(saved_host)} of host RAM per node")
    cost_text = " (" + ", ".join(cost) + ")" if cost else ""
    origin = f" [{setting.origin}]" if setting.origin else ""
    fix = setting_fix(ctx.project, job, {"precision.grad_accum_dtype": dtype},
                      f"accumulate gradients in {dtype}", Applicability.UNSAFE)
    yield Finding(setting.span if setting.path == job.path and setting.span else job.span,
                  f"gradients accumulate in fp32 while the model trains in {dtype}{origin}: accumulating in "
                  f"{dtype} saves{cost_text or ' memory'}", fix=fix)


@rule("M004", "zero-stage-too-low", Severity.ERROR, scope="job", fixable=True)
def zero_stage_too_low(ctx):
    """The job does not fit at its ZeRO stage but would with ZeRO-3.

    ## What it does
    Re-runs the estimate with `zero.stage = 3` for every GPU group that does not fit; reports the stage when ZeRO-3
    alone makes it fit, with the per-GPU figures before and after.

    ## Why it matters
    ZeRO-1/2 replicate the 16-bit weights on every GPU; ZeRO-3 partitions them too, which is what large actors
    need (field case: 13B PPO on 8 x A100 killed at ZeRO-2).

    ## Example
    `--zero_stage 2` for a 13B actor on 4 GPUs next to a 13B critic.

    ## Fix
    Sets the stage to 3 (unsafe: communication volume grows by half, checkpoints change layout).

    ## References
    https://arxiv.org/abs/1910.02054
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    """
    stage = ctx.job.value("zero.stage")
    est = _estimate(ctx)
    if _no_verdict(est) or not isinstance(stage, int) or stage >= 3:
        return
    after = _what_if(ctx, {"zero.stage": 3})
    for group in est.groups:
        if group.fits is not False or not group.certain_overflow or not any(r.trainable for r in group.roles):
            continue
        new = after.group_of(group.roles[0].role)
        if new is None or not new.fits:
            continue
        from rlhf_lint.memory.fixes import setting_fix

        span = _span_of(ctx, "zero.stage")
        yield Finding(span, f"ZeRO-{stage}: {' + '.join(group.names)} need {_gib(group.peak)} per GPU, "
                            f"{_gib(group.gpu_memory)} available; with ZeRO-3 {_gib(new.peak)}",
                      fix=setting_fix(ctx.project, ctx.job, {"zero.stage": 3}, "use ZeRO stage 3",
                                      Applicability.UNSAFE))


@rule("M005", "vllm-gpu-memory-utilization", Severity.ERROR, scope="job", fixable=True)
def vllm_gpu_memory_utilization(ctx):
    """The gpu_memory_utilization of a colocated vLLM reserves more of a shared GPU than the training roles leave free.

    ## What it does
    With vLLM colocated with training models (OpenRLHF `--colocate_all_models`, ORZ `colocate_all`, verl's hybrid
    engine), vLLM reserves that fraction of the whole GPU (current vLLM) for weights and KV cache while the other
    roles' weights and states stay on the same GPU. Fires only when a phase that holds the reservation overflows:
    generation; the weight sync, where a sleeping vLLM is woken while the policy sends it its weights (ORZ
    `colocate_all` backloads the whole engine beside the loaded policy at start-up and after every update; OpenRLHF
    up to 0.9.1 wakes it whole, later releases wake only its weights); or every phase when vLLM does not sleep
    (verl `free_cache_engine=False`, no `--vllm_enable_sleep`). A training phase that overflows while vLLM sleeps is
    M001's alone, since no utilisation changes it. Reports the sum and the highest utilisation (in steps of 0.05) at
    which every phase holding the reservation fits and the KV cache still holds one full-length sequence.

    ## Why it matters
    The job dies at start-up, when the engines are woken for the first weight sync: "GPU 0 has 278 MiB free, PyTorch
    already holds 66.85 GiB" (a 1.5B ORZ PPO on 4 x A100-80GB with the default 0.85, its policy's Adam states on the
    GPU beside the engine).

    ## Example
    ORZ `gpu_memory_utilization: float = 0.85` with `colocate_all = True` on 80 GB GPUs.

    ## Fix
    Sets the highest utilisation that fits (safe: results do not change, only the KV cache size).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/issues/24
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/issues/64
    https://github.com/OpenRLHF/OpenRLHF/pull/808
    https://verl.readthedocs.io/en/latest/perf/perf_tuning.html
    """
    est = _estimate(ctx)
    group = est.group_of("vllm")
    if _no_verdict(est) or group is None or len(group.roles) < 2:
        return
    phase = _vllm_overflow(group)
    if phase is None:
        return  # the reservation fits beside what stays; a phase without vLLM that overflows is M001's
    vllm = est.role("vllm")
    util = vllm.kv.get("gpu_memory_utilization")
    best = _best_utilization(ctx, est)
    from rlhf_lint.memory.fixes import setting_fix

    span = _span_of(ctx, "vllm.gpu_memory_utilization")
    others = sum(t.bytes for role, t in group.phases[phase] if role != "vllm")
    holders = [n for n in group.names if n != "vllm" and any(role == n for role, _ in group.phases[phase])]
    message = (f"vLLM reserves {util:g} x {_gib(group.gpu_memory)} = {_gib(vllm.term('vllm_reservation'))} per GPU "
               f"while {', '.join(holders) or 'the other roles'} hold {_gib(others)} on the same GPUs "
               f"({phase} phase total {_gib(group.phase_total(phase))}{_phase_note(phase)})")
    if best is None:
        yield Finding(span, message + "; no utilisation fits with room for one sequence's KV cache")
        return
    yield Finding(span, message + f"; {best:g} fits",
                  fix=setting_fix(ctx.project, ctx.job, {"vllm.gpu_memory_utilization": best},
                                  f"set gpu_memory_utilization to {best:g}", Applicability.SAFE))


@rule("M006", "gradient-checkpointing-off", Severity.ERROR, scope="job", fixable=True)
def gradient_checkpointing_off(ctx):
    """Activations are what does not fit, and gradient checkpointing is off.

    ## What it does
    For a GPU group that does not fit, re-runs the estimate with gradient checkpointing on; reports when that
    alone makes it fit, with the activation memory before and after.

    ## Why it matters
    Without checkpointing every layer keeps about 34 x sequence x batch x hidden bytes of activations; with it,
    only the layer inputs (2 x s x b x h) stay, at the price of one more forward pass.

    ## Example
    An 8B actor, micro batch 4, 4096 tokens, no `--gradient_checkpointing` on 80 GB GPUs.

    ## Fix
    Turns gradient checkpointing on (safe: results do not change).

    ## References
    https://arxiv.org/abs/2205.05198
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    """
    est = _estimate(ctx)
    if _no_verdict(est):
        return
    for group in est.groups:
        if group.fits is not False or not group.certain_overflow or not any(r.trainable for r in group.roles):
            continue
        off = _checkpointing_off(ctx, group)
        if not off:
            continue
        changes = {key: True for key in off}
        new = _what_if(ctx, changes).group_of(group.roles[0].role)
        if new is None or not new.fits:
            continue
        roles = list(off.values())
        if "train.gradient_checkpointing" in off:  # the job-wide key covers every trained role without its own
            roles = [r.role for r in group.roles if r.trainable
                     and ctx.job.settings.get(f"train.{r.role}.gradient_checkpointing") is None]
            roles += [role for key, role in off.items() if key != "train.gradient_checkpointing"]
        training = lambda g, name: max((sum(t.bytes for t in r.terms if t.name == "activations" and not t.phases)
                                        for r in g.roles if r.role == name), default=0)
        before_act = sum(training(group, name) for name in roles)
        after_act = sum(training(new, name) for name in roles)
        span = ctx.job.span
        if list(off) == ["train.critic.gradient_checkpointing"]:
            span = _span_of(ctx, "train.critic.gradient_checkpointing")  # only the critic's own key changes
        from rlhf_lint.memory.fixes import setting_fix

        yield Finding(span,
                      f"activations of {' + '.join(roles)} take "
                      f"{_gib(before_act)} per GPU without gradient checkpointing ({_gib(after_act)} with it): "
                      f"{_gib(group.peak)} needed, {_gib(group.gpu_memory)} available, {_gib(new.peak)} with it",
                      fix=setting_fix(ctx.project, ctx.job, changes, "turn on gradient checkpointing",
                                      Applicability.SAFE))


@rule("M007", "vllm-kv-cache-too-small", Severity.ERROR, scope="job")
def vllm_kv_cache_too_small(ctx):
    """The KV cache of vLLM cannot hold one sequence of the configured maximum length.

    ## What it does
    Computes what is left of vLLM's reservation for the KV cache after the weights of one tensor-parallel shard and
    the profiling peak, and the KV bytes per token (2 x layers x KV heads per rank x head size x 2 bytes). Reports
    when the cache holds fewer tokens than prompt + generation length, and says how many sequences fit otherwise.

    ## Why it matters
    vLLM refuses to start: "The model's max seq len is larger than the maximum number of tokens that can be stored
    in KV cache" - after the weights are loaded.

    ## Example
    A 70B model with tensor parallel 2 on 80 GB GPUs at gpu_memory_utilization 0.5.

    ## Fix
    Raise gpu_memory_utilization (if the GPU is not shared), raise tensor parallelism, or shorten the sequences.

    ## References
    https://github.com/vllm-project/vllm/issues/2418
    https://github.com/OpenRLHF/OpenRLHF/issues/336
    """
    est = _estimate(ctx)
    vllm = est.role("vllm")
    if _no_verdict(est) or vllm is None or vllm.kv.get("kv_bytes") is None:
        return
    kv = vllm.kv
    if kv["tokens"] >= kv["one_sequence"]:
        return
    span = _span_of(ctx, "vllm.gpu_memory_utilization")
    if kv["kv_bytes"] <= 0:
        what = (f"the weights ({_gib(kv['weights_per_gpu'])} per GPU at tensor parallel {kv['tensor_parallel']}) "
                f"and the profiling peak ({_gib(kv['profile_peak'])}) already fill the reservation of "
                f"{_gib(vllm.term('vllm_reservation'))}")
    else:
        what = (f"{_gib(kv['kv_bytes'])} of KV cache holds {kv['tokens']} tokens at {kv['bytes_per_token']} B per "
                f"token")
    yield Finding(span, f"vLLM cannot hold one {kv['one_sequence']}-token sequence: {what}{_assumed(est)}")


@rule("M008", "no-hardware-profile", Severity.INFO, scope="job")
def no_hardware_profile(ctx):
    """No GPU is declared, so the memory rules give no verdict; the estimate is shown for information.

    ## What it does
    When neither the configuration (`gpu`, `gpu-memory`), the command line (`--gpu`, `--gpu-memory`) nor a
    `# rlhf-lint: hardware gpu=...` comment in the script names the GPU, reports the estimated per-GPU peak of
    each group of roles and the assumptions it rests on, instead of a verdict. An ORZ config evaluated once per
    environment-flag scenario (`DEBUG_MODE`) names the scenario of each figure, or reports once when every scenario
    gives the same figures.

    ## Why it matters
    A memory verdict against a guessed GPU would be a guess; the figures still help to size the job.

    ## Example
    `rlhf-lint train_ppo.sh` without hardware: "actor needs 23.5 GiB per GPU ...".

    ## Fix
    Declare the hardware: `rlhf-lint --gpu A100-80GB --gpus-per-node 8 --host-memory 1TB`, or in the script
    `# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 host-memory=1TB`.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/master/docs/code-docs/source/memory.rst
    """
    est = _estimate(ctx)
    if est.hardware_known or not est.groups:
        return

    def peaks(est) -> str:
        return "; ".join(f"{' + '.join(g.names)} {_gib(g.peak)}" for g in est.groups if g.peak) + _assumed(est)

    text = peaks(est)
    where = ""
    scenario = getattr(ctx.job, "scenario", "")
    if scenario:
        # one job per environment-flag scenario of the same config (ORZ's DEBUG_MODE): name it, or report once
        # when every scenario gives the same figures
        siblings = [j for j in ctx.project.jobs if j.path == ctx.job.path and j.span == ctx.job.span
                    and getattr(j, "scenario", "")]
        if all(peaks(_estimate(ctx, j)) == text for j in siblings):
            if siblings[0] is not ctx.job:
                return
            where = f" (the same in every scenario: {'; '.join(j.scenario for j in siblings)})"
        else:
            where = f" with {scenario}"
    yield Finding(ctx.job.span, f"no GPU in the hardware profile, so no memory verdict; estimated peak per "
                                f"GPU{where}: {text}")


_BUDGET_KEYS = ("batch.max_tokens_per_gpu", "batch.actor.forward_max_tokens_per_gpu",
                "batch.ref.forward_max_tokens_per_gpu", "batch.critic.max_tokens_per_gpu",
                "batch.critic.forward_max_tokens_per_gpu")
_DYNAMIC_KEYS = ("batch.dynamic", "batch.actor.forward_dynamic", "batch.ref.forward_dynamic", "batch.critic.dynamic",
                 "batch.critic.forward_dynamic")


def _token_budget(ctx, group, low: int, high: int) -> int | None:
    """The largest per-GPU token budget (a multiple of 1024 between one sequence and the length bound) at which the
    group fits when every micro batch is packed to that budget (verl's use_dynamic_bsz)."""
    def fits(tokens: int) -> bool:
        changes = {k: True for k in _DYNAMIC_KEYS} | {k: tokens for k in _BUDGET_KEYS}
        after = _what_if(ctx, changes).group_of(group.roles[0].role)
        return after is not None and bool(after.fits)

    lo, hi = -(-low // 1024), high // 1024
    if hi < lo or not fits(lo * 1024):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid * 1024):
            lo = mid
        else:
            hi = mid - 1
    return lo * 1024


@rule("M009", "gpu-oom-at-length-bound", Severity.WARNING, scope="job")
def gpu_oom_at_length_bound(ctx):
    """The job fits only while its micro batches hold fewer tokens than their configured bound.

    ## What it does
    With padding removed (verl `use_remove_padding`), a micro batch of `micro` sequences holds anything up to
    `micro x (max_prompt_length + max_response_length)` tokens, and a token budget (`use_dynamic_bsz`,
    `ppo_max_token_len_per_gpu`) is filled only when the mini batch has that many real tokens: activations and
    logits depend on how long the sequences turn out. When the GPU group fits without those terms but not with
    them at their bound, this rule reports the phase, both figures, and the largest per-GPU token budget (multiple
    of 1024, at least one full sequence) at which every micro batch fits. M001 keeps the overflows that happen
    whatever the lengths (model states, gathered units, padded micro batches).

    ## Why it matters
    The job runs while the rollouts are short and dies when the policy learns to answer at length - typically hours
    into a GRPO run on reasoning data (verl issue 2186: OOM in the FSDP backward on long-reasoning GRPO).

    ## Example
    `ppo_micro_batch_size_per_gpu=16` with 1024 + 1024 tokens for a 7B actor on 2 x 80 GB with parameter and
    optimizer offload: the states loaded back for the update take 57 GiB, 32768 tokens of activations and logits
    another 19 GiB.

    ## Fix
    Bound the tokens instead of the sequences: `actor_rollout_ref.actor.use_dynamic_bsz=True` with
    `ppo_max_token_len_per_gpu` (and the log-prob and critic budgets) at the figure given, or lower the micro batch.

    ## References
    https://verl.readthedocs.io/en/latest/perf/perf_tuning.html
    https://github.com/volcengine/verl/issues/2186
    https://github.com/volcengine/verl/blob/v0.7.0/verl/utils/seqlen_balancing.py
    """
    est = _estimate(ctx)
    if _no_verdict(est):
        return
    for group in est.groups:
        if group.fits is not False or group.certain_overflow:
            continue
        phase = group.peak_phase
        bound = [(role, t) for role, t in group.phases[phase] if t.at_length_bound]
        if not bound:
            continue
        roles = sorted({role for role, _ in bound}, key=group.names.index)
        lengths = ctx.job.value("seq.prompt_max_len"), ctx.job.value("seq.generate_max_len")
        one = sum(v for v in lengths if isinstance(v, int)) or 1024
        tokens = max((v[0] for r in group.roles for v in r.micro_tokens.values() if v[1]), default=one)
        hows = []
        for r in group.roles:
            if r.role in roles and phase in r.micro_tokens:
                n, _, how = r.micro_tokens[phase]
                hows.append(f"{r.role} {n} tokens: {how}")
        budget = _token_budget(ctx, group, one, max(one, tokens))
        advice = (f"; a token budget of {budget} per GPU fits (use_dynamic_bsz with ppo_max_token_len_per_gpu and the "
                  f"log-prob and critic budgets at {budget})" if budget else
                  f"; no token budget of at least one {one}-token sequence fits")
        yield Finding(ctx.job.span,
                      f"{' + '.join(group.names)} need {_gib(group.peak)} per GPU in the {phase} phase when "
                      f"micro batches reach their bound ({'; '.join(hows)}), {_gib(group.floor_total(phase))} "
                      f"without the length-dependent activations and logits; "
                      f"{est.gpu.name if est.gpu else 'the GPU'} has "
                      f"{_gib(group.gpu_memory)}: {_breakdown(group)}{advice}{_assumed(est)}",
                      severity=None)
