"""M005 vllm-gpu-memory-utilization."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.memory._common import (
    PHASE_NOTES, _best_utilization, _estimate, _gib, _no_verdict, _replicas_guessed, _span_of, _stand_in, _tail_named,
    _unmeasured_backend,
    _vllm_phases,
    rollout_label,
)


def _phase_note(name: str) -> str:
    return f": {PHASE_NOTES[name]}" if name in PHASE_NOTES else ""


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


@rule("M005", "vllm-gpu-memory-utilization", Severity.ERROR, scope="job", when="gpu", fixable=True)
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
    # an error only when even the low end of the phase's band overflows; a band straddling the GPU is a warning
    # and only when the states beside it are known to be where the estimate puts them (not replicas guessed)
    guessed = _replicas_guessed(ctx, group)
    unread = bool(vllm.kv.get("utilization_unknown"))  # written but unreadable: the utilisation is assumed
    unmeasured = _unmeasured_backend(ctx) or _tail_named(est) or _stand_in(est)
    severity = None if group.band_total(phase, 0) > group.gpu_memory and not guessed and not unread \
        and not unmeasured else Severity.WARNING
    message = (f"{rollout_label(ctx)} reserves {util:g}{' (assumed: the launch sets it, but not readably)' if unread else ''} x "
               f"{_gib(group.gpu_memory)} = {_gib(util * group.gpu_memory)} per GPU "
               f"while {', '.join(holders) or 'the other roles'} hold {_gib(others)} on the same GPUs"
               f"{' if every GPU holds a full replica (DDP: no DeepSpeed or FSDP config seen)' if guessed else ''} "
               f"({phase} phase total {_gib(group.phase_total(phase))}{_phase_note(phase)}){unmeasured}")
    if best is None:
        yield Finding(span, message + "; no utilisation fits with room for one sequence's KV cache",
                      severity=severity)
        return
    yield Finding(span, message + f"; {best:g} fits", severity=severity,
                  fix=setting_fix(ctx.project, ctx.job, {"vllm.gpu_memory_utilization": best},
                                  f"set gpu_memory_utilization to {best:g}", Applicability.SAFE))
