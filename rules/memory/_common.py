"""M: memory. Each rule reads the memory estimate of a job (rlhf_lint.memory) and names the numbers behind it.

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations


MEMORY_TERMS = ("weights", "gradients", "optimizer_states", "activations", "logits", "deepspeed_buffers",
                "gathered_params", "vllm_reservation", "cuda_graphs", "runtime")


def _hardware(ctx):
    return ctx.config.hardware_for(ctx.job.hardware)


def _reader(ctx):
    """config.json of a local model directory, when that file is among the checked files (read as data)."""
    def read(reference: str):
        found = ctx.project.resolve(ctx.job.path, reference.rstrip("/") + "/config.json")
        return None if found is None else found.text
    return read


def _versions(ctx) -> dict:
    """The releases the estimate reads: those the context's configuration sets, else the repository's pins (read
    once per project)."""
    from rlhf_lint.frameworks.edge import target_versions
    from rlhf_lint.memory.estimate import VERSIONED_PACKAGES

    if "_memory_versions" not in ctx.project.__dict__:
        ctx.project.__dict__["_memory_versions"] = target_versions(ctx.project, VERSIONED_PACKAGES)
    return {**ctx.project.__dict__["_memory_versions"], **ctx.config.versions}


def _estimate(ctx, job=None):
    from rlhf_lint.memory.estimate import estimate

    job = job or ctx.job
    cache = ctx.project.__dict__.setdefault("_memory_estimates", {})
    key = id(job)
    if key not in cache:
        cache[key] = (job, estimate(job, _hardware(ctx), _reader(ctx), _versions(ctx)))
    return cache[key][1]


def _what_if(ctx, changes: dict):
    from rlhf_lint.memory.estimate import estimate, with_settings

    return estimate(with_settings(ctx.job, changes), _hardware(ctx), _reader(ctx), _versions(ctx))


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


PHASE_NOTES = {"weight-sync": "vLLM woken while the policy sends it its weights, at start-up and after every update"}


def _need(names) -> str:
    """`actor needs`, `actor + critic need`: the verb agrees with the list of roles."""
    return f"{' + '.join(names)} {'needs' if len(names) == 1 else 'need'}"


def _breakdown(group) -> str:
    parts: dict[str, int] = {}
    for role, term in group.phases[group.peak_phase]:
        # a term already named after its role (vllm_reservation) is not prefixed twice
        prefixed = len(group.roles) > 1 and not term.name.startswith(f"{role}_")
        label = f"{role} {term.name}" if prefixed else term.name
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


def _vllm_phases(group) -> list[str]:
    """The phases in which vLLM's reservation is on the GPU: generation, and every phase when it does not sleep."""
    return [p for p, items in group.phases.items()
            if any(role == "vllm" and t.name == "vllm_reservation" for role, t in items)]


def rollout_label(ctx) -> str:
    """What the rollout engine is called in a message: SGLang for verl's SGLang rollout, else vLLM."""
    return "SGLang" if ctx.job.value("rollout.engine") == "sglang" else "vLLM"


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
        # the whole band of every phase holding the reservation fits (its high end)
        if (g is not None and all(max(g.phase_total(p), g.band_total(p, 1)) <= g.gpu_memory
                                  for p in _vllm_phases(g)) and v is not None
                and (v.kv.get("tokens") or 0) >= v.kv.get("one_sequence", 0)):
            return util
        util -= 0.05
    return None


UNMEASURED_VERL_MEGATRON = (" with verl's Megatron workers (sized from their code and Megatron-Core's arithmetic, not "
                            "yet checked against a measured verl run)")


def _stand_in(est) -> str:
    """A qualifier for a verdict resting on a model whose layer shape is a stand-in (its size read from the name):
    the KV cache and activations follow that shape; "" otherwise."""
    names = [r.reference for r in est.models.values() if r.how == "size" and r.arch is not None]
    return (f" (with a stand-in layer shape for {', '.join(names)}: its size read from the name, the widths of the "
            f"nearest catalog model)") if names else ""


def _tail_named(est) -> str:
    """A qualifier for a verdict resting on a model named only by the end of a path the linter cannot read
    (``$HOME/models/Qwen3-8B``): the finding is a warning that says so; "" otherwise."""
    from rlhf_lint.memory.estimate import TAIL

    names = [r.reference for r in est.models.values() if r.how.endswith(TAIL)]
    return f" (the model {', '.join(names)} read from the end of a path the linter cannot read)" if names else ""


def _unmeasured_backend(ctx) -> str:
    """A qualifier for a verdict resting on a worker model no measured run backs (verl's Megatron workers): the
    finding is a warning that says so; "" otherwise."""
    if ctx.job.framework == "verl" and ctx.job.value("train.strategy") == "megatron":
        return UNMEASURED_VERL_MEGATRON
    return ""


def _replicas_guessed(ctx, group) -> bool:
    """Plain data parallelism is what the HF builders assume without a DeepSpeed config; an FSDP or DeepSpeed
    launcher config the linter does not see (accelerate's default config file) would shard the states, so an
    overflow of replicated states on several GPUs is not certain."""
    return (str(ctx.job.value("train.strategy", "") or "").lower() in ("ddp", "none")
            and any(r.gpus > 1 for r in group.roles))


def _unread_config(ctx) -> str | None:
    """``the DeepSpeed config X`` / ``the accelerate config X`` a launch names that was not read: its sharding and
    offload are open."""
    for key, what in (("deepspeed.config_unread", "DeepSpeed"), ("accelerate.config_unread", "accelerate")):
        name = ctx.job.settings.value(key)
        if name is not None:
            return f"the {what} config {name}"
    return None


def _shape_guessed(est, group) -> str | None:
    """The name of a model of the group whose layer shape is a stand-in (its size read from the name or given bare:
    the vocabulary and widths of the nearest catalog model), None when every shape is known. Logits and activations
    rest on that shape (Pythia-1B's 50k vocabulary read with Gemma-3-1B's 262k), so no verdict on it is certain."""
    names = {r.model for r in group.roles}
    for res in est.models.values():
        if res.how == "size" and res.arch is not None and res.arch.name in names:
            return res.reference
    return None


SHARDED_STATES = ("weights", "gradients", "backward_gradients", "optimizer_states")


def _world_size_guessed(ctx, group) -> int | None:
    """The GPU count the hardware profile gave a trained role whose states ZeRO or FSDP shard, when no launch gives
    the world size and the overflow lies in those states: more GPUs would shard them further, so it is not certain
    (the rest of the peak phase alone still fitting the GPU). None otherwise."""
    guessed = [r for r in group.roles if r.gpus_assumed and r.trainable]
    stage = ctx.job.value("zero.stage")
    fsdp = str(ctx.job.value("train.strategy", "") or "").lower() in ("fsdp", "fsdp2")
    if not guessed or group.gpu_memory is None or not (fsdp or (isinstance(stage, int) and stage >= 1)):
        return None
    names = {r.role for r in guessed}
    rest = sum(t.bytes for role, t in group.phases[group.peak_phase]
               if not (role in names and t.name in SHARDED_STATES))
    return guessed[0].gpus if rest <= group.gpu_memory else None


def _no_verdict(est) -> bool:
    return not est.hardware_known or est.unmodelled is not None


def _m001_reports(group) -> bool:
    """M001 reports this group: a certain overflow, or a tight one not caused by length-bound terms alone."""
    return group.certain_overflow or (group.tight and not _length_bound_case(group))


M001_NOTE = "; part of the overflow M001 reports on this launch, given here for its fix"


def _length_bound_case(group) -> bool:
    """The nominal peak overflows only through terms sized at a length bound (M009's case): M001 stays silent and
    M004/M006 may offer their change as a warning."""
    return (group.fits is not None and group.fits is False and not group.certain_overflow
            and any(t.at_length_bound for _, t in group.phases[group.peak_phase]))


def once_per_repository(ctx, name: str, applies) -> list | None:
    """The launches of the run's project ``applies`` holds for, when ctx's job is the first of them (it reports
    for all: a verl or OpenRLHF tree has hundreds of launches), else None. Computed once per project."""
    cache = ctx.project.__dict__.setdefault(f"_{name}_launches", {})
    if "jobs" not in cache:
        cache["jobs"] = [j for j in ctx.project.jobs if applies(j)]
    launches = cache["jobs"]
    return launches if launches and launches[0] is ctx.job else None


def others_phrase(launches: list, tail: str = "") -> str:
    """`` (nor for 3 other launches in 2 files of this repository<tail>)`` for a once-per-repository finding."""
    files = sorted({j.path for j in launches})
    others = len(launches) - 1
    if not others:
        return ""
    return (f" (nor for {others} other launch{'es' if others > 1 else ''} in {len(files)} file"
            f"{'s' if len(files) > 1 else ''} of this repository{tail})")
