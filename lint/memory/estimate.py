"""The memory estimate: a pure function of a Job (its Settings) and a hardware profile.

Per role and per GPU a breakdown (weights, gradients, optimizer states, activations, logits, DeepSpeed buffers,
vLLM reservation, runtime overhead); roles placed on the same GPUs add up, phase by phase (generation, experience
making, training); per node the host RAM (CPU-offloaded states, offloaded weights, vLLM sleep copies, loading and
saving copies, process baselines). Every Term names its formula and the source of that formula; every input that
had to be assumed is listed in Estimate.assumptions.
"""
from __future__ import annotations


TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Callable

from rlhf_lint.startup.records import field, record, replace
from rlhf_lint.model import UNKNOWN, Setting
from rlhf_lint.frameworks.precision import dtype_bytes
from rlhf_lint.memory.catalog import GIB, GPU, ModelArch, ModelResolution, model_by_id, resolve_gpu, resolve_model

# sources of the formulas (kept short in the Terms; the full list is in docs/accuracy.md)
SRC_ZERO = "https://arxiv.org/abs/1910.02054"  # ZeRO paper, model-state table
SRC_DS_MEMORY = "https://github.com/deepspeedai/DeepSpeed/blob/master/docs/code-docs/source/memory.rst"
SRC_DS_STAGE12 = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage_1_and_2.py"
SRC_DS_STAGE3 = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage3.py"
SRC_DS_COORDINATOR = ("https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/"
                      "partitioned_param_coordinator.py")
SRC_DS_DTYPES = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/engine.py"  # get_data_types
SRC_ACTIVATIONS = "https://arxiv.org/abs/2205.05198"  # Korthikanti et al., Table 2
SRC_CPU_ADAM = "https://github.com/OpenRLHF/OpenRLHF/issues/277"
SRC_VLLM_UTIL = "https://verl.readthedocs.io/en/latest/perf/perf_tuning.html"  # fraction of total memory since 0.7
SRC_VLLM_KV = "https://github.com/vllm-project/vllm/issues/2418"
SRC_VLLM_NON_TORCH = "https://github.com/vllm-project/vllm/blob/v0.8.5/vllm/worker/worker.py"  # non_torch in profile
SRC_VLLM_SLEEP = "https://github.com/vllm-project/vllm/pull/22310"
# KV = total x utilisation - (weights + torch peak + non-torch increase) over a snapshot taken at init: V1 worker
# (0.9.2) and the V0 worker before it (0.6.4)
SRC_VLLM_SNAPSHOT = "https://github.com/vllm-project/vllm/pull/19312 (V1); https://github.com/vllm-project/vllm/pull/10511 (V0)"
SRC_OVERHEAD = "https://github.com/RahulSChand/gpu_poor"
SRC_EXPANDABLE = "https://github.com/pytorch/pytorch/pull/96995"
SRC_SAVE = "https://github.com/OpenRLHF/OpenRLHF/issues/1126"
SRC_LOAD = "https://huggingface.co/docs/transformers/main/en/main_classes/deepspeed"
SRC_LF_LOAD = ("https://github.com/hiyouga/LLaMA-Factory/blob/ff6d4d12/src/llamafactory/model/patcher.py#L428-L434 "
               "(low_cpu_mem_usage and device_map={'': current device} unless ZeRO-3 or FSDP; hparams/parser.py L646)")
SRC_VERL = "https://github.com/volcengine/verl/blob/v0.7.0/verl"
# offload_states keeps the 16-bit parameter partition (lp_params) unless asked and empties the allocator cache
SRC_DS_OFFLOAD_STATES = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage3.py"
SRC_ORZ = "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a07b4/orz/ppo"
SRC_ORZ_SYNC = f"{SRC_ORZ}/trainer.py#L66-L80"  # policy backloaded with vLLM for the first weight sync
SRC_ORZ_BROADCAST = f"{SRC_ORZ}/actors.py#L692-L714"  # ZeRO-3: one parameter gathered at a time
SRC_LIGER = "https://github.com/linkedin/Liger-Kernel/blob/main/src/liger_kernel/ops/fused_linear_cross_entropy.py"
SRC_CAUSAL_LM_LOSS = "schemas/hf/causal_lm_loss.json"
SRC_TRL_OFFLOAD = "https://github.com/huggingface/trl/blob/v1.16.0/trl/models/activation_offloading.py"
SRC_LORA = "https://arxiv.org/abs/2106.09685"  # LoRA: r x (d_in + d_out) parameters per adapted matrix
SRC_QLORA = "https://arxiv.org/abs/2305.14314"  # NF4 + double quantisation: 4.127 bits per parameter
SRC_QUANT_LOAD = ("https://github.com/huggingface/transformers/blob/v4.44.2/src/transformers/modeling_utils.py "
                  "(from_pretrained: low_cpu_mem_usage set to True when the model is quantized)")
SRC_TORCH_ADAMW = "https://github.com/pytorch/pytorch/blob/v2.5.0/torch/optim/adamw.py"  # zeros_like(p): param dtype
SRC_TRL_GRPO = "https://github.com/huggingface/trl/blob/v0.17.0/trl/trainer/grpo_trainer.py"
SRC_TRL_COLOCATE = "https://github.com/huggingface/trl/blob/v0.18.0/trl/trainer/grpo_trainer.py"  # LLM(...) in-process
SRC_TRL_VLLM_MODE = ("https://github.com/huggingface/trl/blob/v0.18.0/trl/trainer/grpo_config.py (vllm_mode added, "
                     "default server; still server at v0.29.0, colocate from v1.0.0)")
SRC_TRL_LOGPS = "https://github.com/huggingface/trl/blob/v0.18.0/trl/trainer/utils.py"  # selective_log_softmax
SRC_TRL_BETA = "https://github.com/huggingface/trl/blob/v0.19.0/trl/trainer/grpo_config.py"  # beta 0.0 since v0.19
SRC_HF_CACHE = "https://github.com/huggingface/transformers/blob/v4.51.0/src/transformers/cache_utils.py"
SRC_PINNED = ("https://github.com/pytorch/pytorch/blob/v2.5.0/aten/src/ATen/core/CachingHostAllocator.h (PowerOf2Ceil; "
              "freed blocks cached); DeepSpeed v0.16.2 runtime/zero/partition_parameters.py, stage3.py")
SRC_SEQUENTIAL = "https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/trainer/ppo_trainer.py#L274-L286"

TRAINABLE = ("actor", "policy", "critic")
INFERENCE = ("ref", "reward")
PPO_TYPES = {"ppo", "grpo", "reinforce", "reinforce++", "rloo", "remax", "ppo_ray", "rlhf"}
PAIRED_TYPES = {"dpo", "kto", "ipo", "simpo", "orpo", "cpo"}
# preference losses without a reference model (TRL ORPOTrainer / CPOTrainer, LLaMA-Factory pref_loss orpo / simpo)
REFERENCE_FREE = {"simpo", "orpo", "cpo"}

WEIGHT_SYNC = "weight-sync"
STEP = "step"  # the optimizer step, after the backward freed its transient tensors
# data parallelism without DeepSpeed or FSDP (HF Trainer / accelerate DDP, one GPU): ZeRO-0 terms, torch's dtypes
PLAIN_STRATEGIES = ("ddp", "none", "single")
# packages whose release changes a term of the estimate (read from the configuration, else the repository's pins)
VERSIONED_PACKAGES = ("trl", "vllm", "peft", "transformers", "torch", "verl", "deepspeed", "openrlhf")


# -- the model's numbers (schemas/memory/constants.json: value, unit, meaning and source of each) ----------------
def constants() -> dict:
    """name -> {value, unit, meaning, source}, parsed on first use (rlhf_lint.schemas.load caches it)."""
    from rlhf_lint.schemas import load

    return load("memory/constants.json")["constants"]


def constant(name: str):
    """One number of the memory model; a size in GiB comes back in bytes, a list as a tuple."""
    entry = constants()[name]
    value, unit = entry["value"], entry["unit"]
    if unit == "GiB":
        return int(value * GIB)
    return tuple(value) if type(value) is list else value


class _Constants:
    """``K.cuda_context``: attribute access to ``constant`` (readable inside formulas and f-strings)."""

    def __getattr__(self, name: str):
        try:
            return constant(name)
        except KeyError:
            raise AttributeError(name) from None


K = _Constants()

def _sci(n: float) -> str:
    """5e8 written as in DeepSpeed's docs: ``5e8``."""
    mantissa, _, exponent = f"{n:.3g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def _count(n: float) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


@record
class Term:
    name: str
    bytes: int
    formula: str
    source: str = ""
    # the phases a non-resident term is live in; empty: the role's own phase. Lets a model hold one thing while it
    # trains and another while it computes log-probs (verl's actor), or load parked states back for one phase only
    phases: tuple[str, ...] = ()
    # sized at the length bound of data-dependent micro batches (padding removed, no token budget): the real size
    # depends on how long the sequences turn out, so a verdict resting on it is a risk, not a certainty
    at_length_bound: bool = False
    # allocated or not depending on a release the launch does not pin: counted, but 0 at the band's low end
    unsure: bool = False
    # saved for the backward and freed layer by layer as it runs, its blocks taken by the gradients and the
    # backward's own tensors: it leaves almost no allocator slack (runs without checkpointing reserve 0.7-1.5 GiB
    # beyond their allocated peak: bench/calibration/device)
    reused_by_backward: bool = False
    # the part of this term that is one checkpointed layer recomputed: it is live again at the backward's first
    # layers, when the other layers' gradients are written, so it gives the gradients no room
    recomputed: int = 0

    @property
    def label(self) -> str:
        return f"{self.name}@{'+'.join(self.phases)}" if self.phases else self.name


@record
class RoleEstimate:
    role: str
    model: str
    params: int
    gpus: int  # data-parallel GPUs of the role (TP GPUs per engine for vLLM)
    trainable: bool
    terms: list[Term] = field(default_factory=list)
    resident: list[str] = field(default_factory=list)  # term names that stay on the GPU between phases
    phase: str = "training"  # the phase its transient terms belong to
    kv: dict = field(default_factory=dict)  # vLLM: kv_bytes, tokens, tokens_needed, one_sequence
    micro_tokens: dict = field(default_factory=dict)  # FSDP: phase -> (tokens of a micro batch, at a bound, how)
    gather_one: int = 0  # ZeRO-3: bytes of the largest module gathered whole (what a weight sync gathers at a time)
    arch: ModelArch | None = None  # the shapes (host RAM: pinned blocks per parameter tensor)
    trained_params: int = 0  # parameters with gradients and optimizer states (LoRA: the adapters)
    state_bytes: int = 0  # optimizer-side bytes of every trained parameter, before ZeRO divides them (host RAM)
    weight_bytes: int = 0  # the weights as loaded (a quantized base, adapters), before ZeRO or FSDP divides them
    saved_params: int = 0  # LoRA modules_to_save: parameters of the trainable copies (within trained_params)
    saved_state_bytes: float = 0  # their optimizer state bytes per parameter
    host_states: int = 0  # bytes per rank of states kept in host RAM instead of the GPU (FSDP CPUOffload)
    state_bytes_per_param: float = 0  # optimizer-side bytes per trained parameter (master copy + states)
    gpus_assumed: bool = False  # its GPU count is the hardware profile's: no launch gives the world size
    expandable_segments: bool = False  # its allocator maps expandable segments: fragmentation slack unsure

    @property
    def total(self) -> int:
        return sum(t.bytes for t in self.terms)

    def term(self, name: str) -> int:
        return sum(t.bytes for t in self.terms if t.name == name)

    def holds(self, t: Term) -> bool:
        """The term stays on the GPU between phases: a resident name, and no phases of its own (a term that names
        its phases is live in those only, whatever its name)."""
        return t.name in self.resident and not t.phases

    def as_dict(self) -> dict:
        per_gpu: dict[str, int] = {}
        for t in self.terms:
            per_gpu[t.label] = per_gpu.get(t.label, 0) + t.bytes
        per_gpu["total"] = self.total
        return per_gpu


def _formulas(terms: list[Term]) -> dict:
    """label -> formula and source; terms that share a label (two step allocations) keep both, joined."""
    out: dict[str, dict] = {}
    for t in terms:
        if t.label in out:
            seen = out[t.label]
            seen["formula"] += " + " + t.formula
            if t.source not in seen["source"].split(" + "):
                seen["source"] += " + " + t.source
        else:
            out[t.label] = {"formula": t.formula, "source": t.source}
    return out


@record
class GpuGroup:
    """Roles that share the same GPUs; the peak is the largest phase."""

    roles: list[RoleEstimate]
    phases: dict[str, list[tuple[str, Term]]]
    gpu_memory: int | None
    shared_process: bool = False  # one process holds every member (else one process per member on each GPU)
    # the low end under the 16-bit reading of a loaded dtype the launch leaves open (precision.loaded_dtype_open)
    low_floor: int | None = None

    @property
    def names(self) -> list[str]:
        return [r.role for r in self.roles]

    def phase_total(self, phase: str) -> int:
        return sum(t.bytes for _, t in self.phases.get(phase, []))

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=self.phase_total) if self.phases else "training"

    @property
    def peak(self) -> int:
        return self.phase_total(self.peak_phase) if self.phases else 0

    @property
    def fits(self) -> bool | None:
        return None if self.gpu_memory is None else self.peak <= self.gpu_memory

    def floor_total(self, phase: str) -> int:
        """The phase without the terms sized at a length bound (what the job needs however short its sequences)."""
        return sum(t.bytes for _, t in self.phases.get(phase, []) if not t.at_length_bound)

    def band_total(self, phase: str, end: int, leave_out: tuple = ()) -> int:
        """The low (end 0) or high (end 1) end of a phase's band: each term scaled by its kind's factor
        (schemas/memory/constants.json band_factors); a term sized at a length bound, or unsure, counts 0 at the
        low end.
        ``leave_out``: names of terms not counted (what torch.cuda.max_memory_allocated does not see)."""
        factors = K.band_factors
        total = 0.0
        for _, t in self.phases.get(phase, []):
            if (end == 0 and (t.at_length_bound or t.unsure)) or t.name in leave_out:
                continue
            total += t.bytes * factors.get(t.name, factors["other"])[end]
        return int(total)

    @property
    def low_peak(self) -> int:
        low = max((self.band_total(p, 0) for p in self.phases), default=0)
        return low if self.low_floor is None else min(low, self.low_floor)

    @property
    def high_peak(self) -> int:
        return max((self.band_total(p, 1) for p in self.phases), default=0)

    @property
    def certain_overflow(self) -> bool:
        """Does not fit even at the low end of the band, length-dependent terms left out (False also when the GPU
        is unknown): the only overflow that is an error."""
        return self.gpu_memory is not None and self.low_peak > self.gpu_memory

    @property
    def tight(self) -> bool:
        """The band straddles the GPU: the low end fits, the high end (or the nominal peak) does not."""
        return (self.gpu_memory is not None and not self.certain_overflow
                and max(self.high_peak, self.peak) > self.gpu_memory)


@record
class HostNode:
    index: int
    ranks: dict[str, int]  # role -> GPUs of that role on this node
    persistent: list[Term]
    transient: list[Term]  # the largest of loading and saving is added
    limit: int | None
    limit_name: str = ""
    cpu_adam: dict[str, tuple[int, int]] = field(default_factory=dict)  # role -> (bytes here, bytes of the model)

    @property
    def total(self) -> int:
        loading = sum(t.bytes for t in self.transient if t.name.startswith("loading"))
        saving = sum(t.bytes for t in self.transient if t.name.startswith("saving"))
        return sum(t.bytes for t in self.persistent) + max(loading, saving)

    @property
    def fits(self) -> bool | None:
        return None if self.limit is None else self.total <= self.limit


@record
class Estimate:
    roles: list[RoleEstimate]
    groups: list[GpuGroup]
    nodes: list[HostNode]
    assumptions: list[str]
    gpu: GPU | None
    gpu_memory: int | None
    hardware_known: bool
    models: dict[str, ModelResolution] = field(default_factory=dict)
    unmodelled: str | None = None  # why the figures cannot be held against the GPU (a sharding we do not model)

    def group_of(self, role: str) -> GpuGroup | None:
        for g in self.groups:
            if role in g.names:
                return g
        return None

    def role(self, name: str) -> RoleEstimate | None:
        for r in self.roles:
            if r.role == name:
                return r
        return None

    def as_dict(self) -> dict:
        roles = []
        for r in self.roles:
            g = self.group_of(r.role)
            item = {"role": r.role, "model": r.model, "params": r.params, "gpus": r.gpus, "per_gpu": r.as_dict(),
                    "gpu_memory": self.gpu_memory, "fits": None if g is None else g.fits,
                    "shared_with": [] if g is None else [n for n in g.names if n != r.role],
                    "group_peak": None if g is None else g.peak,
                    "formulas": _formulas(r.terms)}
            if r.kv:
                item["kv_cache"] = r.kv
            roles.append(item)
        busiest = max(self.nodes, key=lambda n: n.total, default=None)
        host: dict = {"total": 0}
        if busiest is not None:
            host = {"total": busiest.total, "node": busiest.index, "limit": busiest.limit,
                    "fits": busiest.fits}
            for t in busiest.persistent + busiest.transient:
                host[t.name] = host.get(t.name, 0) + t.bytes
        return {
            "roles": roles,
            "gpu_groups": [{"roles": g.names, "shared_process": g.shared_process, "peak": g.peak,
                            "band": [g.low_peak, g.high_peak],
                            "peak_phase": g.peak_phase, "phases": {p: g.phase_total(p) for p in g.phases}, "gpu_memory": g.gpu_memory,
                            "fits": g.fits} for g in self.groups],
            "host_per_node": host,
            "nodes": [{"node": n.index, "ranks": n.ranks, "total": n.total, "limit": n.limit, "fits": n.fits}
                      for n in self.nodes],
            "gpu": None if self.gpu is None else self.gpu.name,
            "assumptions": self.assumptions,
        }


# -- reading the Job ---------------------------------------------------------------------------------------------
class _Inputs:
    """Settings with defaults, remembering which defaults were assumed."""

    def __init__(self, settings, assumptions: list[str]):
        self.settings = settings
        self.assumptions = assumptions
        self.vllm_in_process = False  # TRL vllm_mode colocate: the engine is part of the training process
        # (vllm.max_model_len, its origin, assumed) the framework's release implies when the launch gives none
        self.max_model_len_default: tuple | None = None
        self.gpus_from_profile: set[str] = set()  # roles whose GPU count no launch gives (the hardware profile's)
        self.tail_models: dict[str, str] = {}  # model name -> the unread path whose known end named it

    def get(self, key: str, default=None, note: str | None = None):
        value = self.settings.value(key, UNKNOWN)
        if value is UNKNOWN or value is None:
            if note and default is not None:
                self.assumptions.append(f"{key} = {default}: {note}")
            return default
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.get(key, default)
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)

    def number(self, key: str, default=None, note: str | None = None):
        value = self.get(key, default, note)
        try:
            return type(default)(value) if default is not None else float(value)
        except (TypeError, ValueError):
            if note and default is not None:
                self.assumptions.append(f"{key} = {default}: {value!r} is not a number; {note}")
            return default


def _trl_grpo(job, inp: _Inputs, versions: dict | None = None) -> bool:
    """TRL's GRPOTrainer (a `trl grpo` launch, a GRPO recipe, or `rlhf-lint estimate --job-type grpo`), and TRL's
    RLOOTrainer from 0.22, rewritten on GRPO's design (RLOOConfig(TrainingArguments) with GRPO's generation,
    logits_to_keep and vllm_mode; before, an OnPolicyConfig PPO-style trainer): an unknown release is the newest."""
    kind = str(inp.get("job.type", "") or "").lower()
    if getattr(job, "framework", "") not in ("trl", "hf", "llamafactory"):
        return False
    if kind == "rloo" and getattr(job, "framework", "") == "trl":
        release = _release(versions, "trl")
        return release is None or release >= (0, 22)
    return kind == "grpo"


def _release(versions: dict | None, name: str) -> tuple[int, int] | None:
    """(major, minor) of the release of ``name`` the launch targets, or None when unknown."""
    parts = str((versions or {}).get(name) or "").split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        return int(parts[0]), int(parts[1])
    return None


def _patch_release(versions: dict | None, name: str) -> tuple[int, ...] | None:
    """The whole release tuple of ``name`` (0.17.6, not 0.17), for changes that landed in a patch release."""
    from rlhf_lint.frameworks.deepspeed import version_tuple

    text = str((versions or {}).get(name) or "")
    return version_tuple(text) if text[:1].isdigit() else None


def _release_row(rows: list[dict], versions: dict | None, name: str) -> dict | None:
    """The row of a per-release table (since/until, the last row the current release) for the release of ``name``
    the launch targets; None when that release is unknown."""
    from rlhf_lint.frameworks.deepspeed import row_at

    release = _release(versions, name)
    return None if release is None else row_at(rows, release)


def _release_row_or_current(rows: list[dict], versions: dict | None, name: str, assumptions: list[str],
                            unknown: str) -> tuple[dict, bool]:
    """(row, whether the release is known): the row of the release of ``name`` the launch targets, else the current
    release's (the table's last), with the ``unknown`` assumption said."""
    row = _release_row(rows, versions, name)
    if row is not None:
        return row, True
    assumptions.append(unknown)
    return rows[-1], False


def _trl_dpo_logps_in_logits_dtype(versions: dict | None, assumptions: list[str]) -> bool:
    """Whether TRL's DPOTrainer computes the policy's log-probs in the logits' dtype (schemas/hf/trl_loss.json):
    from TRL 0.7.5 on; an unknown release gets the current path and says so."""
    from rlhf_lint.schemas import load

    row, _ = _release_row_or_current(load("hf/trl_loss.json")["dpo"], versions, "trl", assumptions,
                                     "TRL release not given: DPOTrainer's current log-probs in the logits' dtype "
                                     "assumed (before 0.7.5 it upcast the logits to fp32)")
    return row["path"] == "logits_dtype"


# trainers whose language-model loss is the model's own forward(labels=...) (the HF Trainer's compute_loss), and
# the plain DeepSpeed launch or `estimate` options
OWN_LOSS_FRAMEWORKS = ("hf", "trl", "llamafactory", "deepspeed", "")
OWN_LOSS_JOBS = ("sft", "pt", "")


def _loss_in_logits_dtype(arch: ModelArch, inp: _Inputs, ctx: dict) -> str:
    """Why the model's own cross entropy runs on its 16-bit logits, or "" (the fp32 path). Only without autocast
    (DeepSpeed: accelerate turns native AMP off for it; the HF Trainer's DDP or FSDP run the loss under autocast,
    which computes the cross entropy in fp32) and with model code that does not upcast at the release in use
    (schemas/hf/causal_lm_loss.json); an unknown release or model code keeps the fp32 path."""
    from rlhf_lint.schemas import load

    kind = str(inp.get("job.type", "") or "").lower()
    if ctx["plain"] or ctx.get("strategy") != "deepspeed" or ctx["w"] >= dtype_bytes("fp32", 4) \
            or ctx.get("framework", "") not in OWN_LOSS_FRAMEWORKS or kind not in OWN_LOSS_JOBS \
            or ctx["fused_loss"] or not arch.model_type:
        return ""
    table = load("hf/causal_lm_loss.json")
    remote = table["remote_code"].get(arch.model_type)
    if remote is not None:
        return f"{arch.model_type}'s remote model code, no fp32 upcast" if remote["path"] == "logits_dtype" else ""
    row = _release_row(table["model_types"].get(arch.model_type, []), ctx.get("versions"), "transformers")
    if row is None or row["path"] != "logits_dtype":
        return ""
    return f"transformers {(ctx.get('versions') or {}).get('transformers')} {arch.model_type}: no fp32 upcast"


ASSUMED_SDPA = "assumed: SDPA"  # the origin `rlhf-lint estimate` gives an attention kernel the options leave open


def _flash(arch: ModelArch, inp: _Inputs, ctx: dict) -> bool:
    """Whether the attention holds no seq x seq scores. A launch that names no attention gets transformers' default
    of the release in use (schemas/hf/attention_default.json): eager before 4.36, and after it for a model whose
    code does not support SDPA (gemma-2 from 5.21, softcapping); an unknown release, remote code or a model
    transformers does not ship keeps SDPA."""
    from rlhf_lint.schemas import load

    setting = inp.settings.get("train.flash_attn")
    defaults = (load("hf/training_args.json")["defaults"]["train.flash_attn"]["origin"], ASSUMED_SDPA)
    if not ctx["flash"] or setting is None or setting.origin not in defaults \
            or ctx.get("framework", "") not in HF_TRAINERS + ("deepspeed", ""):
        return ctx["flash"]
    release = _release(ctx.get("versions"), "transformers")
    if release is None:
        return True
    from rlhf_lint.frameworks.deepspeed import version_tuple

    table = load("hf/attention_default.json")
    version = (ctx.get("versions") or {}).get("transformers")
    if arch.model_type not in table["model_types"]:
        return True  # remote code (Qwen-1 picks flash-attn itself) or an unknown model: its own choice, not known
    if release < version_tuple(table["sdpa_default_since"]):
        why = f"transformers {version} runs eager attention by default (SDPA is its default from " \
              f"{table['sdpa_default_since']}): seq x seq scores counted"
    else:
        row = _release_row(table["model_types"][arch.model_type], ctx.get("versions"), "transformers")
        if row is None or row["attention"] == "sdpa":
            return True
        why = f"{arch.model_type} has no SDPA path in transformers {version}: eager attention, seq x seq scores counted"
    if why not in inp.assumptions:
        inp.assumptions.append(why)
    return False


def _trl_reference(inp: _Inputs, versions: dict | None) -> bool:
    """Whether GRPOTrainer loads a reference model: beta != 0 (grpo_trainer.py: `if self.beta == 0.0: ref_model =
    None`). beta unset: its default is 0.04 up to TRL 0.18 and 0.0 since 0.19; an unknown release gets the current
    default (no reference), said in the assumptions, so the estimate never adds a model the run may not load."""
    beta = inp.get("trl.beta")
    if beta is not None:
        try:
            return float(beta) != 0.0
        except (TypeError, ValueError):
            pass
    release = _release(versions, "trl")
    if release is not None:
        old = release < (0, 19)
        inp.assumptions.append(f"GRPO beta unset: TRL {versions['trl']}'s default {0.04 if old else 0.0} "
                               f"({'a reference model is loaded' if old else 'no reference model'}; {SRC_TRL_BETA})")
        return old
    inp.assumptions.append(f"GRPO beta unset and the TRL release unknown: its current default 0.0 assumed (no "
                           f"reference model; TRL 0.18 and earlier default to 0.04 and load one: {SRC_TRL_BETA})")
    return False


def _trl_colocate(job, inp: _Inputs, versions: dict | None) -> bool:
    """Whether GRPOTrainer runs vLLM inside each training process (vllm_mode colocate, TRL >= 0.18): its
    reservation then sits on the training GPUs. Server mode (`trl vllm-serve` on other GPUs) and TRL < 0.18 (vLLM on
    a GPU of its own, vllm_device) add nothing there. vllm_mode unset: server up to 0.29, colocate since 1.0."""
    if not _trl_grpo(job, inp, versions) or not inp.flag("trl.use_vllm"):
        return False
    release = _release(versions, "trl")
    if release is not None and release < (0, 18):
        return False
    mode = inp.get("trl.vllm_mode")
    if isinstance(mode, str):
        return mode.strip().lower() == "colocate"
    if release is not None:
        return release >= (1, 0)
    inp.assumptions.append(f"TRL vllm_mode unset and the TRL release unknown: server assumed (vLLM on GPUs of its "
                           f"own; colocate is the default from TRL 1.0: {SRC_TRL_VLLM_MODE})")
    return False


def _trl_colocate_max_model_len(versions: dict | None) -> tuple | None:
    """What GRPOTrainer gives its colocated vLLM for max_model_len when vllm_max_model_length is not set
    (schemas/hf/trl_checks.json colocate_max_model_len): None where it is the prompt + completion length."""
    from rlhf_lint.frameworks.deepspeed import row_at
    from rlhf_lint.schemas import load

    rows = load("hf/trl_checks.json")["colocate_max_model_len"]["rows"]
    release = _patch_release(versions, "trl")  # the rows start at patch releases (0.26.0)
    row = rows[-1] if release is None else row_at(rows, release)
    if row is None or row["rule"] != "max_position_embeddings":
        return None
    which = "TRL's newest releases" if release is None else f"TRL {'.'.join(map(str, release))}"
    return ("max_position_embeddings", f"vllm_max_model_length unset: {which} let vLLM take the model's "
                                       f"max_position_embeddings", release is None)


def _roles_of(job, inp: _Inputs, versions: dict | None = None) -> list[str]:
    kind = str(inp.get("job.type", "") or "").lower()
    has = lambda role: inp.get(f"model.{role}.path") is not None or inp.get(f"model.{role}.params") is not None
    if job.roles:
        roles = [r for r in job.roles if r != "vllm"]
    elif _trl_grpo(job, inp, versions):
        # GRPOTrainer: the policy, and a frozen reference in the same process unless beta is 0
        roles = ["policy"] + (["ref"] if _trl_reference(inp, versions) else [])
    elif kind in PPO_TYPES or job.framework in ("orz", "verl"):
        roles = ["actor"] + [r for r in ("critic", "ref", "reward") if has(r)]
        if "ref" not in roles and not kind.startswith("grpo"):
            roles.insert(1, "ref")  # the KL reference is the actor's initial weights
    elif kind in PAIRED_TYPES:
        roles = ["policy"] + ([] if _reference_free(job, inp, kind, versions) else ["ref"])
    else:
        roles = ["policy"] if not has("actor") else ["actor"]
    if int(inp.number("vllm.num_engines", 0) or 0) > 0 or inp.vllm_in_process:
        roles.append("vllm")
    return roles


def _reference_free(job, inp: _Inputs, kind: str, versions: dict | None = None) -> bool:
    """A preference job that holds no second copy of the model: a loss without a reference (SimPO, ORPO, CPO), or,
    in the HF family, a LoRA policy whose adapters are switched off for the reference pass when no reference model
    is named (TRL's DPOTrainer and KTOTrainer with a PEFT model; LLaMA-Factory's create_ref_model), or TRL's
    DPOTrainer with precompute_ref_log_probs up to 0.28 (the reference log-probs are computed before training)."""
    loss = str(inp.get("train.pref_loss") or "").lower()
    if kind in REFERENCE_FREE or loss in REFERENCE_FREE:
        inp.assumptions.append(f"{loss if loss in REFERENCE_FREE else kind}: a preference loss with no reference model "
                               f"({SRC_REFERENCE_FREE})")
        return True
    if getattr(job, "framework", "") == "trl" and inp.get("trl.precompute_ref_log_probs") is True \
            and inp.get("model.ref.path") is None:
        release = _release(versions, "trl")
        if release is not None and (0, 7) <= release < (0, 29):
            inp.assumptions.append(f"{kind} with precompute_ref_log_probs: the reference log-probs are computed "
                                   f"before training and no reference model is kept (TRL {versions['trl']}, "
                                   f"{SRC_TRL_PRECOMPUTE})")
            return True
        inp.assumptions.append(f"{kind} with precompute_ref_log_probs: TRL up to 0.28 keeps no reference model "
                               f"while training; from 0.29, or the release not pinned, it is counted "
                               f"({SRC_TRL_PRECOMPUTE})")
    lora = _int_of(inp.get("train.lora_rank"), 0) > 0 and inp.get("model.ref.path") is None
    if lora and getattr(job, "framework", "") in HF_TRAINERS:
        inp.assumptions.append(f"{kind} with LoRA: the reference is the policy with its adapters disabled, no second "
                               f"copy ({SRC_LORA_REFERENCE})")
        return True
    if lora and inp.get("train.strategy") == "megatron":
        inp.assumptions.append(f"{kind} with LoRA on Megatron: the reference is the model with its adapter disabled, "
                               f"no second copy ({SRC_MEGATRON_LORA_REFERENCE})")
        return True
    return False


def _model_ref(inp: _Inputs, role: str):
    chain = {"actor": ["actor", "policy"], "policy": ["policy", "actor"], "ref": ["ref", "actor", "policy"],
             "critic": ["critic", "reward", "actor", "policy"], "reward": ["reward", "critic"],
             "vllm": ["actor", "policy"]}[role]
    for r in chain:
        params = inp.get(f"model.{r}.params")
        if params is not None:
            return f"{params}" if isinstance(params, str) else f"{int(params) / 1e9:g}B"
        path = inp.get(f"model.{r}.path")
        if isinstance(path, str):
            return path
        setting = inp.settings.get(f"model.{r}.path")
        name = _named_by_tail(setting)
        if name is not None:
            inp.tail_models[name] = setting.tail
            return name
    return None


TAIL = "path tail"  # ModelResolution.how suffix of a model named by an unread path's known end


def _from_tail(res: ModelResolution, inp: _Inputs) -> ModelResolution:
    """A resolution of a name read off an unread path's end: guessed, and said (M001 keeps it a warning)."""
    tail = inp.tail_models.get(res.reference)
    if tail is None or res.arch is None:
        return res
    note = (f"model path cannot be read; '{res.reference}', the end of '...{tail}', taken as the model"
            + (f" ({res.note})" if res.note else ""))
    return replace(res, how=f"{res.how}, {TAIL}", guessed=True, note=note)


def _named_by_tail(setting) -> str | None:
    """The last directory of an unread model path's known end (``$HOME/models/Qwen3-8B``: Qwen3-8B), which names
    the model as a local checkpoint folder does, or the hub id its last two directories spell when the catalog has
    it (``$ROOT/models/Qwen/Qwen2.5-0.5B-Instruct``); None without a path separator before it."""
    if setting is None or setting.value is not UNKNOWN or "/" not in setting.tail:
        return None
    parts = [p for p in setting.tail.split("/") if p]
    if not parts or not any(c.isalpha() for c in parts[-1]):
        return None
    hub_id = "/".join(parts[-2:])
    return hub_id if len(parts) >= 2 and model_by_id(hub_id) is not None else parts[-1]


def _gpus_of(inp: _Inputs, role: str, hardware) -> tuple[int, int]:
    """(nodes, gpus per node) of a role."""
    nodes = inp.get(f"topology.{role}.nodes")
    per = inp.get(f"topology.{role}.gpus_per_node")
    if role in ("policy",) and nodes is None:
        nodes, per = inp.get("topology.actor.nodes"), inp.get("topology.actor.gpus_per_node")
    if nodes is not None and per is not None:
        try:
            return int(nodes), int(per)
        except (TypeError, ValueError):
            pass
    ws = inp.get("topology.world_size")
    tn, tp = inp.get("topology.nodes"), inp.get("topology.gpus_per_node")
    try:
        if ws is not None:
            n = int(tn) if tn is not None else 1
            return n, max(1, int(ws) // n)
        if tn is not None and tp is not None:
            return int(tn), int(tp)
        if tp is not None:
            return 1, int(tp)
    except (TypeError, ValueError):
        pass
    per_node = hardware.gpus_per_node or K.default_gpus_per_node
    nodes = hardware.nodes or 1
    inp.assumptions.append(f"{role} uses {nodes} x {per_node} GPUs: the launch does not say (hardware profile)")
    inp.gpus_from_profile.add(role)
    return nodes, per_node


# -- per-role terms ----------------------------------------------------------------------------------------------
def activation_units(arch: ModelArch, moe: bool) -> float:
    """Activation bytes per token and hidden unit of one layer: the count of what autograd saves
    (ModelArch.layer_activation_bytes) times the scale fitted on the measured rows."""
    return K.activation_scale * arch.layer_activation_bytes(moe) / arch.hidden_size


def _activation_terms(arch: ModelArch, batch: int, seq: int, checkpointing: bool, flash: bool, w: int,
                      forward_only: bool, with_logits: bool, what: str, fused: bool = False,
                      logit_seq: int | None = None, trl_logps: bool = False, split: int = 1,
                      loss_in_logits_dtype: str = "", offloaded: bool = False) -> list[Term]:
    """``logit_seq``: tokens per sequence the LM head runs on when fewer than ``seq`` (TRL's logits_to_keep: the
    completion only). ``trl_logps``: the loss is GRPOTrainer's selective_log_softmax, not a cross entropy.
    ``split``: GPUs the layers are spread over by device_map; one GPU holds its share of the layers' saved tensors
    (the one recomputed layer and the LM head's logits are whole on the GPU that runs them).
    ``loss_in_logits_dtype``: why the model's own cross entropy runs on its 16-bit logits ("": it upcasts).
    ``offloaded``: TRL's activation_offloading moves the saved tensors to host RAM in the forward: the checkpointed
    layer inputs but a stash of them, or without checkpointing all but the one layer the backward works on."""
    h, L, a = arch.hidden_size, arch.num_layers, arch.num_heads
    share = f"/{split}" if split > 1 else ""
    lseq = min(seq, logit_seq) if logit_seq else seq
    ck, f = K.checkpoint_bytes, K.attention_score_factor
    attn = 0 if flash else f * a * seq / h
    dense_act = activation_units(arch, False)
    act = activation_units(arch, True) if arch.num_experts else dense_act
    per_layer = seq * batch * h * (max(act, dense_act if arch.dense_layer_count else 0) + attn)
    # without checkpointing every layer's activations live: dense layers (DeepSeek's first k) keep their own count
    all_layers = seq * batch * h * (arch.moe_layer_count * act + arch.dense_layer_count * dense_act + L * attn) \
        if arch.num_experts else L * per_layer
    all_layers /= split
    attn_note = "flash attention: no s^2 scores" if flash else f"+{f}as/h attention scores (no flash attention)"
    if arch.num_experts:
        attn_note += f"; MoE: {act:.1f} B with {max(1, arch.experts_per_token)} active experts"
        if arch.dense_layer_count:
            attn_note += f" in {arch.moe_layer_count} layers, {dense_act:.1f} B in {arch.dense_layer_count} dense ones"
    terms = []
    logits = _logits_terms(arch, batch, seq, lseq, w, forward_only, with_logits, fused, trl_logps,
                           loss_in_logits_dtype)
    if forward_only:
        terms.append(Term("activations", int(per_layer),
                          f"forward only, one layer live: s*b*h*{act:.1f} = {seq}*{batch}*{h}*{act:.1f} B "
                          f"({attn_note}; {what})",
                          SRC_ACTIVATIONS))
    elif checkpointing:
        # the last layer is recomputed after the loss's backward freed its tensors: the two are never live together
        # (measured: bench/calibration/measured.json, the checkpointed rows hold the loss and the layer inputs only)
        loss = sum(t.bytes for t in logits)
        recompute = max(0, int(per_layer) - loss)
        beside = f" (one layer recomputed, {gib(per_layer)}, beyond the loss's {gib(loss)}: never live together)" \
            if loss else f" + one layer recomputed {gib(per_layer)}"
        kept, how_many = (min(L, K.activation_offload_stash), f"{min(L, K.activation_offload_stash)} kept") \
            if offloaded else (L, f"L{share}")
        offload_note = f", the other {L - kept} layer inputs in host RAM (activation_offloading)" if offloaded else ""
        terms.append(Term("activations", int(kept * ck * seq * batch * h / (1 if offloaded else split) + recompute),
                          f"checkpointing: {how_many}*{ck}*s*b*h = {kept}*{ck}*{seq}*{batch}*{h}{beside}"
                          f"{offload_note} ({attn_note}; {what})", SRC_ACTIVATIONS, recomputed=recompute))
    elif offloaded:
        terms.append(Term("activations", int(per_layer),
                          f"activation_offloading: one layer's saved tensors on the GPU, s*b*h*{act:.1f} = "
                          f"{seq}*{batch}*{h}*{act:.1f} B, the other layers' in host RAM ({attn_note}; {what})",
                          SRC_TRL_OFFLOAD, reused_by_backward=True))
    else:
        terms.append(Term("activations", int(all_layers),
                          f"no checkpointing: L{share}*s*b*h*{act:.1f} = {L}{share}*{seq}*{batch}*{h}*{act:.1f} B "
                          f"({attn_note}; {what})", SRC_ACTIVATIONS, reused_by_backward=True))
    return terms + logits


def _logits_terms(arch: ModelArch, batch: int, seq: int, lseq: int, w: int, forward_only: bool, with_logits: bool,
                  fused: bool, trl_logps: bool, loss_in_logits_dtype: str = "") -> list[Term]:
    """What the LM head and the loss hold at their peak (the start of the backward in training)."""
    h, lc = arch.hidden_size, K.loss_logits_copy_bytes
    terms: list[Term] = []
    if with_logits and fused and not forward_only:
        # Liger's fused linear cross entropy: chunks of ceil(BT / ceil(V/H)) rows, so one chunk of fp32 logits is
        # about BT x H x 4 B, plus the gradient of the hidden states it writes (BT x H x w)
        f32 = dtype_bytes("fp32", 4)  # the chunk is fp32 whatever the loss path around full logits holds
        terms.append(Term("logits", int(seq * batch * h * (f32 + w)),
                          f"fused/chunked loss: one chunk of fp32 logits ~ s*b*h*{f32} + hidden-state gradient "
                          f"s*b*h*{w} = {seq}*{batch}*{h}*{f32 + w} B (no full logits)", SRC_LIGER))
    elif with_logits and trl_logps and not forward_only:
        copies = K.trl_logps_copies[1 if w >= dtype_bytes("fp32", 4) else 0]
        terms.append(Term("logits", int(lseq * batch * arch.vocab_size * w * copies),
                          f"s*b*V*{w}*{copies} = {lseq}*{batch}*{arch.vocab_size}*{w * copies} B: {copies} "
                          f"{w}-byte logits tensors at the backward's peak (GRPO per-token log-probs of the "
                          f"completion, selective_log_softmax)", SRC_TRL_LOGPS))
    elif with_logits and forward_only:
        f32 = dtype_bytes("fp32", 4)  # log-probs without a backward: the fp32 log-softmax beside the 16-bit logits
        terms.append(Term("logits", int(lseq * batch * arch.vocab_size * (w + f32)),
                          f"s*b*V*({w}+{f32}) = {lseq}*{batch}*{arch.vocab_size}*{w + f32} B: logits and their "
                          f"fp32 log-softmax (forward only)", SRC_ACTIVATIONS))
    elif with_logits and loss_in_logits_dtype:
        c = K.loss_logits_dtype_copies
        terms.append(Term("logits", int(lseq * batch * arch.vocab_size * w * c),
                          f"s*b*V*{c}*{w} = {lseq}*{batch}*{arch.vocab_size}*{c * w} B: the cross entropy in the "
                          f"logits' {w}-byte dtype ({loss_in_logits_dtype}): its log-softmax and two gradients",
                          SRC_CAUSAL_LM_LOSS))
    elif with_logits:
        terms.append(Term("logits", int(lseq * batch * arch.vocab_size * (w + lc)),
                          f"s*b*V*({w}+{lc}) = {lseq}*{batch}*{arch.vocab_size}*{w + lc} B: what the cross entropy "
                          f"holds at the backward's start (fp32 log-softmax, its gradient and the loss's; measured)",
                          SRC_ACTIVATIONS))
    return terms


def _ds_micro_tokens(inp: _Inputs, ctx: dict, role: str, training: bool) -> tuple[int, int, str, bool]:
    """(sequences, tokens per sequence, how, at a bound) of one DeepSpeed micro batch on one GPU. A token budget
    (OpenRLHF --use_dynamic_batch / --train.max_tokens_per_gpu, --rollout.max_tokens_per_gpu for the forward passes)
    packs sequences up to that many tokens per GPU: one packed row of ``budget`` tokens, filled only when the data
    holds that many. Packing without a budget packs ``micro`` sequences of at most the length bound. Ring attention
    and Ulysses SP slice every sequence over their ranks. Only padded micro batches of data are certain: in RL the
    responses are generated, and a micro batch is padded to its longest one (OpenRLHF zero_pad_sequences)."""
    split = max(1, _int_of(inp.get("train.ring_attn_size"), 1)) * max(
        1, _int_of(inp.get("train.sequence_parallel_size"), 1))
    seq = ctx["seq"]
    if training:
        dynamic, budget = _per_role(inp, role, "batch.dynamic"), _per_role(inp, role, "batch.max_tokens_per_gpu")
        # a pair is two rows, unless packing bins whole pairs (chosen + rejected) into rows of the length bound
        in_one_row = inp.flag("train.packing") and inp.flag("batch.pairs_packed_together")
        micro = ctx["micro_train"] * (2 if ctx["paired"] and not in_one_row else 1)
    else:
        dynamic = _per_role(inp, role, "batch.forward_dynamic")
        if dynamic is None:
            dynamic = inp.get("batch.dynamic")
        budget = _per_role(inp, role, "batch.forward_max_tokens_per_gpu") or inp.get("batch.max_tokens_per_gpu")
        micro = ctx["micro_rollout"]
    if dynamic is True and _int_of(budget, 0) > 0:
        # OpenRLHF fills a budget per GPU: with ring attention the group's rows hold budget x ring tokens, split
        return 1, int(budget), f"token budget {int(budget)} per GPU (dynamic batch)", True
    # packed rows, or a length that only truncates (batches padded to their longest sample): at most this many
    packed = inp.flag("train.packing")
    truncates = inp.flag("seq.max_len_truncates")
    tokens = -(-seq // split)
    how = f"micro batch {micro}, sequence {seq}" + (f" / {split} ring-attention/SP ranks" if split > 1 else "")
    if packed:
        how += ", packed: at most this many tokens"
    elif truncates:
        how += ", padded to the longest sample: at most this many tokens"
    elif ctx.get("generated"):
        how += ", padded to the longest generated response: at most this many tokens"
    return micro, tokens, how, packed or truncates or bool(ctx.get("generated"))


def lora_params(arch: ModelArch, rank: int, targets) -> int:
    """Adapter parameters: r x (d_in + d_out) per adapted Linear of every decoder layer (LoRA paper), over the
    layer's own tensors (gated or plain MLP, experts, shared expert); ``targets`` empty or absent: every linear
    projection ("all-linear", OpenRLHF's and LLaMA-Factory's default). MoE routers are left out: many are not
    nn.Linear modules, and their adapters are negligible."""
    wanted = {str(t) for t in (targets or ())}
    every = not wanted or wanted & {"all-linear", "all"}

    def adapted(name: str) -> bool:
        module = name.rsplit(".", 2)[-2]  # PEFT matches target names against module names (q_proj, or q)
        if module in ("gate", "shared_expert_gate"):
            return False
        return bool(every or module in wanted or module.removesuffix("_proj") in wanted)

    total = 0
    for moe, layers in arch.layer_kinds():
        per_layer = sum(count * rank * sum(shape) for name, shape, count in arch.layer_tensors(moe)
                        if len(shape) == 2 and adapted(name))
        total += len(layers) * per_layer
    return total


def optimizer_bytes(inp: _Inputs) -> tuple[str, float]:
    """(name, bytes of optimizer state per trained parameter, fp32) of ``train.optimizer`` (absent: AdamW)."""
    table = K.optimizer_state_bytes
    name = str(inp.get("train.optimizer", "adamw") or "adamw").lower()
    if name not in table:
        inp.assumptions.append(f"optimizer {name!r} is not in the table: AdamW's 8 B/param assumed")
        name = "adamw"
    return name, table[name]


# launches trained by the HF Trainer (TRL, LLaMA-Factory and ms-swift build on it): it builds the optimizer itself
HF_TRAINERS = ("hf", "trl", "llamafactory", "swift")

# optimizers whose states are zeros_like(param): in the dtype of the parameters they update
MOMENT_OPTIMIZERS = ("adamw", "adam", "adamw_torch", "adamw_torch_fused", "adamw_hf", "sgd_momentum", "lion",
                     "adagrad", "rmsprop")
ADAM_OPTIMIZERS = ("adamw", "adam", "adamw_torch", "adamw_torch_fused")  # torch's Adam: its step may copy v


def _step_term(r: RoleEstimate, step: int, formula: str, source: str, unsure: bool = False) -> None:
    """What the optimizer step allocates, in the step phase: after the backward freed its activations, logits and
    gathered parameters, beside the states and gradients the step reads. The allocator reuses the blocks those
    transients left cached, so only what the step needs beyond them adds slack (_slack)."""
    r.terms.append(Term("optimizer_step", step, formula, source, (STEP,), unsure=unsure))


def _transients(r: RoleEstimate) -> int:
    return sum(t.bytes for t in r.terms if t.name in ("activations", "logits", "gathered_params") and not t.phases)


def _adam_step_term(r: RoleEstimate, inp: _Inputs, ctx: dict, v_bytes: float, count: int) -> None:
    """The copy of Adam's second moment (``v_bytes`` per parameter, ``count`` parameters) a foreach AdamW writes in
    step() (sqrt(v), torch's _multi_tensor_adamw), for jobs where torch's optimizer updates the GPU's tensors: plain
    data parallel and FSDP (whose DTensors take the same path: schemas/hf/adam_step_temporary.json)."""
    from rlhf_lint.frameworks.deepspeed import version_tuple
    from rlhf_lint.schemas import load

    foreach, why, source = _foreach_adam(inp, ctx, r.role)
    if foreach is False or not v_bytes or not count:
        return
    step = int(v_bytes * count)
    table = load("hf/adam_step_temporary.json")
    torch = _release(ctx.get("versions") or {}, "torch")
    if foreach and torch is not None and torch < version_tuple(table["foreach_two_copies_before_torch"]):
        # torch 2.0's foreach AdamW also writes denom = sqrt(v) + eps into a new list of tensors
        _step_term(r, 2 * step, f"foreach AdamW's sqrt(v) and denom copies 2 x {v_bytes:g} B x {_count(count)} in "
                                f"step() ({why}, torch {ctx['versions']['torch']})",
                   table["foreach_two_copies_source"])
        return
    if foreach is None and step > _transients(r):
        inp.assumptions.append(f"{r.role}: torch's foreach AdamW assumed ({why}): its step copies v, {gib(step)}; "
                               f"a fused optimizer would not")
    _step_term(r, step, f"foreach AdamW's sqrt(v) copy {v_bytes:g} B x {_count(count)} in step() ({why}"
               + ("; it may not be allocated)" if foreach is None else ")"), source, unsure=foreach is None)


def _hf_optim(inp: _Inputs, ctx: dict, table: dict) -> tuple[str | None, str, str]:
    """(the optimizer name, why, source): the launch's ``optim``, else the HF Trainer's default of the transformers
    (and torch) release; None when neither is known."""
    from rlhf_lint.frameworks.deepspeed import version_tuple

    name = inp.get("train.optimizer")
    versions = ctx.get("versions") or {}
    if name is not None:
        return str(name).lower(), f"optim {name}", table["source"]
    entry = _release_row(table["transformers_default_optim"], versions, "transformers")
    if entry is None:
        return None, "the optimizer and the transformers release are not given", table["source"]
    name, source = entry["optim"], entry["source"]
    if entry.get("then"):
        torch = _release(versions, "torch")
        if torch is None:
            return None, (f"transformers {versions['transformers']} defaults to {entry['then']} only from torch "
                          f"{entry['torch_from']} and the torch release is not given"), source
        if torch >= version_tuple(entry["torch_from"]):
            name = entry["then"]
    return name, f"transformers {versions['transformers']}'s default optim {name}", source


def _zero_client_adam_copy(r: RoleEstimate, inp: _Inputs, ctx: dict, flat: int, sure: int | None = None) -> None:
    """The sqrt(v) copy a torch-level Adam makes of the flat fp32 tensor (``flat`` elements) DeepSpeed ZeRO hands it
    per step: for the HF Trainer's own optimizer (no 'optimizer' section in the ds_config) or one the launch names
    (schemas/hf/adam_step_temporary.json zero_flat_partition). DeepSpeed's own optimizers (a ds_config optimizer
    section, OpenRLHF's and ORZ's FusedAdam) are fused: no copy. ``sure``: the elements certain to be copied when
    the layout itself is not known (the rest is counted, but not at the band's low end)."""
    from rlhf_lint.schemas import load

    if ctx["offload_optimizer"] or inp.get("deepspeed.optimizer") is not None or not flat:
        return
    if ctx["framework"] not in HF_TRAINERS and inp.get("train.optimizer") is None:
        if ctx["framework"] == "deepspeed":  # a plain launch or `rlhf-lint estimate --model`: say what was assumed
            inp.assumptions.append(f"{r.role}: no optimizer named: DeepSpeed's fused Adam assumed; a torch AdamW "
                                   f"(the HF Trainer's, --optimizer adamw_torch) would also copy v of the flat fp32 "
                                   f"partition in step(), {gib(dtype_bytes('fp32', 4) * flat)}")
        return
    table = load("hf/adam_step_temporary.json")
    zero = table["zero_flat_partition"]
    name, why, source = _hf_optim(inp, ctx, table)
    if name is not None and name not in zero["copies"]:
        return  # fused, or states this copy does not describe (8-bit, Adafactor, ...)
    f32 = dtype_bytes("fp32", 4)
    sure = flat if sure is None or name is None else min(sure, flat)
    _step_term(r, f32 * sure, f"Adam's sqrt(v) copy of the flat fp32 partition DeepSpeed hands the optimizer, {f32} B "
                              f"x {_count(sure)} ({why}" + ("; it may not be allocated)" if name is None else ")"),
               zero["source"], unsure=name is None)
    if sure < flat:
        _step_term(r, f32 * (flat - sure), f"the rest of that copy when the whole master is on every rank (DeepSpeed "
                                           f">= 0.17.6): {f32} B x {_count(flat - sure)}", zero["source"], unsure=True)


def _foreach_adam(inp: _Inputs, ctx: dict, role: str = "actor") -> tuple[bool | None, str, str]:
    """(whether the step makes a full copy of Adam's second moment, why, source) for a job without DeepSpeed:
    True for torch's foreach AdamW, False for a fused or per-parameter one, None when the launch does not say which
    (schemas/hf/adam_step_temporary.json). verl's FSDP workers build torch.optim.AdamW themselves; the HF Trainer
    picks by ``optim`` and its release's default."""
    from rlhf_lint.frameworks.deepspeed import version_tuple
    from rlhf_lint.schemas import load

    table = load("hf/adam_step_temporary.json")
    if ctx.get("strategy") in ("fsdp", "fsdp2") and not ctx.get("accelerate_fsdp"):
        verl = table["verl_default"]
        if role != "actor":  # only the actor's optimizer settings are read: the critic's are verl's defaults
            return True, "verl's default torch.optim.AdamW", verl["source"]
        name = str(inp.get("train.optimizer") or verl["optimizer"]).lower()
        impl = str(inp.get("train.optimizer_impl") or verl["optimizer_impl"])
        if (impl, name) != (verl["optimizer_impl"], verl["optimizer"]):
            return None, f"optimizer {impl}.{name}: foreach or fused not known", verl["source"]
        explicit = inp.get("train.optimizer_foreach")
        if isinstance(explicit, bool):
            return explicit, f"torch.optim.AdamW, foreach={explicit} by the launch", verl["source"]
        return True, "verl's default torch.optim.AdamW", verl["source"]
    name, why, source = _hf_optim(inp, ctx, table)
    if name is None:
        return None, why, source
    torch = _release(ctx.get("versions") or {}, "torch")
    if name in table["optimizers"]["foreach"]:
        if torch is not None and torch < version_tuple(table["foreach_default_from_torch"]):
            return (False, f"{why}, torch {ctx['versions']['torch']}: no foreach by default",
                    table["foreach_default_source"])
        return True, why, source
    if name in table["optimizers"]["no_full_copy"]:
        return False, why, source
    return None, f"optim {name}: foreach or fused not known", source


def _adapter_dtype(inp: _Inputs, ctx: dict, quantized: bool) -> tuple[int, str, str, str]:
    """(bytes, dtype, why, source) of LoRA adapters trained without DeepSpeed: the optimizer updates the adapters
    themselves, so their dtype is also their gradients' and AdamW moments'. An explicit precision.adapter_dtype,
    else the framework's own cast (LLaMA-Factory), else PEFT's rule for the release the launch targets (an unknown
    release: the current one's)."""
    from rlhf_lint.schemas import load

    w, f32 = ctx["w"], dtype_bytes("fp32", 4)
    explicit = inp.get("precision.adapter_dtype")
    if explicit:
        return dtype_bytes(str(explicit), w), str(explicit), "given", SRC_TORCH_ADAMW
    table = load("hf/peft_adapter_dtype.json")
    own = table["frameworks"].get(ctx.get("framework", ""))
    if own:
        if not inp.flag(own["unless"]):
            return dtype_bytes(own["dtype"], f32), own["dtype"], "LLaMA-Factory upcasts trainable parameters", \
                own["source"]
        if own["otherwise"] == "base" and not quantized:
            return w, f"{w}-byte (the base's dtype)", "LLaMA-Factory pure_bf16: no upcast", own["source"]
    entry, known = _release_row_or_current(table["releases"], ctx.get("versions"), "peft", inp.assumptions,
                                           f"LoRA adapters in {table['releases'][-1]['dtype']}: the PEFT release is "
                                           f"unknown, so the current default (autocast_adapter_dtype) is assumed")
    why = f"PEFT {ctx['versions']['peft']}" if known else "PEFT release unknown: the current default"
    if entry["dtype"] == "base" and not quantized:
        return w, f"{w}-byte (the base's dtype)", why, entry["source"]
    return f32, "fp32", why, entry["source"]


SRC_FREEZE = "https://github.com/hiyouga/LLaMA-Factory/blob/ff6d4d12/src/llamafactory/model/adapter.py"
SRC_FROZEN_VISION = ("https://github.com/hiyouga/LLaMA-Factory/blob/v0.9.5/src/llamafactory/model/model_utils/visual.py "
                     "(get_forbidden_modules); https://github.com/modelscope/ms-swift/blob/v4.5.2/swift/arguments/"
                     "tuner_args.py#L204-L216 (_init_multimodal_full)")
SRC_GALORE = "https://arxiv.org/abs/2403.03507"  # GaLore: Adam moments of rank-r projected gradients
SRC_APOLLO = "https://arxiv.org/abs/2412.05270"
SRC_BADAM = "https://arxiv.org/abs/2404.02827"  # BAdam: Adam on one block at a time


@record
class _MayAlsoHold:
    """Bytes a partial-training method may hold beyond its figures (0 at the band's low end), and why."""
    weights: int
    grads: int
    states: int
    why: str


@record
class _PartialTraining:
    """What a partial-training method trains and keeps, as _model_states' inputs: the trained parameters, the bytes
    of optimizer state (k) and gradient (a) per trained parameter, the weights; ``grads`` / ``states``: totals that
    are no a x trained / k x trained; ``adam_states``: bytes per trained parameter whose second moment a foreach
    AdamW copies (None: k)."""
    trained: int
    k: float
    a: int
    what: str
    source: str
    weights: int
    weights_formula: str
    grads: int | None = None
    grads_formula: str = ""
    states: int | None = None
    states_formula: str = ""
    unsure: _MayAlsoHold | None = None
    extra: list = field(default_factory=list)
    adam_states: float | None = None


def _partial(r: RoleEstimate, arch: ModelArch, inp: _Inputs, ctx: dict, k: float, a: int, master: int,
             opt_bytes: float) -> _PartialTraining | None:
    """Freeze tuning, GaLore / APOLLO and BAdam (rlhf_lint.memory.tuning): what trains and what the optimizer keeps.
    None when every parameter trains with full states."""
    if inp.get("train.freeze_layers") is not None:
        return _freeze_part(r, arch, inp, ctx, k, a, master)
    if inp.get("train.projected_optimizer") in ("galore", "apollo"):
        name = inp.get("train.projected_optimizer")
        if not ctx["plain"]:
            # hparams/parser.py: "GaLore and APOLLO are incompatible with DeepSpeed yet"; FSDP's flat shards are
            # no matrices to project
            why = "LLaMA-Factory refuses it" if ctx.get("strategy") == "deepspeed" else "not modelled"
            inp.assumptions.append(f"{r.role}: {name} under {ctx.get('strategy')}: {why}; the figures count "
                                   f"full-size AdamW states")
            return None
        return _projected_part(r, arch, inp, ctx, k, master)
    if inp.get("train.block_optimizer") in ("layer", "ratio"):
        return _block_part(r, arch, inp, ctx, opt_bytes)
    if inp.get("train.freeze_vision") is True and arch.extra_params:
        return _frozen_vision_part(r, arch, ctx, k, a, master)
    return None


def _freeze_part(r: RoleEstimate, arch: ModelArch, inp: _Inputs, ctx: dict, k: float, a: int,
                 master: int) -> _PartialTraining:
    from rlhf_lint.memory import tuning

    layers = inp.get("train.freeze_layers")
    modules, extra = inp.get("train.freeze_modules"), inp.get("train.freeze_extra_modules")
    if type(layers) is int:
        t = tuning.freeze(arch, layers, modules, extra)
        which = f"the {'last' if layers > 0 else 'first'} {abs(layers)} layers"
    else:  # a count the launch does not give: the extra modules surely, any number of layers maybe
        t = tuning.freeze(arch, 0, modules, extra)
        every = tuning.freeze(arch, arch.num_layers, modules, extra)
        t = tuning.Trained(t.params, every.params + every.unsure - t.params, "freeze_trainable_layers not known")
        which = "an unknown number of layers"
    if t.note:
        inp.assumptions.append(f"{r.role}: {t.note}")
    out = _some_frozen(r, ctx, k, a, master, min(t.params, r.params), which, SRC_FREEZE)
    w, up = ctx["w"], _trained_weight_bytes(ctx, master)
    if t.unsure:
        out.unsure = _MayAlsoHold((up - w) * t.unsure, a * t.unsure, int(k * t.unsure),
                                  f"freeze tuning: {_count(t.unsure)} parameters may also train ({t.note})")
    return out


def _some_frozen(r: RoleEstimate, ctx: dict, k: float, a: int, master: int, trained: int, which: str,
                 source: str) -> _PartialTraining:
    """``trained`` of the role's parameters get gradients and optimizer states, the rest stays frozen in the
    weights' dtype."""
    w, P, up = ctx["w"], r.params, _trained_weight_bytes(ctx, master)
    return _PartialTraining(trained, k, a, f"{'' if ctx['plain'] else 'fp32 master + '}optimizer states of {which}",
                            source, w * (P - trained) + up * trained,
                            f"{w} B x {_count(P - trained)} frozen + {up} B x {_count(trained)} trained ({which})")


def _trained_weight_bytes(ctx: dict, master: int) -> int:
    """Bytes of a trained parameter: without DeepSpeed, LLaMA-Factory upcasts what trains to the master dtype."""
    return master if ctx["plain"] and master > ctx["w"] else ctx["w"]


def _frozen_vision_part(r: RoleEstimate, arch: ModelArch, ctx: dict, k: float, a: int,
                        master: int) -> _PartialTraining:
    """Full tuning of a multimodal model whose vision tower and projector are frozen (LLaMA-Factory's
    freeze_vision_tower, ms-swift's freeze_vit, both on by default): only the language model trains."""
    return _some_frozen(r, ctx, k, a, master, max(0, r.params - arch.extra_params), "the language model",
                        SRC_FROZEN_VISION)


def _projected_part(r: RoleEstimate, arch: ModelArch, inp: _Inputs, ctx: dict, k: float,
                    master: int) -> _PartialTraining:
    """GaLore / APOLLO without DeepSpeed: the weights and gradients of every parameter in the trained dtype; Adam
    moments of rank-r projections for the targeted matrices (r x the projected side each) and full-size ones for
    the rest; the stored projectors. Layer-wise, each parameter steps in its own gradient hook: one gradient at a
    time, and the step's copies land inside the backward."""
    from rlhf_lint.memory import tuning

    name = inp.get("train.projected_optimizer")
    rank = inp.get("train.projection_rank")
    proj_type = str(inp.get("train.projection_type") or "std")
    targets = inp.get("train.projection_targets")
    layerwise = inp.get("train.optimizer_layerwise") is True
    known = type(rank) is int and rank > 0
    p = tuning.projected(arch, rank if known else 1, targets, proj_type)
    if p.note:
        inp.assumptions.append(f"{r.role}: {p.note}")
    P = r.params
    states = int(k * p.moments_of) + master * p.projector
    unsure = int(k * p.unsure_moments)
    why = [p.note] if p.unsure_moments else []
    if not known:  # any rank: rank 1 at the low end, full-size projections in the figures
        full = tuning.projected(arch, 10**12, targets, proj_type)
        unsure += int(k * (full.moments_of - p.moments_of)) + master * (full.projector - p.projector)
        why.append("the projection rank is not known")
    svd = str(inp.get("train.projection_method") or ("svd" if name == "galore" else "random")) == "svd"
    f32 = dtype_bytes("fp32", 4)
    if svd and master >= f32:
        # fp32 parameters: the projector is a slice of the SVD factor (Vh[:r] / U[:, :r], no cast), which keeps the
        # whole factor alive (galore_torch galore_projector.py get_orthogonal_matrix)
        unsure += master * p.retained
        why.append("fp32 parameters: each projector may keep its whole SVD factor")
    src = SRC_GALORE if name == "galore" else SRC_APOLLO
    out = _PartialTraining(P, k, master, f"{name} rank {rank if known else '?'}", src, master * P,
                           f"{master} B x {_count(P)} params", states=states, adam_states=0,
                           states_formula=f"{name}: {k:g} B x ({_count(p.moments_of - p.unprojected)} projected + "
                                          f"{_count(p.unprojected)} full-size moment elements) + {master} B x "
                                          f"{_count(p.projector)} projector elements")
    if layerwise:
        out.grads = master * p.largest
        out.grads_formula = (f"layer-wise {name}: one {master} B gradient of at most {_count(p.largest)} elements "
                             f"at a time (stepped and freed in its hook)")
    if unsure:
        out.unsure = _MayAlsoHold(0, 0, unsure, "; ".join(why))
    # the step runs parameter by parameter: an SVD of the largest projected matrix when the projector is made or
    # renewed, and two full-size tensors of one parameter (exp_avg / denom, or the projected-back update and its
    # scaled copy)
    copies = K.projected_step_copies
    step = max(f32 * p.svd_workspace if svd else 0, copies * master * p.largest)
    formula = (f"{name}'s step, one parameter at a time: max(SVD workspace {f32} B x {_count(p.svd_workspace)}, "
               f"{copies} x {master} B x {_count(p.largest)})" if svd else
               f"{name}'s step, one parameter at a time: {copies} x {master} B x {_count(p.largest)}")
    out.extra.append(Term("optimizer_step", step, formula + (" inside the backward (layer-wise)" if layerwise
                                                                else ""), src, () if layerwise else (STEP,)))
    return out


def _block_part(r: RoleEstimate, arch: ModelArch, inp: _Inputs, ctx: dict, opt_bytes: float) -> _PartialTraining:
    """BAdam: Adam on one block at a time. Layer mode: a block is one decoder layer (BlockOptimizer's default block
    list; embeddings and LM head never train); without DeepSpeed it keeps an fp32 copy of the block, its fp32
    gradient at the step and fp32 Adam moments; under ZeRO-3 DeepSpeed partitions the block's fp32 states. Ratio mode
    (one GPU only): a share of every matrix's entries, sparse gradients and moments in the parameters' dtype."""
    from rlhf_lint.memory import tuning

    w, P, f32 = ctx["w"], r.params, dtype_bytes("fp32", 4)
    mode = inp.get("train.block_optimizer")
    if mode == "layer":
        B = tuning.largest_layer(arch)
        out = _PartialTraining(B, (f32 if w < f32 else 0) + opt_bytes, w if ctx["plain"] else ctx["a"],
                               "BAdam: fp32 copy + Adam states of one decoder layer", SRC_BADAM, w * P,
                               f"{w} B x {_count(P)} params (BAdam trains one layer at a time)",
                               adam_states=opt_bytes)
        if ctx["plain"] and w < f32:
            # _grad_to_hp: the block's fp32 gradients, each 16-bit one freed as it is converted
            out.extra.append(Term("optimizer_step", (f32 - w) * B, f"BAdam's fp32 gradients of the block "
                                     f"({f32} - {w}) B x {_count(B)}", SRC_BADAM, (STEP,)))
        return out
    ratio = inp.get("train.block_update_ratio")
    ratio = ratio if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0 < ratio <= 1 else 1.0
    T = int(ratio * (P - arch.embedding_params() - (0 if arch.tie_embeddings else arch.embedding_params())))
    index = K.sparse_index_bytes
    largest = tuning.largest_tensor(arch)
    return _PartialTraining(T, 2 * w, w, f"BAdam ratio {ratio:g}: sparse Adam", SRC_BADAM, w * P,
                            f"{w} B x {_count(P)} params", adam_states=0, grads=(w + index) * T + w * largest,
                            grads_formula=f"sparse gradients ({w} + {index} B index) x {_count(T)} + one dense {w} B "
                                          f"gradient of {_count(largest)} before its hook sparsifies it")


QUANTIZATIONS = ("4bit", "nf4", "fp4", "int4", "8bit", "int8")
SRC_DEQUANTIZE = ("https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.43.1/bitsandbytes/autograd/"
                  "_functions.py (MatMul4Bit: forward F.linear(A, F.dequantize_4bit(B, quant_state).to(A.dtype).t()); "
                  "backward the same dequantized weight for grad_A)")


def _dequantized_weight(arch: ModelArch, w: int) -> Term:
    """A quantized base computes each linear layer on a 16-bit copy of its weight, made for the matmul and freed after
    it (forward, recomputation and backward alike): at most the largest linear weight of a decoder layer at a time."""
    largest = arch.largest_linear_params()
    return Term("gathered_params", w * largest, f"quantized base: one linear weight dequantized to {w} B for its "
                                                f"matmul, the largest {_count(largest)} elements", SRC_DEQUANTIZE)


def _kbit_other_bytes(inp: _Inputs, ctx: dict, w: int, four: bool) -> tuple[int, str]:
    """(bytes, note) of a quantized base's parameters that are not quantized (embedding, LM head, norms): TRL's
    k-bit preparation casts them to fp32 without DeepSpeed, which would cast the module back; from TRL 0.7.5 a bf16
    run with a 4-bit base casts the embedding and the LM head back (schemas/hf/trl_kbit_upcast.json)."""
    from rlhf_lint.schemas import load

    if ctx.get("framework") != "trl" or not ctx["plain"]:
        return w, ""
    row = _release_row(load("hf/trl_kbit_upcast.json")["releases"], ctx.get("versions"), "trl")
    if row is None or not row["upcast"]:
        return w, ""
    bf16 = str(inp.get("precision.param_dtype", "") or "").lower() in ("bf16", "bfloat16")
    if row["bf16_4bit_back"] and bf16 and four:
        return w, ""
    return dtype_bytes("fp32", 4), f" (fp32: TRL {ctx['versions']['trl']}'s k-bit preparation)"


def _modules_to_save(arch: ModelArch, inp: _Inputs) -> tuple[int, str]:
    """(parameters, what) of the modules a LoRA job trains in full (PEFT modules_to_save): the embedding and the
    LM head by name (schemas/hf/lora_modules_to_save.json); a name the table does not size is said, not counted."""
    from rlhf_lint.schemas import load

    names = inp.get("train.lora_modules_to_save")
    if not names:
        return 0, ""
    if isinstance(names, str):
        names = tuple(n.strip() for n in names.split(","))
    table = load("hf/lora_modules_to_save.json")
    total, sized, unsized = 0, [], []
    for name in dict.fromkeys(str(n).strip() for n in names if str(n).strip()):
        module = name.rsplit(".", 1)[-1]
        if module in table["embedding"] or module in table["head"]:
            total += arch.embedding_params()
            sized.append(module)
        elif module not in table["small"]:
            unsized.append(module)
    if unsized:
        inp.assumptions.append(f"modules_to_save {', '.join(unsized)}: not sized (only the embedding and the LM head "
                               f"are)")
    return total, " and ".join(sized)


def _quantized(ctx: dict) -> bool:
    """The trained model's base is loaded quantized (QLoRA)."""
    return ctx["quantization"] in QUANTIZATIONS


def _quantization(inp: _Inputs) -> str:
    """The trained model's quantization: the launch's, else what a pre-quantized checkpoint's id says (GPTQ, AWQ,
    bnb-4bit: schemas/memory/quantized_checkpoints.json), else "none"."""
    import re

    from rlhf_lint.schemas import load

    given = inp.get("train.quantization")
    if given not in (None, "", "none"):
        return str(given).lower()
    path = inp.get("model.policy.path") or inp.get("model.actor.path")
    if not isinstance(path, str) or _int_of(inp.get("train.lora_rank"), 0) <= 0:
        return "none"
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    for row in load("memory/quantized_checkpoints.json")["patterns"]:
        if re.search(row["regex"], name):
            inp.assumptions.append(f"{path}: a pre-quantized checkpoint by its name ({row['bits']} base: its "
                                   f"config.json's quantization_config applies)")
            return row["bits"]
    return "none"


def _model_states(r: RoleEstimate, arch: ModelArch, inp: _Inputs, ctx: dict, shards: int | None = None) -> None:
    """Weights, gradients and optimizer states of a trained role under DeepSpeed ZeRO (or plain data parallelism,
    ``train.strategy`` ddp: ZeRO-0 without DeepSpeed's buffers); ``shards``: the GPUs ZeRO-3's layout divides by when
    not all of the role's (an FSDP shard group)."""
    stage, w, a, zero0 = ctx["stage"], ctx["w"], ctx["a"], ctx.get("zero0")
    sharding = "FSDP full shard" if ctx.get("accelerate_fsdp") else "ZeRO-3"  # the same layout of model states
    off_opt, off_param = ctx["offload_optimizer"], ctx["offload_param"]
    n, P = shards or r.gpus, r.params
    f32 = dtype_bytes("fp32", 4)
    opt, opt_bytes = optimizer_bytes(inp)
    # a master copy exists when the parameters train in a 16-bit dtype and the optimizer keeps fp32 (DeepSpeed and
    # torch AMP); bf16 weights trained by torch's AdamW directly (HF Trainer without DeepSpeed, bf16 weights) keep
    # no master and their moments in the parameters' dtype (torch.zeros_like(p))
    master_name = str(inp.get("precision.master_dtype", "fp32" if w == 2 else "") or "").lower()
    master = dtype_bytes(master_name, 4) if master_name else w
    if master == w and w < f32:
        k = opt_bytes * w / f32 if opt in MOMENT_OPTIMIZERS else opt_bytes
        what = f"{opt} states in the parameters' {w}-byte dtype, no master copy"
        src = SRC_TORCH_ADAMW
    elif ctx["plain"]:
        # torch AMP: the weights are kept in the master dtype and are themselves what the optimizer updates
        k = opt_bytes
        what = f"{opt} states; the {master_name or f'{w}-byte'} weights are the master copy (autocast)"
        src = SRC_TORCH_ADAMW
    else:
        k = (f32 if w < f32 else 0) + opt_bytes
        what = ("fp32 master + " if w < f32 else "") + f"{opt} states {opt_bytes:g} B"
        src = SRC_ZERO
    if ctx["plain"]:
        a = master  # torch keeps .grad in the dtype of the parameters it updates
    ep = max(1, _int_of(inp.get("train.expert_parallel_size"), 1))
    if ep > 1 and arch.num_experts:
        experts = arch.expert_params()
        P = r.params = P - experts + experts // ep
        inp.assumptions.append(f"{r.role}: expert parallel {ep}: each rank holds {arch.num_experts // ep or 1} of "
                               f"{arch.num_experts} experts per layer ({_count(P)} parameters per rank before ZeRO)")
    rank = _int_of(inp.get("train.lora_rank"), 0)
    quant = ctx["quantization"]
    T = P  # trained parameters
    if rank > 0:
        T = lora_params(arch, rank, inp.get("train.lora_targets"))
        if not inp.get("train.lora_targets"):
            inp.assumptions.append("LoRA adapters on every linear projection assumed (no target modules given)")
    quantized = quant in QUANTIZATIONS
    ad = w  # bytes of an adapter parameter
    saved, saved_note = _modules_to_save(arch, inp) if rank > 0 else (0, "")
    saved_w, saved_k = w, k  # bytes per parameter of the trainable copies: weight, optimizer state
    if rank > 0 and ctx["plain"]:
        # without DeepSpeed the adapters are what torch's optimizer updates, in their own dtype
        ad, ad_name, ad_why, src = _adapter_dtype(inp, ctx, quantized)
        a = ad
        k = opt_bytes * ad / f32 if opt in MOMENT_OPTIMIZERS else opt_bytes
        what = f"{opt} states of {ad_name} adapters; {ad_why}"
        # PEFT deep-copies a saved module in the base's dtype; a framework that upcasts what trains (LLaMA-Factory)
        # upcasts the copy too
        own = ctx.get("framework") == "llamafactory"
        saved_w = ad if own else w
        saved_k = opt_bytes * saved_w / f32 if opt in MOMENT_OPTIMIZERS else opt_bytes
    # freeze tuning, GaLore / APOLLO, BAdam: fewer trained parameters or smaller states (rlhf_lint.memory.tuning)
    part = _partial(r, arch, inp, ctx, k, a, master, opt_bytes) if rank == 0 else None
    if part is not None:
        T, k, a, what, src = part.trained, part.k, part.a, part.what, part.source
    r.trained_params = T + saved
    r.saved_params, r.saved_state_bytes = saved, saved_k
    # weights: the (frozen) base in its dtype or quantised, plus adapters
    linear = arch.num_layers * (arch.attention_params() + arch.ffn_params())
    linear = min(linear, P)
    if rank > 0 and quantized:
        four = quant not in ("8bit", "int8")
        qb = K.nf4_bytes_per_param if four else K.int8_bytes_per_param
        ow, why = _kbit_other_bytes(inp, ctx, w, four)
        base = int(linear * qb + (P - linear) * ow)
        wf = (f"{'4' if four else '8'}-bit base: {qb} B x {_count(linear)} linear + {ow} B x {_count(P - linear)} "
              f"other{why} + adapters {ad} B x {_count(T)}")
        wsrc = SRC_QLORA
    elif part is not None:
        base, wf, wsrc = part.weights, part.weights_formula, part.source
    else:
        base = (w if rank > 0 else master if ctx["plain"] and master > w else w) * P
        wf = f"{base // P} B x {_count(P)} params" + (f" (frozen) + adapters {ad} B x {_count(T)}" if rank > 0 else "")
        wsrc = SRC_LORA if rank > 0 else SRC_ZERO
    total_w = base + (ad * T if rank > 0 else 0)
    adt = ctx["a_name"] if not ctx["plain"] else f"{a}-byte"
    ts = _count(T) + (" adapter" if rank > 0 else "")
    G, gs = (part.grads, part.grads_formula) if part is not None and part.grads is not None else (a * T, "")
    S, ss = (part.states, part.states_formula) if part is not None and part.states is not None else (int(k * T), "")
    if saved:
        # modules_to_save: a trainable copy of each, with its gradient (in its own dtype without DeepSpeed, else
        # the accumulation dtype) and optimizer states
        saved_a = saved_w if ctx["plain"] else a
        total_w += saved_w * saved
        G += saved_a * saved
        S += int(saved_k * saved)
        wf += f" + trained copies of {saved_note}: {saved_w} B x {_count(saved)}"
        ts += f" + {_count(saved)} in the copies"
        inp.assumptions.append(f"{r.role}: modules_to_save trains copies of {saved_note} ({_count(saved)} "
                               f"parameters) beside the adapters")

    def emit(total_w: int, G: int, S: int) -> list[Term]:
        """Weights, gradients (in the accumulation dtype, of the trained parameters only) and optimizer states, laid
        out by the ZeRO stage."""
        if stage == 3:
            out = [Term("weights", 0 if off_param else total_w // n, "offloaded to CPU (offload_param)" if off_param
                        else f"{sharding}: ({wf}) / {n} GPUs", wsrc)]
        else:
            # a device_map split is not replicated: _split_over_devices gives the share of one GPU
            layout = "" if ctx.get("model_split", 1) > 1 else \
                f", replicated ({'DDP' if ctx['plain'] else f'ZeRO-{stage}'})"
            out = [Term("weights", total_w, f"{wf}{layout}", wsrc)]
        if off_opt and stage >= 1:
            out.append(Term("gradients", 0, f"partitioned {adt} gradients live in host RAM (offload_optimizer)",
                            SRC_DS_STAGE3 if stage == 3 else SRC_DS_STAGE12))
        elif stage == 0 and zero0 == "bf16_optimizer":
            out.append(Term("gradients", G, gs or f"BF16_Optimizer's fp32 gradient buffer {a} B x {ts}",
                            SRC_BF16_OPTIMIZER))
        elif stage == 0:
            out.append(Term("gradients", G, gs or f"{a} B ({adt}) x {ts}",
                            SRC_TORCH_ADAMW if ctx["plain"] else SRC_ZERO))
        elif stage == 1:
            out.append(Term("gradients", G, f"ZeRO-1 full {adt} grads {a} B x {ts} (fp32 partition: at the step)",
                            SRC_DS_STAGE12))
        elif stage == 2:
            out.append(Term("gradients", G // n, f"ZeRO-2 {a} B ({adt}) x {ts} / {n} (fp32 copy: at the step)",
                            SRC_DS_STAGE12))
        else:
            out.append(Term("gradients", G // n, f"{sharding} {a} B ({adt}) x {ts} / {n}", SRC_DS_STAGE3))
        if off_opt and stage >= 1:
            out.append(Term("optimizer_states", 0, f"{what} in host RAM (offload_optimizer={off_opt})", SRC_CPU_ADAM))
        elif stage == 0 and zero0 == "bf16_optimizer":
            out.append(Term("optimizer_states", S // n, f"{k:g} B ({what}) x {ts} / {n} (BF16_Optimizer splits the "
                                                        f"fp32 master and the optimizer states over the ranks)",
                            SRC_BF16_OPTIMIZER))
        elif stage == 0 and zero0 == "unknown" and n > 1:
            out.append(Term("optimizer_states", S // n, f"{k:g} B ({what}) x {ts} / {n}: the share BF16_Optimizer "
                                                        f"keeps (DeepSpeed before 0.17.6), held either way",
                            SRC_BF16_OPTIMIZER))
            out.append(Term("optimizer_states", S - S // n, f"the rest on every rank from DeepSpeed 0.17.6 "
                                                            f"(FP16_Optimizer): {gib(S - S // n)}",
                            SRC_FP16_OPTIMIZER, unsure=True))
        elif stage == 0:
            out.append(Term("optimizer_states", S, ss or f"{k:g} B ({what}) x {ts}", src))
        else:
            out.append(Term("optimizer_states", S // n, f"{k:g} B ({what}) x {ts} / {n}", src))
        return out

    terms = emit(total_w, G, S)
    r.terms += terms
    r.state_bytes, r.weight_bytes = S, total_w
    r.state_bytes_per_param = k
    if part is not None:
        more = part.unsure
        if more is not None:
            # what may also train (a module name the layout does not know): in the figures, 0 at the band's low end
            wider = emit(total_w + more.weights, G + more.grads, S + more.states)
            r.terms += [Term(t.name, u.bytes - t.bytes, f"{more.why}: {gib(u.bytes - t.bytes)} more", t.source,
                             unsure=True) for t, u in zip(terms, wider) if u.bytes > t.bytes]
        r.terms += part.extra
        r.state_bytes_per_param = k if part.adam_states is None else part.adam_states


def _zero0_wrapper(job, dtype: str, versions: dict | None, assumptions: list[str]) -> tuple[str | None, str | None]:
    """(the optimizer wrapper, the gradient accumulation dtype) of DeepSpeed without ZeRO (engine.py
    _do_optimizer_sanity_check). fp16 takes FP16_Optimizer. bf16 depends on the accumulation: fp32 (the default up to
    0.17.5) takes BF16_Optimizer, which keeps an fp32 gradient buffer of every parameter and splits the fp32 master
    and the optimizer states over the data-parallel ranks; bf16 (the default from 0.17.6) takes FP16_Optimizer's
    DDP_BFLOAT16 layout: bf16 gradients, the master and the states on every rank. "unknown": bf16 with the release
    not known, sized as 0.17.6 with BF16_Optimizer's share at the band's low end."""
    setting = job.settings.get("precision.grad_accum_dtype")
    given = setting is not None and isinstance(setting.value, str) \
        and not str(setting.origin or "").startswith("DeepSpeed default")  # not the ds_config reader's fill
    if dtype in ("fp16", "float16"):
        return "fp16_optimizer", setting.value if given else None
    if dtype not in ("bf16", "bfloat16"):
        return None, setting.value if given else None
    if given:
        return ("bf16_optimizer" if setting.value == "fp32" else "ddp_bfloat16"), setting.value
    release = _patch_release(versions, "deepspeed")  # the patch counts: 0.17.6 changed the default
    if release is not None:
        return ("ddp_bfloat16", "bf16") if release >= (0, 17, 6) else ("bf16_optimizer", "fp32")
    assumptions.append("DeepSpeed release not pinned: without ZeRO, bf16 training accumulates in bf16 and keeps the "
                       "fp32 master on every rank from 0.17.6 (the figure); before, BF16_Optimizer splits it over the "
                       "data-parallel ranks (the band's low end): set deepspeed-version")
    return "unknown", "bf16"


def _bucket(inp: _Inputs, arch: ModelArch, name: str, ctx: dict) -> int:
    """Elements of a ZeRO bucket: the ds_config's number; for "auto" under the HF Trainer, what accelerate fills in
    from the model's hidden size h (h x h reduce bucket, 0.9 h x h prefetch: SRC_ACCELERATE_AUTO); else DeepSpeed's
    default (DeepSpeed itself drops an "auto" it is handed: SRC_DS_AUTO)."""
    key, default, share = BUCKETS[name]
    given = _int_of(inp.get(key), 0)
    if given:
        return given
    if _is_auto(inp, name, ctx):
        return int(share * arch.hidden_size * arch.hidden_size)
    return getattr(K, default)


# ds_config bucket: (setting, the constant with DeepSpeed's default, share of h x h accelerate fills in for "auto")
BUCKETS = {"reduce_bucket_size": ("deepspeed.reduce_bucket_size", "reduce_bucket_elements", 1.0),
           "stage3_prefetch_bucket_size": ("deepspeed.prefetch_bucket_size", "prefetch_bucket_elements", 0.9)}


def _written_auto(inp: _Inputs, name: str) -> bool:
    auto = inp.get("deepspeed.auto_sizes")
    return isinstance(auto, tuple) and name in auto and not _int_of(inp.get(BUCKETS[name][0]), 0)


def _is_auto(inp: _Inputs, name: str, ctx: dict) -> bool:
    """An "auto" that accelerate fills: the launch goes through the HF Trainer."""
    return _written_auto(inp, name) and ctx.get("framework") in HF_TRAINERS


def _auto_note(inp: _Inputs, name: str, ctx: dict) -> tuple[str, str]:
    """(formula note, source suffix) for a bucket the ds_config leaves "auto"."""
    if _is_auto(inp, name, ctx):
        return ' ("auto": h x h, filled by accelerate)', f" ; {SRC_ACCELERATE_AUTO}"
    if _written_auto(inp, name):
        return ' ("auto": DeepSpeed keeps its default)', f" ; {SRC_DS_AUTO}"
    return "", ""


def _trainable_role(role: str, arch: ModelArch, params: int, n: int, inp: _Inputs, ctx: dict) -> RoleEstimate:
    stage, w = ctx["stage"], ctx["w"]
    f32 = dtype_bytes("fp32", 4)
    r = RoleEstimate(role, arch.name, params, n, True, arch=arch)
    _model_states(r, arch, inp, ctx)
    T = r.trained_params
    zero0 = ctx.get("zero0")
    if zero0 == "bf16_optimizer":  # its gradient partition is a view of the fp32 buffer: only the optimizer's copy
        _zero_client_adam_copy(r, inp, ctx, -(-T // n))
    elif zero0 in ("fp16_optimizer", "ddp_bfloat16", "unknown"):
        # FP16_Optimizer's step flattens the 16-bit gradients into an fp32 tensor beside the fp32 master; of an
        # unknown release's step only BF16_Optimizer's share is sure
        unknown = zero0 == "unknown"
        _step_term(r, f32 * T, f"flat fp32 gradient {f32} B x {_count(T)} made in step() (FP16_Optimizer)",
                   SRC_FP16_OPTIMIZER, unsure=unknown)
        _zero_client_adam_copy(r, inp, ctx, T, sure=-(-T // n) if unknown else T)
    # activations and logits of one micro batch
    b, tokens, how, bound = _ds_micro_tokens(inp, ctx, role, True)
    r.micro_tokens["training"] = (b * tokens, bound, how)
    lm_logits = role != "critic" and inp.get("model.lm_logits") is not False
    r.terms += _bounded(bound, _activation_terms(arch, b, tokens, ctx["checkpointing"], _flash(arch, inp, ctx) or bound,
                                                 w,
                                                 False, lm_logits, how, ctx["fused_loss"],
                                                 ctx.get("logit_tokens"), ctx.get("trl_logps", False),
                                                 ctx.get("model_split", 1), _loss_in_logits_dtype(arch, inp, ctx),
                                                 inp.flag("train.activation_offloading")))
    if _int_of(inp.get("train.lora_rank"), 0) > 0 and _quantized(ctx):
        r.terms.append(_dequantized_weight(arch, w))
    # DeepSpeed buffers: sizes from the ds_config (zero_optimization), accelerate's fill for "auto", DeepSpeed's
    # defaults when unset; a bucket never holds more than the trained parameters (LoRA)
    reduce = min(T, _bucket(inp, arch, "reduce_bucket_size", ctx))
    auto, auto_src = _auto_note(inp, "reduce_bucket_size", ctx)
    if ctx["plain"]:
        # DDP's gradient buckets (25 MB each) are within the runtime term; v is half of AdamW's m + v
        # foreach AdamW groups its tensors by dtype and copies v of one group at a time: the largest group
        groups: dict[float, int] = {}
        for v, count in ((r.state_bytes_per_param / 2, T - r.saved_params), (r.saved_state_bytes / 2, r.saved_params)):
            groups[v] = groups.get(v, 0) + count
        v, count = max(groups.items(), key=lambda vc: vc[0] * vc[1])
        _adam_step_term(r, inp, ctx, v, count)
    elif stage in (1, 2):
        buckets = K.overlap_comm_buckets if ctx["overlap_comm"] else 1
        r.terms.append(Term("deepspeed_buffers", buckets * reduce * w,
                            f"{buckets} reduce bucket(s) x {_sci(reduce)} elements{auto} x {w} B",
                            SRC_DS_STAGE12 + auto_src))
        if not ctx["offload_optimizer"]:
            # step() converts the 16-bit gradient partition to fp32
            _step_term(r, f32 * T // r.gpus, f"fp32 gradient partition {f32} B x {_count(T)} / {r.gpus}, made in "
                                             f"step()", SRC_DS_STAGE12)
            _zero_client_adam_copy(r, inp, ctx, -(-T // r.gpus))
    elif stage == 3:
        # the IPG reduce bucket is allocated when the optimizer is built and stays (stage3.py, "# IPG"); the
        # persistent small params stay gathered; the largest module's gathered 16-bit param and its full 16-bit
        # grad exist only while its backward runs (DeepSpeed's estimator: largest_layer_memory = 4 * L)
        small = arch.num_layers * arch.norms_per_layer * arch.hidden_size + arch.hidden_size
        prefetch = _bucket(inp, arch, "stage3_prefetch_bucket_size", ctx)
        live = _int_of(inp.get("deepspeed.max_live_parameters"), 0)
        if live:
            prefetch = min(prefetch, live)
        r.terms.append(Term("deepspeed_buffers", reduce * w + small * w,
                            f"reduce bucket {_sci(reduce)} elements{auto} x {w} B (allocated at optimizer init) + "
                            f"persistent small params {_count(small)} x {w} B", SRC_DS_STAGE3 + auto_src))
        largest = arch.largest_module_params()
        r.gather_one = w * largest
        # a gathered param is not released while its next use is within stage3_max_reuse_distance (1e9 elements
        # by default): at the forward/backward turn the last layers stay gathered, up to stage3_max_live_parameters
        # (partitioned_param_coordinator.py __params_to_release, fetch_sub_module)
        kept = max(largest, min(live or K.max_live_parameters_elements, K.max_reuse_distance_elements, r.params))
        if r.gpus == 1 and ctx["offload_param"] != "cpu":
            # one rank's partition is the whole parameter: nothing is gathered (row HZ3a peaks as HDb2 does). With
            # the parameters offloaded, each is fetched to the GPU and kept as on several GPUs (row HZ3o: its first
            # step, before the coordinator's trace, peaks 1.9 GiB lower than the next)
            r.terms.append(Term("gathered_params", 0, "one GPU: each partition is the whole parameter, nothing is "
                                                      "gathered (measured, bench/calibration/measured.json HZ3a)",
                                SRC_DS_COORDINATOR))
        else:
            r.terms.append(Term("gathered_params", w * kept + w * largest + prefetch * w,
                                f"{w} B x {_count(kept)} kept gathered (largest module or the live-parameter limit, "
                                f"reused within max_reuse_distance) + {w} B x {_count(largest)} largest module's full "
                                f"grad + prefetch {_sci(prefetch)} elements x {w} B", SRC_DS_COORDINATOR))
        if not ctx["offload_optimizer"]:
            # the optimizer step makes an fp32 copy of one sub-group's gradient partition at a time
            sub = min(_int_of(inp.get("deepspeed.sub_group_size"), 0) or K.sub_group_elements, -(-T // r.gpus))
            _step_term(r, f32 * sub, f"fp32 gradient copy of one sub-group {_sci(sub)} x {f32} B", SRC_DS_STAGE3)
            _zero_client_adam_copy(r, inp, ctx, sub)
    if ctx.get("trl_grpo") and role == "policy":
        r.terms += _trl_generate_terms(arch, b, tokens, r.params, r.gpus, inp, ctx)
    if stage in (1, 2) or (stage == 0 and zero0 != "bf16_optimizer"):  # BF16_Optimizer's fp32 buffer stays
        _fresh_gradients(r, inp)
    _split_over_devices(r, ctx)
    _runtime(r, ctx)
    r.resident = ["weights", "gradients", "optimizer_states", "deepspeed_buffers", "runtime"]
    return r


def _fresh_gradients(r: RoleEstimate, inp: _Inputs) -> None:
    """Gradients no micro batch keeps for the next. With one micro batch per optimizer step, the step frees them
    (zero_grad(set_to_none=True); ZeRO-1/2's partition in step()) and the backward writes them while it frees the
    loss's tensors and the activations: in the training phase (``backward_gradients``) they count only beyond those
    not sized at a length bound (shorter sequences would leave the gradients more room); the step reads them whole
    (``gradients``). Measured on one H200 (bench/calibration/measured.json): HDb2 and HZ2a peak with none of their
    gradients live, HDb2g and HZ2ag (two micro batches) hold them all. gradient_accumulation_steps not given: counted,
    the band's low end without them."""
    grads = [t for t in r.terms if t.name == "gradients" and t.bytes and (not t.phases or "training" in t.phases)]
    accumulate = _int_of(inp.get("batch.grad_accum"), 0)
    if not grads or accumulate > 1:
        return
    sure = sum(t.bytes for t in grads if not t.unsure)
    total = sum(t.bytes for t in grads)
    loss = sum(t.bytes - t.recomputed for t in r.terms
               if t.name in ("activations", "logits", "gathered_params") and not t.phases and not t.at_length_bound)
    live, live_all = max(0, sure - loss), max(0, total - loss)
    source = grads[0].source
    r.terms = [t for t in r.terms if not any(t is g for g in grads)]
    r.terms += [Term("gradients", t.bytes, f"{t.formula}, read in the step", t.source, (STEP,), unsure=t.unsure)
                for t in grads]
    why = (f"written during the backward as its tensors are freed: {gib(total)} counted beyond the loss's and the "
           f"activations' {gib(loss)}")
    r.terms.append(Term("backward_gradients", live, f"{why} (one micro batch per step: none kept between micro "
                                                    f"batches)", source, ("training",)))
    if live_all > live:
        r.terms.append(Term("backward_gradients", live_all - live, f"{why}: the part that may also train",
                            source, ("training",), unsure=True))
    if not accumulate and total > live_all:
        r.terms.append(Term("backward_gradients", total - live_all,
                            f"kept between micro batches if gradient_accumulation_steps > 1 (not given): "
                            f"{gib(total - live_all)}", source, ("training",), unsure=True))


def _trl_generate_terms(arch: ModelArch, b: int, tokens: int, params: int, n: int, inp: _Inputs,
                        ctx: dict) -> list[Term]:
    """GRPOTrainer without vLLM: the policy itself generates with HF `generate` (grpo_trainer.py,
    unwrap_model_for_generation), its generation phase. The KV cache of every sequence of the generation batch at
    prompt + completion tokens (DynamicCache, the model's dtype), the prefill forward over the prompts (one layer
    live, no grad) and, under ZeRO-3, the whole model gathered (ds3_gather_for_generation, default True). Sized at
    the length bound: a batch stops at its longest completion."""
    w = ctx["w"]
    seqs = b * _trl_generation_steps(b, n, inp, ctx)
    prompt = min(tokens, _int_of(inp.get("seq.prompt_max_len"), tokens))
    per_token = arch.kv_bytes_per_token(w, latent=False)
    kv = seqs * tokens * per_token
    units = max(activation_units(arch, False), activation_units(arch, True) if arch.num_experts else 0)
    prefill = int(seqs * prompt * arch.hidden_size * units)
    out = [Term("generate_kv_cache", kv, f"HF generate KV cache: {seqs} sequences x {tokens} tokens x {per_token} B "
                                        f"({arch.kv_formula(w, latent=False)})",
                SRC_HF_CACHE, phases=("generation",), at_length_bound=True),
           Term("generate_forward", prefill, f"prefill forward, one layer live: {seqs} x {prompt} prompt tokens x "
                                             f"{arch.hidden_size} x {units:.1f} B", SRC_TRL_GRPO,
                phases=("generation",), at_length_bound=True)]
    if ctx["stage"] == 3:  # GRPOConfig.ds3_gather_for_generation defaults to True
        whole = w * params
        out.append(Term("generate_gathered", whole - whole // n, f"ZeRO-3 gathers the whole model for generate "
                                                              f"(ds3_gather_for_generation): {w} B x {_count(params)} "
                                                              f"less the own partition", SRC_TRL_GRPO,
                        phases=("generation",)))
    return out


def _trl_generation_steps(b: int, n: int, inp: _Inputs, ctx: dict) -> int:
    """Micro batches GRPOTrainer generates at once on each GPU: since TRL 0.17 the whole accumulated batch
    (grpo_trainer.py _prepare_inputs: generate_every = gradient_accumulation_steps x num_iterations, trl PR #3283);
    since 0.18 steps_per_generation (default gradient_accumulation_steps) or generation_batch_size / (b x GPUs);
    before 0.17 one micro batch."""
    steps = _int_of(inp.get("trl.steps_per_generation"), 0)
    if steps > 0:
        return steps
    total = _int_of(inp.get("trl.generation_batch_size"), 0)
    if total > 0 and total % (b * n) == 0:
        return total // (b * n)
    release = _release(ctx["versions"], "trl")
    if release is not None and release < (0, 17):
        return 1
    return max(1, _int_of(inp.get("batch.grad_accum"), 1))


def _inference_role(role: str, arch: ModelArch, params: int, n: int, inp: _Inputs, ctx: dict) -> RoleEstimate:
    stage, w = ctx["eval_stage"], ctx["w"]
    r = RoleEstimate(role, arch.name, params, n, False, phase="experience")
    offloaded = ctx[f"offload_{role}"]
    if offloaded:
        r.terms.append(Term("weights", 0, f"offloaded to CPU (--{role}_offload), gathered layer by layer",
                            SRC_DS_MEMORY))
    elif stage == 3:
        r.terms.append(Term("weights", w * params // n, f"ZeRO-3: {w} B x {_count(params)} / {n} GPUs", SRC_ZERO))
    else:
        r.terms.append(Term("weights", w * params, f"{w} B x {_count(params)} (inference models get ZeRO-0 unless "
                                                   f"training uses ZeRO-3)", SRC_ZERO))
    b, tokens, how, bound = _ds_micro_tokens(inp, ctx, role, False)
    r.micro_tokens["experience"] = (b * tokens, bound, how)
    r.terms += _bounded(bound, _activation_terms(arch, b, tokens, True, _flash(arch, inp, ctx) or bound, w, True,
                                                 role == "ref", f"forward {how}",
                                                 logit_seq=ctx.get("logit_tokens")))
    if stage == 3 or offloaded:
        prefetch = _bucket(inp, arch, "stage3_prefetch_bucket_size", ctx)
        r.terms.append(Term("gathered_params", w * arch.largest_module_params() + prefetch * w,
                            f"{w} B x largest module {_count(arch.largest_module_params())} (gathered for its "
                            f"forward) + prefetch {_sci(prefetch)} x {w} B", SRC_DS_MEMORY))
    _split_over_devices(r, ctx)
    _runtime(r, ctx)
    r.resident = ["weights", "runtime"]
    return r


# -- FSDP (verl's fsdp_workers) -----------------------------------------------------------------------------------
SRC_VERL_DTYPE = f"{SRC_VERL}/workers/fsdp_workers.py#L324-L328"  # actor fp32, others bf16 (model_dtype)
SRC_VERL_CRITIC_DTYPE = f"{SRC_VERL}/workers/fsdp_workers.py#L1292"
SRC_VERL_OFFLOAD = f"{SRC_VERL}/workers/fsdp_workers.py#L907-L944"  # update_actor loads parked states back
SRC_VERL_REF_CPU = f"{SRC_VERL}/workers/fsdp_workers.py#L515-L518"  # CPUOffload forced for every non-actor role
SRC_VERL_V01_FSDP = "https://github.com/volcengine/verl/blob/v0.1/verl/trainer/ppo/workers/fsdp_workers.py"
SRC_VERL_OLD_VLLM = ("https://github.com/volcengine/verl/blob/v0.3.0.post1/verl/third_party/vllm/vllm_v_0_6_3/"
                     "worker.py (num_gpu_blocks = free_gpu_memory * gpu_memory_utilization); docs/examples/config.rst")
SRC_VERL_ZERO_GRAD = f"{SRC_VERL}/workers/actor/dp_actor.py#L555"  # gradients freed after update_policy
SRC_REFERENCE_FREE = ("https://github.com/hiyouga/LLaMA-Factory/blob/v0.9.5/src/llamafactory/hparams/finetuning_args.py#L574 "
                      "(use_ref_model: stage dpo and pref_loss not orpo / simpo); https://github.com/huggingface/trl/"
                      "blob/v0.23.0/trl/trainer/cpo_trainer.py (CPOTrainer and ORPOTrainer take no ref_model)")
SRC_TRL_PRECOMPUTE = ("https://github.com/huggingface/trl/blob/v0.23.0/trl/trainer/dpo_trainer.py#L337-L341 "
                      "(ref_model None for a PEFT model or precompute_ref_log_probs; v0.29.0 keeps a reference model "
                      "unless PEFT)")
SRC_MEGATRON_LORA_REFERENCE = ("https://github.com/modelscope/ms-swift/blob/v4.5.2/swift/megatron/trainers/"
                               "rlhf_mixin.py#L27-L45 (a reference model for full tuning only)")
SRC_LORA_REFERENCE = ("https://github.com/huggingface/trl/blob/v0.23.0/trl/trainer/dpo_trainer.py (ref_model None for a "
                      "PEFT model: null_ref_context disables the adapters); https://github.com/hiyouga/LLaMA-Factory/"
                      "blob/v0.9.5/src/llamafactory/train/trainer_utils.py#L136-L138 (create_ref_model: None for LoRA)")
SRC_BF16_OPTIMIZER = ("https://github.com/deepspeedai/DeepSpeed/blob/v0.14.2/deepspeed/runtime/bf16_optimizer.py#L113-L182 "
                      "(fp32_groups_flat_partition: the fp32 master split over the data-parallel group; "
                      "fp32_groups_gradients_flat: an fp32 gradient buffer of every parameter)")
SRC_FP16_OPTIMIZER = ("https://github.com/deepspeedai/DeepSpeed/blob/v0.17.6/deepspeed/runtime/fp16/fused_optimizer.py "
                      "(DDP_BFLOAT16 from engine.py: full fp32_groups_flat; step() flattens the gradients to fp32)")
SRC_DS_AUTO = ("https://github.com/deepspeedai/DeepSpeed/blob/v0.14.2/deepspeed/runtime/config_utils.py#L53-L55 "
               "(DeepSpeedConfigModel drops \"auto\" values: the field keeps its default)")
SRC_ACCELERATE_AUTO = ("https://github.com/huggingface/accelerate/blob/v1.14.0/src/accelerate/accelerator.py#L2288-L2320 "
                       "(\"auto\" reduce_bucket_size = h x h, stage3_prefetch_bucket_size = 0.9 h x h)")
SRC_TRAINER_ZERO_GRAD = ("https://github.com/huggingface/transformers/blob/v4.46.0/src/transformers/trainer.py "
                         "(_inner_training_loop: model.zero_grad() after optimizer.step())")
SRC_VERL_DYNAMIC = f"{SRC_VERL}/workers/actor/dp_actor.py#L440-L447"  # token budget x SP, sliced over SP ranks
SRC_VERL_LOGPROB = f"{SRC_VERL}/utils/torch_functional.py#L72-L122"  # flash-attn cross entropy, in-place backward
SRC_VERL_ENTROPY = f"{SRC_VERL}/utils/torch_functional.py#L224-L262"  # softmax of the logits; chunked variant
SRC_ACC_FSDP_LOADING = ("https://github.com/huggingface/accelerate/blob/16cb6eb8/src/accelerate/utils/dataclasses.py"
                        " (FullyShardedDataParallelPlugin.cpu_ram_efficient_loading)")
SRC_TRL_PREPARE_FSDP = "https://github.com/huggingface/trl/blob/f2cd5771/trl/models/utils.py#L276"  # prepare_fsdp
SRC_FSDP = "https://pytorch.org/docs/stable/notes/fsdp.html"  # unshard one unit at a time, root kept, prefetch
# CPUOffload(offload_params=True): "offloads gradients to CPU as well, meaning that the optimizer step runs on CPU"
SRC_FSDP_OFFLOAD = "https://github.com/pytorch/pytorch/blob/v2.5.0/torch/distributed/fsdp/api.py (CPUOffload)"


def _per_role(inp: _Inputs, role: str, key: str, default=None):
    """``<family>.<role>.<rest>`` when the launch sets it for this role (verl's critic), else ``key`` itself."""
    family, _, rest = key.partition(".")
    own = inp.get(f"{family}.{role}.{rest}")
    return own if own is not None else inp.get(key, default)


def _int_of(value, default: int) -> int:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else default
    except (TypeError, ValueError):
        return default


def _fsdp_micro_tokens(inp: _Inputs, role: str, seq: int, training: bool) -> tuple[int, str, bool]:
    """(tokens, how, at a bound) of one micro batch on one GPU. verl's token-budget batching packs sequences up to
    ``*max_token_len_per_gpu`` x SP tokens and Ulysses SP slices them over the SP ranks (the budget is filled only
    when the mini batch holds that many real tokens); otherwise a micro batch is ``micro`` whole sequences: exactly
    micro x (prompt + response) tokens when padded, at most that when padding is removed. Only the padded count is
    certain; the others depend on the lengths the data and the rollout produce."""
    sp = max(1, _int_of(_per_role(inp, role, "train.sequence_parallel_size"), 1))
    micro = "batch.micro_train" if training else "batch.micro_forward"
    mb = inp.get(micro) if role == "actor" and training else _per_role(inp, role, micro)
    unpadded = _per_role(inp, role, "train.remove_padding") is not False or inp.flag("seq.max_len_truncates")
    budget = _verl_token_budget(inp, role, training)
    if budget:
        # a budget, not a count: micro batches fill it only when the mini batch holds that many real tokens
        return budget, f"token budget {budget} per GPU (dynamic batch size)", True
    if mb is None and not training:
        mb = inp.get("batch.micro_train")  # forward micro batches left unset take the training one
    b = _int_of(mb, 0)
    if b <= 0:
        b = 1
        inp.assumptions.append(f"{role}: micro batch 1 assumed ({'training' if training else 'forward'})")
    tokens = -(-b * seq // sp)
    how = f"micro batch {b} x {seq} tokens" + (f" / SP {sp}" if sp > 1 else "")
    if unpadded:
        how += " if every sequence reaches the length bound, padding removed"
    else:
        how += " (padded to the maximum lengths)"
    return tokens, how, unpadded


def _verl_token_budget(inp: _Inputs, role: str, training: bool) -> int:
    """verl's token budget per GPU of a role's micro batches (use_dynamic_bsz), 0 without one."""
    if training:
        dynamic, budget = "batch.dynamic", "batch.max_tokens_per_gpu"
    else:
        dynamic, budget = "batch.forward_dynamic", "batch.forward_max_tokens_per_gpu"
    if role == "actor" and training:
        is_dynamic, tokens = inp.flag(dynamic), inp.get(budget)
    else:
        is_dynamic = _per_role(inp, role, dynamic) is True or (
            _per_role(inp, role, dynamic) is None and inp.flag("batch.dynamic"))
        tokens = _per_role(inp, role, budget)
    return int(tokens) if is_dynamic and _int_of(tokens, 0) > 0 else 0


def _bounded(bound: bool, terms: list[Term]) -> list[Term]:
    for t in terms:
        t.at_length_bound = bound
    return terms


def _fsdp_units(arch: ModelArch) -> tuple[int, int]:
    """(root unit, one decoder layer): verl wraps each decoder layer as an FSDP unit; the embedding, LM head and
    final norm stay in the root unit."""
    root = arch.embedding_params() + (0 if arch.tie_embeddings else arch.vocab_size * arch.hidden_size)
    root += arch.hidden_size + arch.position_embeddings * arch.hidden_size
    return root, arch.layer_params()


def _fsdp_unit_numels(arch: ModelArch) -> list[int]:
    """Elements of each FSDP unit when every decoder layer is one (the root unit first)."""
    root, layer = _fsdp_units(arch)
    return [root] + [layer] * arch.num_layers


def _whole_model(pieces: list[int], params: int) -> list[int]:
    """``pieces`` (tensors or FSDP units) when they add up to ``params`` within 1%: the shapes of a full model;
    else [] (adapters, a frozen tower, a model read by size: their shapes are not read)."""
    return pieces if pieces and abs(sum(pieces) - params) <= params // 100 else []


def _rounded_blocks(pieces: list[int], total: float) -> int:
    """``total`` bytes spread over ``pieces`` by their sizes, each piece its own pinned block rounded up to a power
    of two (torch's pinned host allocator)."""
    per_element = total / sum(pieces)
    return sum(_pow2(int(-(-piece * per_element // 1))) for piece in pieces)


def _offloaded_blocks(t: Term, arch: ModelArch, params: int, inp: _Inputs, ctx: dict) -> int:
    """Host bytes of one model-state term under CPUOffload(offload_params=True): FSDP1 pins each unit's parameter
    shard and allocates a pinned gradient shard of the same size (FlatParamHandle.init_flat_param_attributes);
    FSDP2's CPUOffloadPolicy pins each parameter's shard and copies its gradient shard to the host without blocking
    (a pinned copy). Each block is rounded up to a power of two (torch's pinned allocator); the optimizer's moments
    are plain CPU tensors. A full fine-tune only: the shapes of LoRA or frozen layers are not read."""
    if t.name not in ("weights", "gradients") or not t.bytes or not _pinned_blocks_round(ctx.get("versions")):
        return t.bytes
    fsdp2 = ctx.get("strategy") == "fsdp2" or inp.get("train.strategy") == "fsdp2"
    pieces = _whole_model(arch.tensor_numels() if fsdp2 else _fsdp_unit_numels(arch), params)
    return _rounded_blocks(pieces, t.bytes) if pieces else t.bytes


def _fsdp_shards(inp: _Inputs, n: int) -> int:
    size = _int_of(inp.get("train.fsdp_size"), -1)
    return size if 0 < size < n else n


def _fsdp_full_states(r: RoleEstimate, inp: _Inputs, ctx: dict, role: str, shards: int, lora: bool,
                      off_param: bool, off_opt: bool, trained: int | None = None) -> None:
    """verl's FSDP states (and accelerate's for a full fine-tune): parameters in the master dtype (fp32 unless set),
    the gradients and optimizer states of the ``trained`` ones (all unless a vision tower is frozen), sharded; verl's
    LoRA adapters are neglected."""
    P, f32 = r.params, dtype_bytes("fp32", 4)
    T = P if trained is None else trained
    which = "" if T == P else " (the language model; the vision tower is frozen)"
    master = str(_per_role(inp, role, "precision.master_dtype", "fp32") or "fp32").lower()
    m = dtype_bytes(master, 4)
    src_dtype = SRC_VERL_DTYPE if role == "actor" else SRC_VERL_CRITIC_DTYPE
    parked = ("experience", "training", STEP) if role == "actor" else ("training", STEP)
    r.terms.append(Term("weights", m * P // shards, f"{master} parameters {m} B x {_count(P)} / {shards} GPUs"
                        + (" (param_offload: parked in host RAM, loaded back while the model computes)"
                           if off_param else ""), src_dtype, parked if off_param else ()))
    if lora:
        r.terms.append(Term("gradients", 0, "LoRA: only the adapters train (their gradients are neglected)",
                            SRC_VERL_ZERO_GRAD, ("training",)))
        r.terms.append(Term("optimizer_states", 0, "LoRA: Adam moments of the adapters only (neglected)",
                            SRC_VERL_OFFLOAD))
        return
    freed, src_freed = (("the Trainer's model.zero_grad() after each optimizer step", SRC_TRAINER_ZERO_GRAD)
                        if ctx.get("accelerate_fsdp") else ("zero_grad at the end of update_policy", SRC_VERL_ZERO_GRAD))
    r.terms.append(Term("gradients", m * T // shards,
                        f"{master} gradient shard {m} B x {_count(T)}{which} / {shards}, freed after the update "
                        f"({freed})", src_freed, ("training", STEP)))
    opt, opt_bytes = optimizer_bytes(inp)
    # torch optimizers keep states in the parameters' dtype; 8-bit ones their own
    states = int(opt_bytes * m / f32 * T) if opt in MOMENT_OPTIMIZERS else int(opt_bytes * T)
    r.terms.append(Term("optimizer_states", states // shards,
                        f"{opt} states {states / max(T, 1):g} B x {_count(T)}{which} / {shards} (the {master} "
                        f"parameters are the master copy)"
                        + (" (optimizer_offload: parked in host RAM, loaded back for the update)" if off_opt else ""),
                        SRC_VERL_OFFLOAD, ("training", STEP) if off_opt else ()))
    if opt in ADAM_OPTIMIZERS and not (ctx.get("accelerate_fsdp") and off_param):
        # under accelerate's CPUOffload the step runs on the CPU; verl loads its parked shards back for it
        _adam_step_term(r, inp, ctx, m, T // shards)


def _fsdp_trainable_role(role: str, arch: ModelArch, params: int, n: int, inp: _Inputs, ctx: dict) -> RoleEstimate:
    """An FSDP (FULL_SHARD) actor or critic of verl: its fp32 master parameters, fp32 gradients and Adam moments are
    sharded over the role's GPUs; the bf16 copy of one wrap unit is gathered at a time."""
    r = RoleEstimate(role, arch.name, params, n, True, arch=arch)
    P, shards, c = params, _fsdp_shards(inp, n), K.fsdp_compute_bytes
    f32 = dtype_bytes("fp32", 4)
    off_param = str(_per_role(inp, role, "offload.param", "none")) == "cpu"
    off_opt = str(_per_role(inp, role, "offload.optimizer", "none")) == "cpu"
    lora = _int_of(inp.get("train.lora_rank"), 0) > 0 and role in ("actor", "policy")
    quantized = ctx["quantization"] != "none"
    # freeze tuning or a frozen vision tower: like LoRA, part of the model is frozen
    frozen = inp.get("train.freeze_layers") is not None or (inp.get("train.freeze_vision") is True
                                                             and bool(arch.extra_params))
    if ctx.get("accelerate_fsdp") and (lora or quantized or frozen):
        # FULL_SHARD holds what ZeRO-3 holds: the frozen base in its loaded dtype (or 4/8-bit), the adapters with
        # their gradients and optimizer states, every one sharded (rather than verl's fp32 actor)
        _model_states(r, arch, inp, dict(ctx, stage=3, offload_param=None, offload_optimizer=None), shards)
    else:
        # verl's actor.freeze_vision_tower: the tower keeps its fp32 shards but gets no gradients or Adam states
        frozen_tower = role == "actor" and inp.get("train.freeze_vision") is True and arch.extra_params
        _fsdp_full_states(r, inp, ctx, role, shards, lora, off_param, off_opt,
                          P - arch.extra_params if frozen_tower else None)
    root, layer = _fsdp_units(arch)
    if inp.get("train.fsdp_reshard_after_forward") is False:
        # SHARD_GRAD_OP / reshard_after_forward false: every unit gathered in forward stays until its backward
        r.terms.append(Term("gathered_params", c * (P + root) + (c + f32) * layer,
                            f"every bf16 unit gathered in forward kept for backward (no reshard after forward), "
                            f"{c} B x {_count(P)}; the root unit's bf16 gradient {c} B x {_count(root)}; one layer's "
                            f"unsharded gradient and its fp32 copy ({c}+{f32}) B x {_count(layer)}", SRC_FSDP))
    elif lora or quantized:
        # a frozen base has no gradients to unshard: only the adapters' (counted with the model states)
        r.terms.append(Term("gathered_params", c * (root + 2 * layer),
                            f"bf16 root unit {_count(root)} (embedding, LM head: gathered through forward and "
                            f"backward) + current and prefetched decoder layer {c} B x 2 x {_count(layer)}; the "
                            f"frozen base has no gradients to unshard", SRC_FSDP))
    else:
        r.terms.append(Term("gathered_params", c * (2 * root + 2 * layer) + (c + f32) * layer,
                            f"bf16 root unit {_count(root)} (embedding, LM head: gathered through forward and "
                            f"backward) + its bf16 gradient, {c} B x 2 x {_count(root)}; current + prefetched decoder "
                            f"layer {c} B x 2 x {_count(layer)}; one layer's unsharded gradient and its fp32 copy for "
                            f"the reduce-scatter ({c}+{f32}) B x {_count(layer)}", SRC_FSDP))
    seq, V = ctx["seq"], arch.vocab_size
    # verl compiles the entropy by default, on its padding-free path only (dp_actor.py: the padded path calls
    # entropy_from_logits itself)
    compiled = inp.get("train.torch_compile", True) is not False and \
        _per_role(inp, role, "train.remove_padding") is not False
    checkpointing = _per_role(inp, role, "train.gradient_checkpointing") is True
    if ctx.get("accelerate_fsdp"):
        # the HF Trainer's forward and loss are the same under FSDP as under DDP or ZeRO: the same terms
        b, tokens, how, bound = _ds_micro_tokens(inp, ctx, role, True)
        r.micro_tokens["training"] = (b * tokens, bound, how)
        r.terms += _bounded(bound, _activation_terms(arch, b, tokens, checkpointing, _flash(arch, inp, ctx) or bound, c,
                                                     False, role != "critic", how, ctx["fused_loss"],
                                                     ctx.get("logit_tokens"), ctx.get("trl_logps", False),
                                                     offloaded=inp.flag("train.activation_offloading")))
        if ctx.get("trl_grpo") and role == "policy":
            # GRPO without vLLM generates with the FSDP model itself: units gathered one at a time, as in forward
            r.terms += _trl_generate_terms(arch, b, tokens, r.params, r.gpus, inp, ctx)
        if off_param:
            # CPUOffload(offload_params=True): parameter and gradient shards stay on the CPU and the optimizer steps
            # there; the GPU holds the gathered units only (not verl's park-and-reload)
            moved = ("weights", "gradients", "optimizer_states")
            full = not (lora or quantized or frozen)  # the unit shapes of a full fine-tune
            held = {t.name: 0 for t in r.terms if t.name in moved}
            for t in r.terms:
                if t.name in moved:
                    held[t.name] += _offloaded_blocks(t, arch, params, inp, ctx) if full else t.bytes
            if ctx.get("strategy") != "fsdp2" and "weights" in held:
                # FSDP1 pins a gradient shard the size of each unit's whole parameter shard, frozen parts included
                # (FlatParamHandle.init_flat_param_attributes: _cpu_grad = zeros_like(_local_shard).pin_memory())
                held["gradients"] = held["weights"]
            r.host_states = sum(held.values())
            r.terms = [Term(t.name, 0, f"in host RAM (fsdp_offload_params): {gib(t.bytes)} per rank", SRC_FSDP_OFFLOAD)
                       if t.name in moved else t for t in r.terms]
        _fresh_gradients(r, inp)
        _runtime(r, ctx)  # no verl experience phase: TRL's log-prob passes are forwards of the training micro batch
        r.resident = ["runtime"] + [t.name for t in r.terms if t.name in ("weights", "optimizer_states")
                                    and not t.phases]
        return r
    tokens, how, bound = _fsdp_micro_tokens(inp, role, seq, True)
    r.micro_tokens["training"] = (tokens, bound, how)
    r.terms += _bounded(bound, _activation_terms(arch, 1, tokens, checkpointing, True, c, False, False,
                                                 f"{tokens} tokens: {how}"))
    lm_logits = role != "critic" and inp.get("model.lm_logits") is not False
    if lm_logits and inp.flag("train.fused_loss"):
        # chunked log-probs (Liger's fused linear cross entropy): no full logits, one chunk ~ tokens x h
        r.terms.append(Term("logits", tokens * arch.hidden_size * (f32 + c), f"fused/chunked loss: one fp32 chunk ~ "
                            f"{tokens} x {arch.hidden_size} x {f32} B + the hidden-state gradient x {c} B", SRC_LIGER,
                            at_length_bound=bound))
    elif lm_logits:
        logits = tokens * V * c
        what = (f"{tokens} x {V} x {c} B bf16 logits (flash-attn cross entropy computes log-probs and writes its "
                f"gradient in place)")
        coeff = inp.get("train.entropy_coeff", 0)
        if (isinstance(coeff, (int, float)) and coeff != 0 and not inp.flag("train.entropy_checkpointing")
                and not compiled):
            logits += tokens * V * c
            what += f" + the softmax kept for the entropy bonus ({tokens} x {V} x {c} B, entropy not compiled)"
        r.terms.append(Term("logits", logits, what, SRC_VERL_LOGPROB, at_length_bound=bound))
    # the experience phase: the actor recomputes log-probs (and entropy), the critic its values, without grad
    f_tokens, f_how, f_bound = _fsdp_micro_tokens(inp, role, seq, False)
    r.micro_tokens["experience"] = (f_tokens, f_bound, f_how)
    r.terms += [Term(t.name, t.bytes, t.formula, t.source, ("experience",), f_bound) for t in
                _activation_terms(arch, 1, f_tokens, True, True, c, True, False, f"{f_tokens} tokens: {f_how}")]
    if role != "critic":
        chunked = inp.flag("train.entropy_chunking")
        if compiled:
            entropy, note = 0, "entropy fused by torch.compile (use_torch_compile): no vocabulary-sized temporaries"
        elif chunked:
            rows = K.entropy_chunk_rows
            entropy, note = 2 * rows * V * f32, f"entropy in chunks of {rows} rows in fp32: 2 x {rows} x {V} x {f32} B"
        else:
            entropy, note = 2 * f_tokens * V * c, f"entropy softmax and product: 2 x {f_tokens} x {V} x {c} B"
        r.terms.append(Term("logits", f_tokens * V * c + entropy, f"{f_tokens} x {V} x {c} B logits + {note}",
                            SRC_VERL_ENTROPY, ("experience",), f_bound))
    r.terms.append(Term("gathered_params", c * (root + 2 * layer),
                        f"bf16 root unit {_count(root)} + current and prefetched layer 2 x {_count(layer)}, "
                        f"x {c} B (forward only)", SRC_FSDP, ("experience",)))
    _runtime(r, ctx)
    r.resident = ["runtime"] + [t.name for t in r.terms if t.name in ("weights", "optimizer_states") and not t.phases]
    return r


def _fsdp_inference_role(role: str, arch: ModelArch, params: int, n: int, inp: _Inputs, ctx: dict) -> RoleEstimate:
    """verl's reference (and reward) model: FSDP with CPUOffload forced, so its bf16 shards live in host RAM and each
    unit is gathered onto the GPU for its forward."""
    r = RoleEstimate(role, arch.name, params, n, False, phase="experience")
    c = K.fsdp_compute_bytes
    if ctx.get("accelerate_fsdp"):
        on_gpu = str(inp.get("offload.param", "none")) != "cpu"
        why, source = f"TRL prepares the {role} with the policy's FSDP plugin", SRC_TRL_PREPARE_FSDP
    else:
        on_gpu = inp.get("verl.inference_cpu_offload") is False
        why, source = f"verl before 0.2 wraps the {role} without CPUOffload", SRC_VERL_V01_FSDP
    if on_gpu:
        shards = _fsdp_shards(inp, n)
        r.terms.append(Term("weights", c * params // shards, f"bf16 shards {c} B x {_count(params)} / {shards} GPUs "
                            f"({why})", source))
    else:
        r.terms.append(Term("weights", 0, f"bf16 shards in host RAM (verl forces FSDP CPUOffload for the {role})"
                            if not ctx.get("accelerate_fsdp") else "bf16 shards in host RAM (fsdp_offload_params)",
                            SRC_VERL_REF_CPU))
    root, layer = _fsdp_units(arch)
    r.terms.append(Term("gathered_params", c * (root + 2 * layer),
                        f"bf16 root unit {_count(root)} + current and prefetched layer 2 x {_count(layer)}, x {c} B",
                        SRC_FSDP))
    tokens, how, bound = _fsdp_micro_tokens(inp, role, ctx["seq"], False)
    r.micro_tokens["experience"] = (tokens, bound, how)
    r.terms += _bounded(bound, _activation_terms(arch, 1, tokens, True, True, c, True, False,
                                                 f"{tokens} tokens: {how}"))
    if role == "ref":
        r.terms.append(Term("logits", tokens * arch.vocab_size * c,
                            f"{tokens} x {arch.vocab_size} x {c} B bf16 logits (no entropy for the reference)",
                            SRC_VERL_LOGPROB, at_length_bound=bound))
    _runtime(r, ctx)
    r.resident = ["weights", "runtime"]
    return r


# the caching allocator's slack comes from blocks freed and requested again at other sizes: the tensors of a forward
# and backward and of the optimizer step; weights, gradients, optimizer states and buckets are allocated once
CHURNING = ("activations", "logits", "gathered_params", "optimizer_step")


# -- Megatron-Core (ms-swift `megatron sft|rlhf`): the layout's arithmetic is rlhf_lint.memory.megatron's -----------
def _megatron_tokens(inp: _Inputs, ctx: dict, lay) -> tuple[int, str]:
    """Tokens of one micro batch on one rank: micro batch x length (a DPO pair is two sequences) over the context-
    parallel ranks. ms-swift truncates at max_length and, padding-free or packed, fills a micro batch with its
    samples' own tokens: the length is a bound."""
    micro = ctx["micro_train"] * (2 if ctx["paired"] else 1)
    seq = ctx["seq"]
    tokens = -(-micro * seq // lay.cp)
    how = f"micro batch {micro} x {seq} tokens" + (f" / CP {lay.cp}" if lay.cp > 1 else "")
    how += ", packed" if inp.flag("train.packing") else ", padding-free" if inp.flag("train.remove_padding") else \
        ", padded to the longest sample"
    return tokens, how + ": at most this many tokens"


def _megatron_stage_terms(arch: ModelArch, stage, lay, tokens: int, how: str, w: int, inp: _Inputs, ctx: dict,
                          training: bool) -> list[Term]:
    """Activations and logits of one pipeline stage on one rank."""
    from rlhf_lint.memory import megatron as mcore

    share = K.megatron_replicated_activation_share
    dense = mcore.layer_bytes_per_token(arch, lay, activation_units(arch, False), share)
    moe = mcore.layer_bytes_per_token(arch, lay, activation_units(arch, True), share) if arch.num_experts else dense
    moe_share = arch.moe_layer_count / max(1, arch.num_layers) if arch.num_experts else 0.0
    mean = moe * moe_share + dense * (1 - moe_share)
    widest = max(moe, dense)
    src = mcore.SRC_MEGATRON_ACTIVATIONS
    terms = []
    if not training:
        terms.append(Term("activations", int(tokens * widest),
                          f"forward only, one layer live: {tokens} tokens x {widest:.0f} B ({how}; {lay.describe()})",
                          src, at_length_bound=True))
    else:
        inputs, whole, recomputed, what = mcore.stored_layers(lay, stage.layers)
        flight, flight_note = (1.0, "") if stage.head and lay.pp > 1 else \
            mcore.in_flight(lay, ctx["micro_train"], inp.get("batch.train"))
        ck = mcore.checkpoint_bytes_per_token(arch, lay, w)
        saved = int(flight * tokens * (inputs * ck + whole * mean))
        live = int(tokens * recomputed * widest)
        terms.append(Term("activations", saved + live,
                          f"{what}: {inputs} layer input(s) x {ck:.0f} B + {whole} layer(s) x {mean:.0f} B per token"
                          + (f", x {flight:g} ({flight_note})" if flight_note else "")
                          + (f" + {recomputed} layer(s) recomputed x {widest:.0f} B" if recomputed else "")
                          + f", {tokens} tokens ({how}; {lay.describe()}, {stage.name})",
                          src, at_length_bound=True, recomputed=live))
    if stage.head:
        f32 = K.megatron_loss_bytes_per_logit
        vocab = mcore.vocab_slice(arch, lay)
        # each multi-token-prediction depth keeps its own loss's softmax for the backward beside the main one's
        heads = 1 + (lay.mtp if training else 0)
        terms.append(Term("logits", int(heads * tokens * vocab * (w + f32)),
                          (f"{heads} heads (the LM head and {lay.mtp} MTP) x " if heads > 1 else "")
                          + f"{tokens} tokens x {vocab} logits (vocabulary / TP {lay.tp}) x ({w} + {f32}) B: 16-bit "
                          f"logits and the loss's fp32 softmax", mcore.SRC_MEGATRON_LOSS, at_length_bound=True))
    return terms


def _megatron_scale(arch: ModelArch, params: int, role: str) -> float:
    """The resolved parameter count over the shape's: 1 for a catalog model, the size read from a name over its
    stand-in shape's. A critic's or reward model's count lacks the LM head a value head replaced."""
    whole = params + (arch.vocab_size * arch.hidden_size if role in ("critic", "reward") and not arch.tie_embeddings
                      else 0)
    return whole / arch.param_count() if arch.param_count() else 1.0


def _megatron_trainable_role(role: str, arch: ModelArch, params: int, world: int, inp: _Inputs,
                             ctx: dict) -> RoleEstimate:
    """A trained model on Megatron: model states of the heavier pipeline stage, its activations and logits."""
    from rlhf_lint.memory import megatron as mcore

    lay = mcore.layout(inp, world, role)
    w, f32 = ctx["w"], dtype_bytes("fp32", 4)
    rank = mcore.lora_rank(inp)
    lm_head = role not in ("critic", "reward") and inp.get("model.lm_logits") is not False
    verl = ctx.get("framework") == "verl"
    tokens, how = _verl_megatron_tokens(inp, role, ctx, lay, True) if verl else _megatron_tokens(inp, ctx, lay)
    adapters = 0
    if rank:
        # targets that name nothing the layout knows: every linear layer (adapters are small; an upper bound)
        adapters = (lora_params(arch, rank, mcore.lora_targets(inp)) or lora_params(arch, rank, None)) \
            // (lay.tp * lay.pp)
    g, g_note = mcore.grad_bytes(inp, w, ctx["dtype"])
    per = (f32 if w < f32 else 0) + 2 * f32  # fp32 master (none for fp32 weights) + Adam m, v
    # verl parks its offloaded states in host RAM between uses instead of stepping them there
    fraction = 0.0 if verl else mcore.offload_fraction(inp)

    def sized(stage) -> RoleEstimate:
        r = RoleEstimate(role, arch.name, params, lay.world, True, arch=arch)
        frozen = stage.vision if inp.get("train.freeze_vision") is True else 0
        dense, experts = (adapters, 0) if rank else (stage.dense - frozen, stage.experts)
        trained = dense + experts
        r.terms.append(Term("weights", w * stage.total,
                            f"{w} B x {_count(stage.total)} parameters on one rank ({stage.name}: {stage.layers} "
                            f"layers; {lay.describe()})", mcore.SRC_MEGATRON_STATES))
        r.terms.append(Term("gradients", g * trained, f"{g_note}: {g} B x {_count(trained)}"
                            + (" LoRA adapter parameters" if rank else "")
                            + (" (vision tower frozen)" if frozen else ""),
                            mcore.SRC_MEGATRON_STATES))
        dp, edp = (lay.optimizer_ranks, lay.expert_optimizer_ranks) if lay.distributed else (1, 1)
        states = per * (dense / dp + experts / edp)
        on_gpu = int(states * (1 - fraction))
        split = (f" / DP {dp}" + (f" (experts / {edp})" if experts and edp != dp else "")) if lay.distributed \
            else " (no distributed optimizer)"
        r.terms.append(Term("optimizer_states", on_gpu,
                            f"fp32 master and Adam m, v: {per} B per trained parameter{split}"
                            + (f", {fraction:.0%} of it on the CPU (optimizer_cpu_offload)" if fraction else ""),
                            mcore.SRC_MEGATRON_STATES + (f"; {mcore.SRC_HYBRID_OPTIMIZER}" if fraction else "")))
        r.host_states = int(states) - on_gpu
        r.terms += _megatron_stage_terms(arch, stage, lay, tokens, how, w, inp, ctx, True)
        if verl:
            _verl_megatron_phases(r, arch, stage, lay, inp, ctx, role)
        r.trained_params = trained * lay.tp * lay.pp
        r.state_bytes_per_param = per
        r.micro_tokens["training"] = (tokens, True, how)
        _runtime(r, ctx)
        r.resident = ["weights", "gradients", "optimizer_states", "runtime"]
        return r

    inp.assumptions.append(f"{role}: Megatron-Core {lay.describe()}"
                           + ("; the heavier pipeline stage is reported" if lay.pp > 1 else ""))
    return _heaviest(sized, mcore.stages(arch, _megatron_scale(arch, params, role), lay, lm_head))


def _heaviest(sized, stages) -> RoleEstimate:
    """The role as the pipeline stage that holds the most (the first of equals)."""
    return max((sized(stage) for stage in stages), key=lambda r: r.total)


def _megatron_inference_role(role: str, arch: ModelArch, params: int, world: int, inp: _Inputs,
                             ctx: dict) -> RoleEstimate:
    """A frozen model on Megatron (DPO's reference): its 16-bit weights and one forward pass."""
    from rlhf_lint.memory import megatron as mcore

    lay = mcore.layout(inp, world)
    w = ctx["w"]
    verl = ctx.get("framework") == "verl"
    tokens, how = _verl_megatron_tokens(inp, role, ctx, lay, False) if verl else _megatron_tokens(inp, ctx, lay)

    def sized(stage) -> RoleEstimate:
        r = RoleEstimate(role, arch.name, params, lay.world, False, arch=arch, phase="experience")
        r.terms.append(Term("weights", w * stage.total, f"{w} B x {_count(stage.total)} frozen parameters on one rank "
                                                         f"({stage.name}; {lay.describe()})",
                            mcore.SRC_MEGATRON_STATES))
        r.terms += _megatron_stage_terms(arch, stage, lay, tokens, how, w, inp, ctx, False)
        if verl and ctx.get(f"offload_{role}"):
            # param_offload: the frozen weights come back to the GPU for the forward only
            r.terms = [replace(t, phases=("experience",), formula=t.formula + " (param_offload: parked in host RAM, "
                                                                               "loaded back for the forward)")
                       if t.name == "weights" else t for t in r.terms]
        r.micro_tokens["experience"] = (tokens, True, how)
        _runtime(r, ctx)
        r.resident = ["weights", "runtime"]
        return r

    scale = _megatron_scale(arch, params, role)
    return _heaviest(sized, mcore.stages(arch, scale, lay, inp.get("model.lm_logits") is not False))


SRC_VERL_MEGATRON = f"{SRC_VERL}/workers/megatron_workers.py"  # update_actor, compute_log_prob: load / offload


def _verl_megatron_tokens(inp: _Inputs, role: str, ctx: dict, lay, training: bool) -> tuple[int, str]:
    """verl's micro batches on one rank: a per-GPU micro batch split over the context-parallel ranks, or the token
    budget per GPU (megatron_actor.py scales the budget by the CP size before it splits the sequences)."""
    tokens, how, _bound = _fsdp_micro_tokens(inp, role, ctx["seq"], training)
    if _verl_token_budget(inp, role, training) or lay.cp == 1:
        return tokens, how
    return -(-tokens // lay.cp), f"{how} / CP {lay.cp}"


def _verl_megatron_phases(r: RoleEstimate, arch: ModelArch, stage, lay, inp: _Inputs, ctx: dict, role: str) -> None:
    """verl's Megatron actor and critic: offloaded parameters and optimizer states are parked in host RAM and
    loaded back for the phases that use them, and offloading the model frees its gradient buffer
    (megatron_utils.py offload_megatron_model_to_cpu); the experience phase recomputes log-probs (the actor with
    its entropy) or values without grad."""
    parked = {"weights": ("experience", "training", STEP) if role == "actor" else ("training", STEP),
              "gradients": ("training", STEP), "optimizer_states": ("training", STEP)}
    params = ctx["offload_param"] == "cpu" if role == "actor" else \
        str(_per_role(inp, role, "offload.param", "none")) == "cpu"
    offloaded = {"weights": params, "gradients": params,
                 "optimizer_states": ctx["offload_optimizer"] == "cpu" if role == "actor" else
                 str(_per_role(inp, role, "offload.optimizer", "none")) == "cpu"}
    r.terms = [replace(t, phases=parked[t.name], formula=f"{t.formula} (offloaded: parked in host RAM, loaded back "
                                                          f"for the phases that use it)", source=SRC_VERL_MEGATRON)
               if t.name in parked and offloaded[t.name] and not t.phases else t for t in r.terms]
    tokens, how = _verl_megatron_tokens(inp, role, ctx, lay, False)
    forward = _megatron_stage_terms(arch, stage, lay, tokens, how, ctx["w"], inp, ctx, False)
    if role == "actor" and stage.head:
        # the old log-probs come with their entropy: a second fp32 pass over the vocabulary slice
        from rlhf_lint.memory.megatron import vocab_slice

        vocab, f32 = vocab_slice(arch, lay), dtype_bytes("fp32", 4)
        forward.append(Term("logits", tokens * vocab * f32, f"{tokens} x {vocab} x {f32} B: the entropy's fp32 "
                                                            f"softmax beside the log-probs", SRC_VERL_MEGATRON,
                            at_length_bound=True))
    r.terms += [replace(t, phases=("experience",)) for t in forward]
    r.micro_tokens["experience"] = (tokens, True, how)


def _megatron_host(r: RoleEstimate, count: int, first_node: bool) -> tuple[list[Term], list[Term]]:
    """(persistent, transient) host RAM of ``count`` ranks of a Megatron role on one node: the offloaded share of
    the optimizer (fp32 master and moments, and the fp32 gradient copy the CPU optimizer steps), one checkpoint
    shard per rank while loading, one shard on the first rank while saving safetensors."""
    from rlhf_lint.memory import megatron as mcore

    persistent, transient = [], []
    # verl's offload: the parameter buffer pinned whole (one block, rounded up to a power of two), the optimizer
    # states as they are; the gradient buffer is freed, not kept
    weights = sum(t.bytes for t in r.terms if t.name == "weights" and t.phases)
    states = sum(t.bytes for t in r.terms if t.name == "optimizer_states" and t.phases)
    pinned = _pow2(weights)
    parked = pinned + states
    if parked:
        persistent.append(Term(f"parked:{r.role}", count * parked,
                               f"{count} ranks x {gib(parked)}: offloaded parameters (a pinned buffer of "
                               f"{gib(pinned)}) and optimizer states ({gib(states)}) "
                               f"between the phases that use them", f"{SRC_VERL_MEGATRON}; {SRC_PINNED}"))
    if r.trainable and r.host_states:
        grads = r.host_states * dtype_bytes("fp32", 4) / (r.state_bytes_per_param or 12)
        per_rank = int(r.host_states + grads)
        persistent.append(Term(f"cpu_optimizer:{r.role}", count * per_rank,
                               f"{count} ranks x {gib(per_rank)}: the offloaded share of the fp32 master and Adam "
                               f"moments ({gib(r.host_states)}) and its fp32 gradient copy",
                               mcore.SRC_HYBRID_OPTIMIZER))
    shard = K.checkpoint_shard_bytes
    transient.append(Term(f"loading:{r.role}", count * shard,
                          f"{count} ranks x one checkpoint shard ({gib(shard)}) read into the rank's slices",
                          mcore.SRC_BRIDGE_LOAD))
    if r.trainable and first_node:
        transient.append(Term(f"saving:{r.role}", shard, f"one safetensors shard ({gib(shard)}) gathered to save",
                              mcore.SRC_BRIDGE_SAVE))
    return persistent, transient


def _slack(owner_terms: list[Term], label: str, expandable: bool = False) -> list[Term]:
    """The runtime of one process: its CUDA context plus allocator slack on its transient tensors. The slack on
    tensors sized at a length bound is a term of its own, at the bound too: it shrinks with them (a token budget).
    With expandable segments the slack is fitted on runs without them, so it is unsure: in the figure, 0 at the
    band's low end (schemas/memory/allocator.json)."""
    context, fragmentation = K.cuda_context, K.allocator_fragmentation
    churn = [t for t in owner_terms if t.name in CHURNING and t.phases != (STEP,) and not t.reused_by_backward]
    step = [t for t in owner_terms if t.name in CHURNING and t.phases == (STEP,)]
    fixed = sum(t.bytes for t in churn if not t.at_length_bound)
    bound = sum(t.bytes for t in churn if t.at_length_bound)
    if expandable:
        out = [Term("runtime", context, f"{label}CUDA context and NCCL {gib(context)}", SRC_OVERHEAD)]
        if fixed:
            out.append(Term("allocator_slack", int(fixed * fragmentation),
                            f"allocator fragmentation {fragmentation:.0%} of {gib(fixed)} of transient tensors, "
                            f"at most: expandable segments reuse freed blocks at other sizes", SRC_EXPANDABLE,
                            unsure=True))
    else:
        out = [Term("runtime", context + int(fixed * fragmentation),
                    f"{label}CUDA context and NCCL {gib(context)} + allocator fragmentation {fragmentation:.0%} of "
                    f"{gib(fixed)} of transient tensors", SRC_OVERHEAD)]
    if bound:
        out.append(Term("allocator_slack", int(bound * fragmentation),
                        f"allocator fragmentation {fragmentation:.0%} of the {gib(bound)} of transient tensors sized "
                        f"at the length bound", SRC_EXPANDABLE if expandable else SRC_OVERHEAD, at_length_bound=True))
    size = sum(t.bytes for t in step)
    sure = sum(t.bytes for t in step if not t.unsure)
    if size > fixed:
        # the step phase: the step reuses the blocks the backward's transients left cached, so only what it
        # needs beyond them adds slack, held in that phase only; the part an unsure copy adds is unsure too (0 at
        # the band's low end)
        beyond_sure = max(0, sure - fixed)
        if beyond_sure:
            out.append(Term("allocator_slack", int(beyond_sure * fragmentation),
                            f"allocator fragmentation {fragmentation:.0%} of what the optimizer step's {gib(sure)} "
                            f"needs beyond the {gib(fixed)} of transient tensors above", SRC_OVERHEAD, (STEP,),
                            unsure=expandable))
        if size - fixed > beyond_sure:
            out.append(Term("allocator_slack", int((size - fixed - beyond_sure) * fragmentation),
                            f"allocator fragmentation {fragmentation:.0%} of the {gib(size - sure)} the step may "
                            f"also allocate", SRC_OVERHEAD, (STEP,), unsure=True))
    return out


# what device_map spreads with the layers: each parameter, its gradient, its optimizer states and what the step
# makes of them live on the GPU of their layer (torch's foreach AdamW steps one device's tensors at a time)
SPLIT_WITH_LAYERS = ("weights", "gradients", "optimizer_states", "optimizer_step", "backward_gradients")
SRC_DEVICE_MAP = ("https://github.com/huggingface/accelerate/blob/v1.2.1/src/accelerate/utils/modeling.py "
                  "(get_balanced_memory, infer_auto_device_map: decoder layers kept whole, placed to balance the "
                  "GPUs); https://github.com/pytorch/pytorch/blob/v2.5.0/torch/utils/_foreach_utils.py "
                  "(_group_tensors_by_device_and_dtype)")


def _split_over_devices(r: RoleEstimate, ctx: dict) -> None:
    """A process that splits its model over ``model_split`` GPUs by device_map (naive model parallelism, no
    DeepSpeed or FSDP): one GPU holds its share of the layers with their states; the activations term already
    holds its share of the saved layer inputs (_activation_terms). The LM head's logits and the one recomputed layer
    stay whole: the GPU that runs them holds them."""
    split = ctx.get("model_split", 1)
    if split <= 1:
        return
    r.terms = [replace(t, bytes=t.bytes // split,
                       formula=f"{t.formula}, / {split} GPUs (device_map)",
                       source=f"{t.source} ; {SRC_DEVICE_MAP}" if t.source else SRC_DEVICE_MAP)
               if t.name in SPLIT_WITH_LAYERS else t for t in r.terms]


def _runtime(r: RoleEstimate, ctx: dict) -> None:
    r.expandable_segments = bool(ctx.get("expandable_segments"))
    r.terms += _slack(r.terms, "", r.expandable_segments)


def _sampler_bytes(versions: dict | None) -> int:
    """Bytes per logit of the profile run's sampler: the V0 engine (vLLM before 0.8) forces top-k/top-p and sorts
    (32 B); V1, or an unknown release, may skip them (fp32 logits, 4 B)."""
    release = _release(versions, "vllm")
    if release is not None and release < (0, 8):
        return K.vllm_v0_sampler_logit_bytes
    return K.vllm_sampler_logit_bytes


def _vllm_engine(versions: dict | None, gpu_name: str | None, gpu_memory: int | None) -> dict:
    """How the vLLM release the launch targets sizes its engine: the V1 engine (0.8 on; an unknown release is
    taken to be current) profiles max_num_batched_tokens, whose default for the offline LLM class is 16384 tokens
    and 1024 sequences on a card of 70 GiB or more that is no A100, else 8192 and 256; the KV budget is measured
    from a snapshot taken after the CUDA context exists in V0 from 0.6.4 and in V1 from 0.9.2 (SRC_VLLM_SNAPSHOT)."""
    release = _patch_release(versions, "vllm")
    v1 = release is None or release >= (0, 8)
    big = gpu_memory is not None and gpu_memory >= 70 * GIB and "A100" not in str(gpu_name or "").upper()
    # the V1 worker of 0.8.0-0.9.1 took every byte outside torch, the CUDA context included, out of the KV cache
    snapshot = release is None or (0, 6, 4) <= release < (0, 8) or release >= (0, 9, 2)
    return {"v1": v1, "snapshot": snapshot,
            "batched_tokens": K.vllm_v1_batched_tokens[1 if big else 0],
            "max_num_seqs": K.vllm_v1_max_num_seqs[1 if big else 0] if v1 else K.vllm_max_num_seqs,
            "why": ("the LLM class's default on a card of 70 GiB or more other than an A100" if big else
                    "the LLM class's default on an A100 or a card under 70 GiB") if v1 else "vLLM < 0.8"}


def _stored_weights(arch: ModelArch) -> tuple[int, float, str]:
    """(parameters, bytes each, what) of the weights an inference engine holds in the checkpoint's own format:
    gpt-oss's MXFP4 experts, DeepSeek-V3's FP8 linear layers (vLLM's and SGLang's kernels serve them as stored);
    (0, 0, "") when the checkpoint is in the model's dtype."""
    if arch.expert_weight_bytes:
        return arch.expert_params(), arch.expert_weight_bytes, "routed-expert weights in MXFP4"
    if arch.linear_weight_bytes:
        return arch.decoder_linear_params(), arch.linear_weight_bytes, "decoder linear weights in FP8"
    return 0, 0.0, ""


def _engine_weights(arch: ModelArch, params: int, w: int) -> int:
    """An inference engine's weights: what the checkpoint stores in its own format as stored, the rest in the
    model's dtype."""
    stored, each, _ = _stored_weights(arch)
    return int(w * (params - stored) + each * stored) if stored else w * params


def _engine_weights_note(arch: ModelArch, params: int, w: int) -> str:
    stored, each, what = _stored_weights(arch)
    if not stored:
        return f"{w} B x {_count(params)}"
    return f"{w} B x {_count(params - stored)} + {each:.4g} B x {_count(stored)} {what}, as the checkpoint stores them"


def _vllm_role(arch: ModelArch, params: int, tp: int, inp: _Inputs, ctx: dict, gpu_memory: int | None,
               versions: dict | None = None, colocated_seqs: int | None = None,
               free_at_init: int | None = None) -> RoleEstimate:
    """``colocated_seqs``: TRL's colocated engine, built with max_num_seqs = per_device_train_batch_size x TP x
    gradient_accumulation_steps (v0.23.0: x steps_per_generation, which defaults to it; grpo_trainer.py LLM(...))
    and GRPOConfig's own utilization default. ``free_at_init``: the GPU memory left when verl builds its rollout
    last, which verl's own vLLM < 0.7 workers take the utilisation of (KV = utilisation x what is free after the
    profile run) instead of the whole GPU."""
    w = 2
    engines = int(inp.number("vllm.num_engines", 1) or 1)
    r = RoleEstimate("vllm", arch.name, params, tp, False, phase="generation", arch=arch)
    if colocated_seqs is not None:
        default_util = K.trl_colocate_gpu_memory_utilization
        util = inp.number("vllm.gpu_memory_utilization", default_util,
                          f"GRPOConfig's default vllm_gpu_memory_utilization ({default_util}) assumed")
    else:
        default_util = K.vllm_gpu_memory_utilization
        util = inp.number("vllm.gpu_memory_utilization", default_util, f"vLLM's default ({default_util}) assumed")
    # written but unreadable (a variable set in a branch, a command's output): the figure is an assumption, so the
    # band's low end leaves the reservation out and no verdict rests on it
    util_unknown = inp.settings.value("vllm.gpu_memory_utilization") is UNKNOWN
    if util_unknown:
        inp.assumptions.append(f"vllm: gpu_memory_utilization is written but cannot be read; {util:g} assumed, "
                               f"and the band's low end leaves the reservation out")
    weights = _engine_weights(arch, params, w) // tp
    max_len = ctx["seq"]
    model_len, model_len_why, model_len_sure = _max_model_len(arch, inp, max_len)
    if inp.get("rollout.engine") == "sglang" and gpu_memory is not None and free_at_init is None:
        return _sglang_role(r, util, util_unknown, weights, gpu_memory, inp)
    engine = _vllm_engine(versions, ctx.get("gpu_name"), gpu_memory)
    if colocated_seqs is not None:
        max_seqs = colocated_seqs
    else:
        max_seqs = int(inp.number("vllm.max_num_seqs", engine["max_num_seqs"],
                                  f"vLLM's default max_num_seqs assumed ({engine['why']})"))
    # vLLM's profile run: one batch through the model (V0 without chunked prefill: max(max_len, 2048) tokens; V1:
    # max_num_batched_tokens), then the sampler on max_num_seqs full-vocabulary rows while the batch's hidden states
    # are still held; the forward's MLP transients are freed by then, so the peak is the larger of the two
    if engine["v1"]:
        tokens = int(inp.number("vllm.max_num_batched_tokens", engine["batched_tokens"],
                                f"vLLM's default max_num_batched_tokens assumed ({engine['why']})"))
    else:
        tokens = max(max_len, K.vllm_profile_min_tokens)
    mlp = K.vllm_profile_intermediate_factor * arch.intermediate_size + K.vllm_profile_hidden_factor * arch.hidden_size
    sampler = max_seqs * arch.vocab_size * _sampler_bytes(versions) + tokens * arch.hidden_size * w
    profile = max(tokens * mlp * w // tp, sampler)
    if gpu_memory is None:
        reservation = None
        r.terms.append(Term("vllm_reservation", 0, f"gpu_memory_utilization {util} x (GPU unknown)", SRC_VLLM_UTIL))
    elif free_at_init is not None:
        # verl's vLLM (0.3.1 - 0.6.3) worker: num_gpu_blocks = free memory after the profile run x utilisation
        kv = max(0, int(util * (free_at_init - weights - profile)))
        reservation = weights + kv + profile + K.cuda_context  # so that kv_bytes below is this KV cache
        r.terms.append(Term("vllm_reservation", weights + kv,
                            f"weights {gib(weights)} + KV cache: gpu_memory_utilization {util} x the "
                            f"{gib(max(0, free_at_init - weights - profile))} free after the other models and the "
                            f"profile run (verl's vLLM < 0.7 takes a fraction of the free memory)", SRC_VERL_OLD_VLLM,
                            unsure=util_unknown))
    else:
        reservation = int(util * gpu_memory)
        if engine["snapshot"]:
            # vLLM measures from a snapshot taken after its CUDA context exists (V0 from 0.6.4, V1 from 0.9.2): the
            # budget holds weights, the profile peak, what the profile run added outside torch, and the KV cache
            r.terms.append(Term("vllm_reservation", reservation,
                                f"gpu_memory_utilization {util} x {gib(gpu_memory)} (fraction of the whole GPU); the "
                                f"CUDA context, below, lies outside it (vLLM profiles from a snapshot taken after the "
                                f"context exists: V0 from 0.6.4, V1 from 0.9.2)"
                                + ("; TRL colocate: inside the training process" if colocated_seqs is not None else "")
                                + ("; the launch's value cannot be read: assumed" if util_unknown else ""),
                                SRC_VLLM_SNAPSHOT, unsure=util_unknown))
        else:
            # vLLM's profile run measures the memory outside torch (CUDA context, NCCL) and takes it out of the KV
            # cache: the budget covers the engine's own context, which is counted once below
            r.terms.append(Term("vllm_reservation", reservation - K.cuda_context,
                                f"gpu_memory_utilization {util} x {gib(gpu_memory)} (fraction of the whole GPU), less "
                                f"the CUDA context counted below"
                                + ("; TRL colocate: inside the training process" if colocated_seqs is not None else "")
                                + ("; the launch's value cannot be read: assumed" if util_unknown else ""),
                                SRC_TRL_COLOCATE if colocated_seqs is not None else SRC_VLLM_UTIL,
                                unsure=util_unknown))
    if not inp.flag("vllm.enforce_eager"):
        r.terms.append(Term("cuda_graphs", K.vllm_cuda_graphs, "CUDA graph capture, outside the reservation (assumed)",
                            SRC_VLLM_UTIL))
    outside = engine["snapshot"] and free_at_init is None
    r.terms.append(Term("runtime", K.cuda_context, f"CUDA context {gib(K.cuda_context)} "
                                                   f"({'outside' if outside else 'inside'} the reservation while awake)",
                        SRC_VLLM_SNAPSHOT if outside else SRC_VLLM_NON_TORCH))
    per_token = arch.kv_bytes_per_token(w, tp)
    # what the profile run adds outside torch (cuBLAS workspaces, NCCL buffers) comes out of the KV cache; without
    # the snapshot the whole non-torch memory did, the CUDA context included
    taken = K.vllm_non_torch_increase if outside else K.cuda_context
    kv_bytes = None if reservation is None else reservation - weights - profile - taken
    r.kv = {
        "weights_per_gpu": weights, "profile_peak": profile, "kv_bytes": kv_bytes, "bytes_per_token": per_token,
        # what the weights alone leave: the profile peak and the context are assumed, the weights are not
        "kv_bytes_at_most": None if reservation is None else reservation - weights,
        "tokens": None if kv_bytes is None else max(0, kv_bytes) // per_token,
        # the length vLLM is built for; the prompt + generation length is the least it can be
        "one_sequence": model_len, "one_sequence_why": model_len_why, "one_sequence_sure": model_len_sure,
        "one_sequence_min": min(model_len, max_len),
        "tokens_needed": max_seqs * max_len, "max_num_seqs": max_seqs,
        "engines": engines, "tensor_parallel": tp, "gpu_memory_utilization": util, "utilization_unknown": util_unknown,
        "formula": f"KV = reservation - weights {gib(weights)} ({_engine_weights_note(arch, params, w)} / TP {tp}) "
                   f"- profile peak "
                   f"{gib(profile)} ({tokens} tokens) - {'non-torch increase' if outside else 'CUDA context'} "
                   f"{gib(taken)}; per token {arch.kv_formula(w, per_rank=True)} = {per_token} B",
        "source": SRC_VLLM_KV,
    }
    r.resident = ["vllm_reservation", "cuda_graphs", "runtime"]
    return r


def _max_model_len(arch: ModelArch, inp: _Inputs, seq: int) -> tuple[int, str, bool]:
    """(vLLM's max_model_len, why when it is not the launch's own length, whether a verdict may rest on it): the
    length the framework passes, else the model's max_position_embeddings where it leaves that to vLLM
    (``vllm.max_model_len`` = that marker), else the prompt + generation length."""
    value = inp.get("vllm.max_model_len")
    sure = not inp.flag("vllm.max_model_len_assumed")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, "", sure
    origin = ""
    if value == "max_position_embeddings":
        origin = inp.settings.get("vllm.max_model_len").origin.split(" (")[0]
    elif value is None and inp.max_model_len_default is not None:
        value, origin, assumed = inp.max_model_len_default
        sure = not assumed
    if value == "max_position_embeddings":
        if arch.max_position_embeddings > 0:
            return arch.max_position_embeddings, f"{origin}, {arch.max_position_embeddings}", sure
        inp.assumptions.append(f"vllm: max_model_len is the model's max_position_embeddings, which is not known for "
                               f"{arch.name}: the prompt + generation length {seq} used instead")
        return seq, "", False
    return seq, "", True


SRC_SGLANG_STATIC = "https://github.com/volcengine/verl/blob/v0.4.1/verl/workers/rollout/sglang_rollout/sglang_rollout.py#L390-L394"


def _sglang_role(r: RoleEstimate, util: float, util_unknown: bool, weights: int, gpu_memory: int,
                 inp: _Inputs) -> RoleEstimate:
    """verl's SGLang rollout: an engine whose scheduler runs in a process of its own, with mem_fraction_static =
    gpu_memory_utilization. SGLang sizes its static pool (weights and KV cache) as that fraction of the GPU less what
    the GPU already holds when it starts, so the whole fraction is an upper bound: counted in the figures, 0 at the
    band's low end (no error rests on it). Its KV cache is not modelled (M007 stays silent)."""
    r.terms.append(Term("vllm_reservation", int(util * gpu_memory),
                        f"SGLang mem_fraction_static {util:g} (verl passes gpu_memory_utilization) x {gib(gpu_memory)}: "
                        f"weights {gib(weights)} and KV pool; at most this, as SGLang takes the fraction less what the "
                        f"GPU holds when it starts" + ("; the launch's value cannot be read: assumed"
                                                       if util_unknown else ""),
                        SRC_SGLANG_STATIC, unsure=True))
    if not inp.flag("vllm.enforce_eager"):
        r.terms.append(Term("cuda_graphs", K.vllm_cuda_graphs, "CUDA graph capture, outside the static pool (assumed)",
                            SRC_SGLANG_STATIC))
    r.terms.append(Term("engine_process", K.cuda_context, f"the SGLang scheduler's own process on the GPU: its CUDA "
                                                          f"context {gib(K.cuda_context)}, kept while it sleeps",
                        SRC_SGLANG_STATIC))
    r.terms.append(Term("runtime", K.cuda_context, f"CUDA context {gib(K.cuda_context)}", SRC_VLLM_NON_TORCH))
    r.kv = {"engine": "sglang", "weights_per_gpu": weights, "gpu_memory_utilization": util,
            "utilization_unknown": util_unknown}
    r.resident = ["vllm_reservation", "cuda_graphs", "engine_process", "runtime"]
    return r


# -- the estimate ------------------------------------------------------------------------------------------------
def estimate(job, hardware, read_config: Callable[[str], str | None] | None = None,
             versions: dict | None = None) -> Estimate:
    """GPU and host memory of a job's roles. What the launch leaves open (a loaded dtype, an unread DeepSpeed
    config: ``_open_readings``) is estimated both ways: the nominal figures as read, the low end of each GPU group's
    band under the reading that needs least, so a verdict that rests on it is a warning, never an error."""
    est = _estimate(job, hardware, read_config, versions)
    if est.groups:
        for changes in _open_readings(job):
            floors = {tuple(g.names): g.low_peak for g in _estimate(with_settings(job, changes), hardware,
                                                                     read_config, versions).groups}
            for g in est.groups:
                floor = floors.get(tuple(g.names))
                if floor is not None and floor < g.low_peak:
                    g.low_floor = floor if g.low_floor is None else min(g.low_floor, floor)
    return est


def _open_readings(job) -> list[dict]:
    """The settings under which a launch that leaves something open needs least: a loaded dtype it does not name
    (the 16-bit reading), a DeepSpeed or accelerate config it names but the linter did not read (ZeRO-3 with
    parameters and optimizer on the CPU, for what the launch itself does not set). Each gives the low end of the
    bands."""
    readings = []
    settings = job.settings
    low = settings.value("precision.loaded_dtype_open")
    if low:
        changes = {"precision.master_dtype": low}
        if str(settings.value("precision.param_dtype") or "").lower() in ("fp32", "float32"):
            changes["precision.param_dtype"] = low
        readings.append(changes)
    if any(settings.value(k) is not None for k in ("deepspeed.config_unread", "accelerate.config_unread")):
        least = {"zero.stage": 3, "offload.optimizer": "cpu", "offload.param": "cpu"}
        changes = {k: v for k, v in least.items() if settings.get(k) is None}
        if changes:
            readings.append(changes)
    return readings


def _estimate(job, hardware, read_config: Callable[[str], str | None] | None = None,
              versions: dict | None = None) -> Estimate:
    assumptions: list[str] = list(getattr(job, "assumptions", []) or [])
    inp = _Inputs(job.settings, assumptions)
    gpu: GPU | None = None
    gpu_memory = hardware.gpu_memory
    if hardware.gpu:
        gpu = resolve_gpu(hardware.gpu)
        if gpu is None:
            assumptions.append(f"GPU {hardware.gpu!r} is not in the catalog: give --gpu-memory")
        elif gpu_memory is None:
            gpu_memory = gpu.usable_bytes
    hardware_known = gpu_memory is not None

    strategy = _strategy(job, inp)
    reason = _declined(inp, strategy)
    if reason is not None:
        # before any DeepSpeed default is assumed: those would describe a job that is not sized
        assumptions.append(f"{reason}: no memory estimate, no verdict")
        return Estimate([], [], [], _dedupe(assumptions), gpu, gpu_memory, hardware_known, {}, reason)
    fsdp = strategy in ("fsdp", "fsdp2")
    megatron = strategy == "megatron"
    stage = inp.number("zero.stage", 0, None if fsdp or megatron else "no ZeRO stage given")
    stage = max(0, min(3, int(stage))) if strategy not in PLAIN_STRATEGIES else 0
    dtype = str(inp.get("precision.param_dtype", "bf16", None if fsdp else "bf16 assumed") or "bf16").lower()
    w = dtype_bytes(dtype, 2)
    zero0 = None
    if strategy == "deepspeed" and stage == 0:
        zero0, acc = _zero0_wrapper(job, dtype, versions, assumptions)
    else:
        acc = inp.get("precision.grad_accum_dtype")
    if acc is None and fsdp:
        acc = "fp32"  # FSDP keeps gradients in the parameters' (fp32 master) dtype; unused by the FSDP terms
    elif acc is None:
        acc = dtype  # DeepSpeed under ZeRO: the model dtype
        if strategy not in PLAIN_STRATEGIES + ("megatron",):  # without DeepSpeed, .grad: the parameters' dtype
            assumptions.append(f"gradients accumulate in {acc} (DeepSpeed default for {dtype}, ZeRO-{stage}; "
                               f"{SRC_DS_DTYPES})")
    acc = str(acc).lower()
    kind = str(inp.get("job.type", "") or "").lower()
    prompt = inp.get("seq.prompt_max_len")
    gen = inp.get("seq.generate_max_len")
    max_len = inp.get("seq.max_len")
    try:
        if prompt is not None and gen is not None:
            seq = int(prompt) + int(gen)
        elif max_len is not None:
            seq = int(max_len)
        else:
            seq = K.default_sequence_length
            assumptions.append(f"sequence length {seq} assumed: no prompt/generate/max length given")
    except (TypeError, ValueError):
        seq = K.default_sequence_length
        assumptions.append(f"sequence length {seq} assumed: the length is not a number")
    micro_train = int(inp.number("batch.micro_train", 1, None if fsdp else "micro train batch 1 assumed"))
    ctx = {
        "gpu_name": None if gpu is None else gpu.name,
        "stage": stage, "eval_stage": 3 if stage == 3 else 0, "w": w, "dtype": dtype, "a": dtype_bytes(acc, 4),
        "a_name": acc,
        "zero0": zero0,
        "offload_optimizer": (lambda v: None if v in (None, "none", False) else str(v))(inp.get("offload.optimizer")),
        "offload_param": (lambda v: None if v in (None, "none", False) else str(v))(inp.get("offload.param")),
        "offload_ref": inp.flag("offload.ref"), "offload_reward": inp.flag("offload.reward"),
        "micro_train": micro_train,
        "micro_rollout": int(inp.number("batch.micro_rollout", micro_train) or micro_train),
        "seq": seq, "checkpointing": inp.flag("train.gradient_checkpointing"),
        "flash": inp.flag("train.flash_attn"), "overlap_comm": inp.flag("deepspeed.overlap_comm", stage == 3),
        "paired": kind in PAIRED_TYPES, "fused_loss": inp.flag("train.fused_loss"),
        # RL: the response part of every sequence is generated, so its length is a bound, not a count
        "generated": kind in PPO_TYPES and gen is not None,
        "plain": strategy in PLAIN_STRATEGIES,
        "quantization": _quantization(inp),
        # device_map over several GPUs per process: only without DeepSpeed or FSDP (both refuse a device_map)
        "model_split": max(1, _int_of(inp.get("topology.model_split"), 1)) if strategy in PLAIN_STRATEGIES else 1,
        "framework": getattr(job, "framework", ""), "versions": versions or {},
        # an HF Trainer / TRL job under accelerate's FSDP: no verl experience phase unless it is RL, a reference
        # sharded on the GPUs like the policy (TRL prepare_fsdp), not parked in host RAM
        "accelerate_fsdp": fsdp and getattr(job, "framework", "") in HF_TRAINERS,
    }

    ctx["strategy"] = strategy
    ctx["expandable_segments"] = _expandable_segments(job, inp, strategy, versions, assumptions)
    if _trl_grpo(job, inp, versions):
        # TRL runs the LM head on the completion only (logits_to_keep, grpo_trainer.py _get_per_token_logps)
        ctx["logit_tokens"] = int(gen) if gen is not None else None
        ctx["trl_logps"] = True
        ctx["trl_grpo"] = not inp.flag("trl.use_vllm")
        # vllm_mode colocate: the engine lives in each training process, on the training GPUs
        inp.vllm_in_process = _trl_colocate(job, inp, versions)
        if inp.vllm_in_process:
            inp.max_model_len_default = _trl_colocate_max_model_len(versions)
    elif kind == "dpo" and getattr(job, "framework", "") == "trl" and _trl_dpo_logps_in_logits_dtype(versions,
                                                                                                  assumptions):
        ctx["trl_logps"] = True

    resolutions: dict[str, ModelResolution] = {}
    roles: list[RoleEstimate] = []
    role_nodes: dict[str, tuple[int, int]] = {}
    for role in _roles_of(job, inp, versions):
        ref = _model_ref(inp, role)
        if ref is None:
            assumptions.append(f"{role}: no model given, role left out")
            continue
        res = resolutions.get(ref) or _from_tail(resolve_model(ref, read_config), inp)
        resolutions[ref] = res
        if res.arch is None:
            assumptions.append(f"{role}: {res.note}; role left out")
            continue
        if res.note and res.note not in assumptions:
            assumptions.append(res.note)
        arch, params = res.arch, res.param_count
        if role in ("critic", "reward") and not arch.tie_embeddings:
            params -= arch.vocab_size * arch.hidden_size  # a value head replaces the LM head
        if role == "vllm" and inp.vllm_in_process:
            # TRL colocate: one engine per TP group of training ranks, on the policy's GPUs
            tp = max(1, _int_of(inp.get("vllm.tensor_parallel_size"), 1))
            policy = next((r for r in roles if r.role == "policy"), None)
            seqs = micro_train * tp * _trl_generation_steps(micro_train, policy.gpus if policy else 1, inp, ctx)
            roles.append(_vllm_role(arch, params, tp, inp, ctx, gpu_memory, versions, colocated_seqs=seqs))
            role_nodes[role] = role_nodes.get("policy") or _gpus_of(inp, "policy", hardware)
            continue
        if role == "vllm":
            tp = int(inp.number("vllm.tensor_parallel_size", 1) or 1)
            if res.how not in ("catalog", "config.json"):
                # another model's shape (an Instruct read as its base): its context length may differ
                arch = replace(arch, max_position_embeddings=0)
            roles.append(_vllm_role(arch, params, tp, inp, ctx, gpu_memory, versions))
            engines = int(inp.number("vllm.num_engines", 1) or 1)
            role_nodes[role] = (engines, tp)  # placed engine by engine
            continue
        nodes, per = _gpus_of(inp, role, hardware)
        role_nodes[role] = (nodes, per)
        n = max(1, nodes * per)
        tp = _int_of(inp.get("train.tensor_parallel_size"), 1)
        if tp > 1 and not fsdp:
            # DeepSpeed AutoTP: each rank holds 1/tp of the weights; ZeRO partitions over the data-parallel ranks
            params, n = params // tp, max(1, n // tp)
            assumptions.append(f"{role}: DeepSpeed tensor parallel {tp}: 1/{tp} of the parameters per rank "
                               f"(activations counted unsplit)")
        if megatron:
            build = _megatron_trainable_role if role in TRAINABLE else _megatron_inference_role
        elif fsdp:
            build = _fsdp_trainable_role if role in TRAINABLE else _fsdp_inference_role
        else:
            build = _trainable_role if role in TRAINABLE else _inference_role
        roles.append(build(role, arch, params, n, inp, ctx))

    for r in roles:
        r.gpus_assumed = r.role in inp.gpus_from_profile
    _verl_old_vllm(roles, inp, ctx, gpu_memory, versions, job)
    groups = _groups(roles, inp, gpu_memory, kind)
    nodes = _host(roles, role_nodes, groups, inp, ctx, hardware, versions or {}, assumptions)
    if not hardware_known:
        assumptions.append("no GPU in the hardware profile: no memory verdict (give --gpu or --gpu-memory, or a "
                           "'# rlhf-lint: hardware gpu=...' comment)")
    return Estimate(roles, groups, nodes, _dedupe(assumptions), gpu, gpu_memory, hardware_known, resolutions)


def _verl_old_vllm(roles: list[RoleEstimate], inp: _Inputs, ctx: dict, gpu_memory: int | None, versions: dict | None,
                   job) -> None:
    """verl with vLLM before 0.7 (its own spmd workers): the rollout is built last and sizes its KV cache from the
    memory the other models' weights leave free (ray_trainer.py: "create rollout at the end"). Rebuilds the vLLM
    role with that free memory; a release not known keeps today's fraction of the whole GPU."""
    release = _release(versions, "vllm")
    vllm = next((r for r in roles if r.role == "vllm"), None)
    if getattr(job, "framework", "") != "verl" or vllm is None or gpu_memory is None or release is None \
            or release >= (0, 7):
        return
    others = sum(t.bytes for r in roles if r.role != "vllm" for t in r.terms if t.name == "weights" and not t.phases)
    rebuilt = _vllm_role(vllm.arch, vllm.params, vllm.gpus, inp, ctx, gpu_memory, versions,
                         free_at_init=gpu_memory - K.cuda_context - others)
    roles[roles.index(vllm)] = rebuilt


def _declined(inp: _Inputs, strategy: str) -> str | None:
    """Why the job gets no figures (a layout or trainer the estimate does not model), or None."""
    unmodelled = inp.get("job.unmodelled")
    if isinstance(unmodelled, str):
        return f"{unmodelled} is not modelled"
    if strategy == "megatron" and inp.settings.get("megatron.tensor_parallel") is not None:
        # a reader that gives the Megatron layout (ms-swift, verl): memory.megatron sizes it, unless Megatron
        # refuses it at start-up (A016)
        from rlhf_lint.memory import megatron as mcore

        unread = [key.partition(".")[2] for key in mcore.LAYOUT_KEYS if inp.settings.value(key, None) is UNKNOWN]
        if unread:  # a size left to a shell variable: any guess could make a false verdict
            return f"a Megatron layout whose {', '.join(unread)} cannot be read"
        world = inp.get("topology.world_size")
        refused = mcore.refused(mcore.layout(inp, world)) if type(world) is int and world > 0 else None
        return None if refused is None else f"a Megatron layout that does not start ({refused})"
    if strategy not in ("deepspeed", "fsdp", "fsdp2") + PLAIN_STRATEGIES:
        # a layout the readers do not give (a Megatron launch of another framework, KTransformers' CPU experts, a
        # strategy that cannot be read): no figures rather than wrong ones
        how = {"megatron": "this launch's Megatron layout is not read",
               "ktransformers": "KTransformers runs the MoE experts on the CPU",
               "inference": "a predict or eval run holds no optimizer states or gradients"}.get(strategy, "")
        return (f"training strategy {strategy!r} is not modelled (DeepSpeed ZeRO, FSDP and the Megatron-Core "
                f"layouts of ms-swift and verl are{'; ' + how if how else ''})")
    return None


def _strategy(job, inp: _Inputs) -> str:
    """deepspeed (ZeRO; every launch that does not say), fsdp / fsdp2 (verl's FSDP workers), megatron, or
    'unknown' for a verl job whose strategy cannot be read."""
    value = inp.get("train.strategy")
    if value is None and inp.settings.value("train.strategy") is UNKNOWN:
        return "unknown"  # a launch whose sharding is set but unreadable (an accelerate FSDP config's)
    if value is None:
        return "unknown" if getattr(job, "framework", "") == "verl" else "deepspeed"
    if value is UNKNOWN or not isinstance(value, str):
        return "unknown"
    critic = inp.get("train.critic.strategy")
    if isinstance(critic, str) and critic != value and "critic" in (getattr(job, "roles", ()) or ()):
        return f"{value} actor with a {critic} critic"
    return value.lower()


def _expandable_segments(job, inp: _Inputs, strategy: str, versions: dict | None, assumptions: list[str]) -> bool:
    """Whether the training processes' allocator maps expandable segments: a framework release that turns it on
    itself whatever the environment says (schemas/memory/allocator.json), else the launch's PYTORCH_CUDA_ALLOC_CONF
    or a launcher that sets it."""
    from rlhf_lint.schemas import load

    for row in load("memory/allocator.json")["frameworks"]:
        release = _release(versions, row["package"])
        since = tuple(int(x) for x in row["since"].split(".")[:2])
        if getattr(job, "framework", "") == row["framework"] and strategy in row["strategies"] and release \
                and release >= since:
            assumptions.append(f"{row['package']} {versions[row['package']]}: {row['what']}: the allocator's "
                               f"fragmentation slack is counted at most, and left out of the band's low end")
            return True
    setting = inp.settings.get("runtime.expandable_segments")
    if setting is not None and setting.value is True:
        assumptions.append(f"expandable segments ({setting.origin}): the allocator's fragmentation slack is "
                           f"counted at most, and left out of the band's low end")
        return True
    return False


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def shared_roles(inp, names) -> set[str]:
    """The roles that live in one process on each GPU. ``topology.shared_process`` true: every training model
    (OpenRLHF's deepspeed launches without Ray: train_ppo, train_sft/dpo/rm/kto), and any policy + reference job;
    a list of roles: exactly those, vLLM included when named (verl's hybrid engine puts actor, rollout, reference,
    critic and reward workers of its one resource pool in one process per GPU). Ray colocation (colocate_all_models,
    colocate_actor_ref, ORZ colocate_all) places separate processes."""
    value = inp.get("topology.shared_process")
    if isinstance(value, (list, tuple, set, frozenset)):
        chosen = {n for n in names if n in value}
        return chosen if len(chosen) > 1 else set()
    if inp.flag("topology.shared_process") or "policy" in names:
        # TRL's colocated vLLM is an LLM object of the training process itself
        return {n for n in names if n != "vllm" or inp.vllm_in_process}
    return set()


def _groups(roles: list[RoleEstimate], inp: _Inputs, gpu_memory: int | None, kind: str) -> list[GpuGroup]:
    names = [r.role for r in roles]
    together: list[set[str]] = []
    shared = shared_roles(inp, names)
    if shared:
        together.append(set(shared))
    if inp.flag("topology.colocate_all") and inp.flag("train.async"):
        # OpenRLHF: with --async_train, colocate_all merges the DeepSpeed models only; vLLM engines get their own GPUs
        together.append(set(names) - {"vllm"})
    elif inp.flag("topology.colocate_all"):
        together.append(set(names))
    else:
        if inp.flag("topology.colocate_actor_ref"):
            together.append({"actor", "ref"})
        if inp.flag("topology.colocate_critic_reward"):
            together.append({"critic", "reward"})
    by_name = {r.role: r for r in roles}
    used: set[str] = set()
    groups: list[GpuGroup] = []
    for name in names:
        if name in used:
            continue
        members = set().union(*(s for s in together if name in s)) or {name}
        members = [n for n in names if n in members and n not in used]
        used.update(members)
        processes = [[n for n in members if n in shared]] + [[n] for n in members if n not in shared]
        processes = [p for p in processes if p]
        groups.append(_phases([by_name[n] for n in members], processes, inp, gpu_memory))
    return groups


def _phases(members: list[RoleEstimate], processes: list[list[str]], inp: _Inputs,
            gpu_memory: int | None) -> GpuGroup:
    """Per phase, what each process on the GPU holds. Separate processes add up (each has its own CUDA context and
    keeps what its allocator cached). Models in one process keep their resident terms (weights, gradient
    partitions, optimizer states, buckets) side by side, but run one after another: the transient terms
    (activations, logits, gathered parameters) are those of the largest active model, and the CUDA context and
    fragmentation are counted once for the process.

    Sleep and offload (``vllm.enable_sleep``, ``deepspeed.enable_sleep``): a sleeping vLLM holds nothing but its
    CUDA context outside generation; a sleeping DeepSpeed engine keeps only ``deepspeed.sleep_keeps`` (its 16-bit
    partitions) and its CUDA context outside its own work, and the trained models then train one after another.
    The weight sync (``weight-sync``) is the phase where vLLM is woken while the policy sends it its weights: vLLM
    holds its whole reservation (``vllm.sync_wake`` all) or its weights only (weights), the policy its resident
    states when they are loaded for the sync (``deepspeed.sync_loaded``) plus one gathered ZeRO-3 parameter, and
    every other process what it keeps."""
    vllm_sleeps = inp.flag("vllm.enable_sleep")
    ds_sleeps = inp.flag("deepspeed.enable_sleep")
    # what a sleeping DeepSpeed engine keeps on the GPU unless the launch says (deepspeed.sleep_keeps)
    keeps = inp.get("deepspeed.sleep_keeps", K.sleep_keeps)
    keeps = tuple(keeps) if isinstance(keeps, (list, tuple, set, frozenset)) else K.sleep_keeps
    wake = str(inp.get("vllm.sync_wake", "all") or "all").lower()
    sync_loaded = inp.flag("deepspeed.sync_loaded", not ds_sleeps)
    by_name = {m.role: m for m in members}
    phases: dict[str, list[tuple[str, Term]]] = {}
    trainables = [m for m in members if m.trainable]
    wanted = {"training"} if trainables else set()
    wanted |= {m.phase for m in members} | {p for m in members for t in m.terms for p in t.phases}
    policy = next((m for m in trainables if m.role in ("actor", "policy")), None)
    # a vLLM of its own process (Ray actors: ORZ, OpenRLHF); verl's hybrid engine wakes the rollout inside the
    # training process (weights first, KV cache after the sync), which its generation phase already covers
    if vllm_sleeps and ["vllm"] in processes and policy is not None:
        wanted.add(WEIGHT_SYNC)

    def asleep(m: RoleEstimate) -> list[Term]:
        kept = [t for t in m.terms if t.name in keeps and m.holds(t)]
        return kept + [Term("runtime", K.cuda_context, f"asleep: CUDA context {gib(K.cuda_context)} (offload_states "
                                                     f"empties the allocator cache)", SRC_DS_OFFLOAD_STATES)]

    def held(m: RoleEstimate, phase: str, active: str | None = None) -> list[Term]:
        if m.role == "vllm":
            if phase == WEIGHT_SYNC and wake == "weights":
                weights = m.kv.get("weights_per_gpu", 0)
                return [Term("vllm_weights", weights, f"woken for the weight sync with its weights only: "
                                                      f"{gib(weights)}", SRC_VLLM_SLEEP),
                        Term("runtime", K.cuda_context, f"CUDA context {gib(K.cuda_context)}", SRC_OVERHEAD)]
            if vllm_sleeps and phase not in ("generation", WEIGHT_SYNC):
                # asleep: weights and KV cache released; an engine's own process keeps its context
                return [t for t in m.terms if t.name in ("runtime", "engine_process")]
            return list(m.terms)
        if phase == WEIGHT_SYNC:
            if m is policy and sync_loaded:
                one = [Term("gathered_params", m.gather_one, "one parameter gathered at a time for the weight sync: "
                                                             "the largest module's 16-bit copy", SRC_ORZ_BROADCAST)]
                return [t for t in m.terms if m.holds(t)] + (one if m.gather_one else [])
            return asleep(m) if m.trainable and ds_sleeps else [t for t in m.terms if m.holds(t)]
        if m.trainable and ds_sleeps and (phase not in ("training", STEP) or m.role != active):
            return asleep(m)
        if phase == STEP:  # after the backward: what stays, and what the step itself allocates
            return [t for t in m.terms if m.holds(t) or STEP in t.phases]
        is_active = m.phase == phase if active is None or not m.trainable else m.role == active
        return [t for t in m.terms
                if m.holds(t) or (phase in t.phases if t.phases else is_active)]

    def collect(phase: str, active: str | None = None) -> list[tuple[str, Term]]:
        items: list[tuple[str, Term]] = []
        for names in processes:
            if len(names) == 1:
                m = by_name[names[0]]
                items += [(m.role, t) for t in held(m, phase, active)]
                continue
            items += _one_process(phase, [by_name[n] for n in names], lambda m, p: held(m, p, active))
        return items

    for phase in ("generation", "experience", "training", STEP, WEIGHT_SYNC):
        if phase not in wanted:
            continue
        if phase in ("training", STEP) and ds_sleeps and trainables:
            # each trained model is loaded, trained and offloaded in turn: the largest turn is the phase
            turns = [collect(phase, m.role) for m in trainables]
            phases[phase] = max(turns, key=lambda items: sum(t.bytes for _, t in items))
        else:
            phases[phase] = collect(phase)
    return GpuGroup(members, phases, gpu_memory, shared_process=any(len(p) > 1 for p in processes))


def _one_process(phase: str, models: list[RoleEstimate], held) -> list[tuple[str, Term]]:
    items: list[tuple[str, Term]] = []
    transient: dict[str, list[Term]] = {}
    for m in models:
        terms = [t for t in held(m, phase) if t.name not in ("runtime", "allocator_slack")]
        items += [(m.role, t) for t in terms if m.holds(t)]
        moving = [t for t in terms if not m.holds(t)]
        if moving:
            transient[m.role] = moving
    if transient:
        busiest = max(transient, key=lambda role: sum(t.bytes for t in transient[role]))
        items += [(busiest, t) for t in transient[busiest]]
    # vLLM's reservation is a cap that already covers its own allocator's slack
    names = "+".join(m.role for m in models)
    lead = models[0].role
    items += [(lead, t) for t in _slack([t for _, t in items], f"one process holds {names}: context once; ",
                                        any(m.expandable_segments for m in models))]
    return items


MAX_PLACED_NODES = 64  # per GPU group: further nodes of a group hold what its others hold (2^32 nodes stay cheap)


def _place(role_nodes: dict[str, tuple[int, int]], groups: list[GpuGroup], per_node: int) -> list[dict[str, int]]:
    """First-fit placement of each GPU group's per-node chunks onto nodes of ``per_node`` GPUs (at most
    MAX_PLACED_NODES chunks of a group: the rest would repeat the same nodes)."""
    nodes: list[dict[str, int]] = []
    free: list[int] = []
    for g in groups:
        lead = g.roles[0].role
        count, chunk = role_nodes.get(lead, (1, 1))
        chunk = max(1, min(chunk, per_node))
        for _ in range(min(count, MAX_PLACED_NODES)):
            for i, f in enumerate(free):
                if f >= chunk:
                    break
            else:
                nodes.append({})
                free.append(per_node)
                i = len(nodes) - 1
            free[i] -= chunk
            for m in g.roles:
                nodes[i][m.role] = nodes[i].get(m.role, 0) + chunk
    return nodes


RAY_FRAMEWORKS = ("verl", "orz")


def _under_ray(inp: _Inputs, ctx: dict) -> bool:
    """Whether the job's workers are Ray actors, which Ray's memory monitor kills before the node runs out."""
    entry = inp.get("job.entry")
    return ctx.get("framework") in RAY_FRAMEWORKS or (
        ctx.get("framework") == "openrlhf" and isinstance(entry, str) and entry.endswith("_ray"))


def _host(roles, role_nodes, groups, inp: _Inputs, ctx: dict, hardware, versions: dict,
          assumptions: list[str]) -> list[HostNode]:
    per_node = hardware.gpus_per_node or max((p for _, p in role_nodes.values()), default=K.default_gpus_per_node)
    if not hardware.gpus_per_node:
        assumptions.append(f"{per_node} GPUs per node assumed for host RAM placement")
    placement = _place(role_nodes, groups, per_node)
    if any(count > MAX_PLACED_NODES for count, _ in role_nodes.values()):
        assumptions.append(f"host RAM is placed for the first {MAX_PLACED_NODES} nodes of each role; its other "
                           "nodes hold the same")
    if len(groups) > 1:
        assumptions.append("roles are placed on nodes in launch order, first fit (Ray may place them otherwise)")
    limit, limit_name = None, ""
    if hardware.host_memory and hardware.container_memory:
        limit = min(hardware.host_memory, hardware.container_memory)
        limit_name = "container limit" if hardware.container_memory <= hardware.host_memory else "host RAM"
    elif hardware.container_memory:
        limit, limit_name = hardware.container_memory, "container limit"
    elif hardware.host_memory:
        limit, limit_name = hardware.host_memory, "host RAM"
    if limit is not None and _under_ray(inp, ctx):
        limit = int(limit * K.ray_memory_usage_threshold)
        limit_name = f"Ray kill line ({K.ray_memory_usage_threshold:.0%} of {limit_name})"
    by_name = {r.role: r for r in roles}
    w, a, stage = ctx["w"], ctx["a"], ctx["stage"]
    k = K.adam_bytes_with_master if w == 2 else K.adam_bytes_without_master
    process_host = K.process_host_ram
    shared = sorted(shared_roles(inp, [r.role for r in roles]), key=[r.role for r in roles].index)
    out = []
    for index, ranks in enumerate(placement):
        persistent: list[Term] = []
        transient: list[Term] = []
        cpu_adam: dict[str, tuple[int, int]] = {}
        together = [role for role in ranks if role in shared]
        if together:
            count = max(ranks[role] for role in together)
            persistent.append(Term(f"process:{'+'.join(together)}", count * process_host,
                                   f"{count} processes x {gib(process_host)} (Python, torch, CUDA libraries), each "
                                   f"holding {', '.join(together)}", SRC_OVERHEAD))
        for role, count in ranks.items():
            r = by_name[role]
            P, n = r.params, r.gpus
            share = f"{count} of {n} ranks"
            if role not in together:
                persistent.append(Term(f"process:{role}", count * process_host,
                                       f"{count} processes x {gib(process_host)} (Python, torch, CUDA libraries)",
                                       SRC_OVERHEAD))
            if role == "vllm":
                if inp.flag("vllm.enable_sleep") and inp.number("vllm.sleep_level", 1) == 1:
                    raw = r.kv.get("weights_per_gpu", 2 * P // max(1, r.gpus))
                    per = _vllm_sleep_backup(r.arch, r.kv.get("tensor_parallel", 1), w) if r.arch else raw
                    persistent.append(Term("vllm_sleep:weights", count * per,
                                           f"sleep level 1 parks each engine GPU's weights ({gib(raw)}) in pinned "
                                           f"host RAM, one block per allocator segment rounded up to a power of "
                                           f"two: {count} x {gib(per)}", f"{SRC_VLLM_SLEEP}; {SRC_PINNED}"))
                continue
            if r.trainable and inp.flag("train.activation_offloading") and r.arch is not None:
                persistent.append(_offloaded_activations_host(r, ctx, count))
            if ctx.get("strategy") == "megatron":
                persistent_mcore, load = _megatron_host(r, count, index == _first_node(placement, role))
                persistent += persistent_mcore
                transient += load
                continue
            if ctx.get("strategy") in ("fsdp", "fsdp2"):
                persistent_fsdp, load = _fsdp_host(r, inp, count, index == _first_node(placement, role),
                                                   _quantized(ctx), versions, assumptions)
                persistent += persistent_fsdp
                transient += load
                continue
            # what the optimizer updates: every parameter, or only the adapters (LoRA) or the unfrozen layers
            T = r.trained_params or P
            states = r.state_bytes or k * T
            what = f"{_count(T)}" + (f" trained of {_count(P)}" if T < P else "")
            if r.trainable and ctx["offload_optimizer"] == "cpu" and stage >= 1:
                cpu_adam[role] = (states * count // n, states)
                persistent += _offload_optimizer_host(r, inp, ctx, versions, states, count, what, share,
                                                      assumptions)
            if r.trainable and inp.flag("deepspeed.enable_sleep") and not (ctx["offload_optimizer"] == "cpu"
                                                                           and stage >= 1):
                # offload_states parks the optimizer states and fp32 partitions in pinned host RAM between uses
                blocks = _sleep_blocks(r, inp, ctx, versions, states, assumptions) if stage == 3 else None
                if blocks is None:
                    persistent.append(Term(f"sleep_states:{role}", states * count // n,
                                           f"asleep: {states / T:g} B (fp32 master + states) x {what} x {share} "
                                           f"parked by offload_states", SRC_DS_OFFLOAD_STATES))
                else:
                    per_rank, how, source = blocks
                    persistent.append(Term(f"sleep_states:{role}", count * per_rank,
                                           f"asleep: {how} per rank ({gib(per_rank)}) x {share}", source))
            if r.trainable and ctx["offload_param"] == "cpu" and stage == 3:
                if _pin_memory(inp, ctx, versions, "param", assumptions)[0] and r.arch is not None:
                    persistent += _pinned_params(r, w, count, share)
                else:
                    persistent.append(Term(f"params:{role}", w * P * count // n,
                                           f"offloaded 16-bit params {w} B x {_count(P)} x {share}", SRC_DS_MEMORY))
            if not r.trainable and ctx[f"offload_{role}"]:
                persistent.append(Term(f"params:{role}", w * P * count // (n if ctx["eval_stage"] == 3 else 1),
                                       f"offloaded {role} weights {w} B x {_count(P)}"
                                       + (f" x {share}" if ctx["eval_stage"] == 3 else " per rank"), SRC_DS_MEMORY))
            # LLaMA-Factory without ZeRO-3 loads with device_map onto each rank's GPU (low_cpu_mem_usage): shard by
            # shard, as zero.Init does, not a full copy in host RAM; so does a quantized load (transformers turns
            # low_cpu_mem_usage on with a quantization_config)
            quantized = r.trainable and _quantized(ctx)
            # a device_map load (a model split over GPUs) also streams shard by shard onto its GPUs
            streamed = stage == 3 or ctx.get("framework") == "llamafactory" or quantized or ctx["model_split"] > 1
            load = min(w * P // 1, K.checkpoint_shard_bytes) if streamed else w * P
            how = ("one checkpoint shard ({}, zero.Init)" if stage == 3 else
                   "one checkpoint shard ({}, quantized as it loads)" if quantized else
                   "one checkpoint shard ({}, device_map onto the GPUs)").format(gib(load))
            transient.append(Term(f"loading:{role}", count * load,
                                  f"{count} ranks x " + (how if streamed else f"a full {w} B copy ({gib(w * P)}) while "
                                                                              f"loading"),
                                  SRC_QUANT_LOAD if quantized and stage < 3 else
                                  SRC_LOAD if stage == 3 or not streamed else SRC_LF_LOAD))
            if r.trainable and index == _first_node(placement, role):
                if T < P and stage < 3 and _int_of(inp.get("train.lora_rank"), 0) > 0:
                    # the model is whole on rank 0's GPU: PEFT's save_pretrained writes the adapters only
                    ad = dtype_bytes("fp32", 4) if ctx["plain"] else w
                    transient.append(Term(f"saving:{role}", ad * T, f"rank 0 saves the adapters only (PEFT): {ad} B x "
                                                                    f"{_count(T)}", SRC_LORA))
                else:
                    transient.append(Term(f"saving:{role}", w * P,
                                          f"rank 0 gathers the full {w} B state dict to save: {gib(w * P)}", SRC_SAVE))
        if len(together) > 1:
            transient = _one_after_another(transient, together)
        out.append(HostNode(index, ranks, persistent, transient, limit, limit_name, cpu_adam))
    return out


def _saves_checkpoints(inp: _Inputs) -> bool:
    """verl saves only when trainer.save_freq > 0 (default -1 in every release); other trainers save by default."""
    return inp.get("framework") != "verl" or _int_of(inp.get("checkpoint.save_freq"), -1) > 0


def _verl_pinning(r: RoleEstimate, inp: _Inputs, versions: dict | None, assumptions: list[str]) -> dict | None:
    """How verl's release parks this role's shards (schemas/verl/offload_pinning.json), with the per-rank tensor
    sizes in elements: None outside verl, before 0.3.0, or where the shards are not the whole model's (LoRA, a
    frozen tower: their layout is not read)."""
    from rlhf_lint.frameworks.deepspeed import row_at, version_tuple
    from rlhf_lint.schemas import load

    if inp.get("framework") != "verl" or r.arch is None or (r.trained_params or r.params) < r.params:
        return None
    table = load("verl/offload_pinning.json")
    release = _patch_release(versions, "verl")
    row = row_at(table["rows"], release) if release is not None else None
    if release is not None and row is None:
        return None  # before 0.3.0
    if row is None:
        row = row_at(table["rows"], version_tuple(table["unknown_release"]))
        assumptions.append(f"verl release not given: {table['unknown_release_note']}")
    units = _whole_model(_fsdp_unit_numels(r.arch), r.params)
    tensors = _whole_model(r.arch.tensor_numels(), r.params)
    if not units or not tensors:
        return None
    return {"row": row, "units": units, "tensors": tensors, "strategy": inp.get("train.strategy"),
            "rounds": _pinned_blocks_round(versions)}


def _verl_parked(r: RoleEstimate, pinning: dict | None, what: str, total: int, copies: int) -> tuple[int, str, str]:
    """(bytes, how, source suffix) of ``total`` parked shard bytes per rank: one pinned block per FSDP unit or per
    parameter (x ``copies`` for the Adam moments), each rounded up to a power of two, where the release pins them."""
    if pinning is None or copies < 1:
        return total, "", ""
    row, fsdp2 = pinning["row"], pinning["strategy"] == "fsdp2"
    layout = row["optimizer"] if what == "optimizer" else row["fsdp2_params" if fsdp2 else "fsdp_params"]
    if layout == "unpinned":
        return total, " (model.cpu(): not pinned)", ""
    if not pinning["rounds"]:
        return total, " (pinned)", ""
    pieces = pinning["tensors"] if fsdp2 or layout == "per_parameter" else pinning["units"]
    blocks = copies * _rounded_blocks(pieces, total / copies)
    kind = "parameter" if pieces is pinning["tensors"] else "FSDP unit"
    return blocks, f" (one pinned block per {kind}{' and moment' if copies > 1 else ''}, rounded up to a power " \
                   f"of two)", f" ; {row['source']}; {SRC_PINNED}"


def _fsdp_host(r: RoleEstimate, inp: _Inputs, count: int, first_node: bool,
               quantized: bool, versions: dict | None, assumptions: list[str]) -> tuple[list[Term], list[Term]]:
    """Host RAM of one verl FSDP role on a node: what param_offload / optimizer_offload park there between phases,
    the reference's CPU-offloaded bf16 shards, the loading copy and the sharded checkpoint."""
    P, n = r.params, r.gpus
    share = f"{count} of {n} ranks"
    persistent: list[Term] = []
    if r.trainable and r.host_states:
        persistent.append(Term(f"params:{r.role}", count * r.host_states,
                               f"fsdp_offload_params keeps the parameter, gradient and optimizer shards here: {share} "
                               f"x {gib(r.host_states)}", SRC_FSDP_OFFLOAD))
    elif r.trainable:
        weights = next((t for t in r.terms if t.name == "weights"), None)
        states = next((t for t in r.terms if t.name == "optimizer_states"), None)
        m_shard = weights.bytes if weights is not None else 0
        pinning = _verl_pinning(r, inp, versions, assumptions)
        if str(_per_role(inp, r.role, "offload.param", "none")) == "cpu":
            parked, how, source = _verl_parked(r, pinning, "params", m_shard, 1)
            persistent.append(Term(f"params:{r.role}", count * parked,
                                   f"param_offload parks the parameter shards here{how}: {share} x {gib(parked)}",
                                   f"{SRC_VERL_OFFLOAD}{source}"))
        if states is not None and str(_per_role(inp, r.role, "offload.optimizer", "none")) == "cpu":
            moments = round(states.bytes / m_shard) if m_shard else 0  # Adam: two moments in the shards' dtype
            parked, how, source = _verl_parked(r, pinning, "optimizer", states.bytes, moments)
            persistent.append(Term(f"optimizer_states:{r.role}", count * parked,
                                   f"optimizer_offload parks the Adam moments here{how}: {share} x {gib(parked)}",
                                   f"{SRC_VERL_OFFLOAD}{source}"))
    elif inp.get("verl.inference_cpu_offload") is not False:  # verl 0.1 keeps them on the GPU
        persistent.append(Term(f"params:{r.role}", 2 * P * count // n,
                               f"bf16 shards of the {r.role} in host RAM (FSDP CPUOffload): 2 B x {_count(P)} x {share}",
                               SRC_VERL_REF_CPU))
    # rank 0 materialises the Hugging Face weights on the CPU and FSDP broadcasts them (sync_module_states)
    dtype_bytes = 4 if r.trainable else 2
    transient = []
    efficient = inp.get("train.fsdp_cpu_ram_efficient_loading")
    if efficient is None and inp.get("framework") in HF_TRAINERS and r.trainable and quantized:
        efficient = False  # the Trainer's FSDP: accelerate's default; each rank reads its quantized shards
    if efficient is not None:
        # accelerate FSDP: from_pretrained loads in torch_dtype (fp32 when unset or auto: an upper bound) on every
        # rank, or on rank 0 only with cpu_ram_efficient_loading (the others start on the meta device); a quantized
        # base is read in its quantized size
        loaded = 2 if str(inp.get("hf.torch_dtype", "")) in ("bf16", "fp16") else 4
        size, how = loaded * P, f"{loaded} B x {_count(P)}"
        if r.trainable and quantized and r.weight_bytes:
            size, how = r.weight_bytes, f"quantized, {gib(r.weight_bytes)}"
            if efficient is not True:
                # without it the bitsandbytes quantizer loads each rank straight onto its GPU, shard by shard
                size = min(size, K.checkpoint_shard_bytes)
                how = f"one checkpoint shard at a time onto its GPU, quantized as it loads, {gib(size)}"
        ranks = (1 if first_node else 0) if efficient is True else count
        if ranks:
            transient.append(Term(f"loading:{r.role}", ranks * size,
                                  f"{'rank 0 loads' if efficient is True else f'{ranks} ranks each load'} the "
                                  f"model, {how} (fsdp_cpu_ram_efficient_loading "
                                  f"{str(efficient is True).lower()})", SRC_ACC_FSDP_LOADING))
    elif first_node:
        transient.append(Term(f"loading:{r.role}", dtype_bytes * P,
                              f"rank 0 loads the full model in {'fp32' if dtype_bytes == 4 else 'bf16'} before "
                              f"sharding: {gib(dtype_bytes * P)}", SRC_VERL_DTYPE))
    if r.trainable and _saves_checkpoints(inp):
        # the shards that live on the GPU are copied to host RAM to be written; parked ones are there already
        shard = sum(t.bytes for t in r.terms if t.name in ("weights", "optimizer_states") and not t.phases)
        if shard:
            transient.append(Term(f"saving:{r.role}", count * shard,
                                  f"sharded checkpoint: each rank copies its GPU-resident parameter and optimizer "
                                  f"shards ({share} x {gib(shard)})", SRC_VERL_OFFLOAD))
    return persistent, transient


def _offloaded_activations_host(r: RoleEstimate, ctx: dict, count: int) -> Term:
    """TRL's activation_offloading: what one training micro batch saves for its backward sits in pinned host RAM
    (each tensor in its own pinned block, rounded up to a power of two): the checkpointed layer inputs but the GPU's
    stash (without checkpointing every layer's saved tensors but one), and the loss's fp32 log-softmax unless the
    loss is fused."""
    arch, tokens = r.arch, r.micro_tokens.get("training", (0,))[0]
    h, L = arch.hidden_size, arch.num_layers
    if ctx["checkpointing"]:
        layers = max(0, L - K.activation_offload_stash)
        acts = layers * _pow2(K.checkpoint_bytes * tokens * h)
        what = f"{layers} layer inputs of {gib(K.checkpoint_bytes * tokens * h)}"
    else:
        acts = int((L - 1) * tokens * h * activation_units(arch, bool(arch.num_experts)))
        what = f"{L - 1} layers' saved tensors ({gib(acts)})"
    loss = 0 if ctx["fused_loss"] else _pow2(dtype_bytes("fp32", 4) * tokens * arch.vocab_size)
    per = acts + loss
    return Term(f"activations:{r.role}", count * per,
                f"activation_offloading: {what}" + (f" + the loss's fp32 log-softmax {gib(loss)}" if loss else "")
                + f", pinned, per process: {count} x {gib(per)}", SRC_TRL_OFFLOAD)


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length() if n > 0 else 0


def _vllm_weight_numels(arch: ModelArch, tp: int) -> list[tuple[int, int, float]]:
    """(elements, how many, bytes per element or 0 for the model's dtype) of the weight tensors one tensor-parallel
    rank of vLLM holds: q, k and v fused (KV heads replicated when fewer than the ranks), gate and up fused, an MoE
    layer's experts in two tensors (FusedMoE w13, w2), the vocabulary padded to 64 rows. Latent attention (MLA) and
    plain MLPs keep Hugging Face's tensors, split over the ranks. Counted per layer kind, never per layer (a config
    may claim any number of layers). A checkpoint stored in MXFP4 (experts) or FP8 (linear layers) keeps its
    bytes there (_stored_weights)."""
    import math

    h, d = arch.hidden_size, arch.dim_head

    def shard(n: int) -> int:
        return -(-n // tp)

    linear, expert = arch.linear_weight_bytes, arch.expert_weight_bytes
    vocab = shard(-(-arch.vocab_size // 64) * 64) * h
    out = [(vocab, 1 if arch.tie_embeddings else 2, 0.0), (h, 1, 0.0)]  # embedding (and LM head), final norm
    q, kv = shard(arch.num_heads) * d, max(1, arch.num_kv_heads // tp) * d
    for moe, layers in arch.layer_kinds():
        if not len(layers):
            continue
        if arch.kv_lora_rank or arch.mlp != "gated":
            out += [(shard(math.prod(shape)), count * len(layers), linear if len(shape) > 1 else 0.0)
                    for _, shape, count in arch.layer_tensors(moe)]
            continue
        mlp_inter = shard(arch.expert_intermediate_size if moe else arch.intermediate_size)
        experts = arch.num_experts if moe else 1
        routed = (expert or linear) if moe else linear
        tensors = [((q + 2 * kv) * h, linear), (h * q, linear), (h, 0.0), (h, 0.0),
                   (experts * 2 * mlp_inter * h, routed), (experts * h * mlp_inter, routed)]
        if moe:
            tensors.append((arch.num_experts * h, 0.0))  # the router
            if arch.shared_expert_intermediate_size:
                shared = shard(arch.shared_expert_intermediate_size)
                tensors += [(2 * shared * h, linear), (h * shared, linear)]
        out += [(n, len(layers), each) for n, each in tensors]
    return out


def _vllm_sleep_backup(arch: ModelArch, tp: int, w: int) -> int:
    """Host bytes of vLLM's sleep-level-1 backup of one engine GPU's weights: one pinned tensor per segment of the
    CUDA caching allocator (small tensors share 2 MiB segments, mid-size ones 20 MiB segments, larger ones get their
    own, rounded to 2 MiB), each rounded up to a power of two by torch's pinned host allocator
    (schemas/memory/allocator.json segments)."""
    from rlhf_lint.schemas import load

    seg = load("memory/allocator.json")["segments"]
    round_large = seg["round_large"]
    total = small = mid = 0
    for numel, count, each in _vllm_weight_numels(arch, max(1, int(tp or 1))):
        size = int(numel * (each or w))
        if size <= seg["small_request"]:
            small += size * count
        elif size < seg["large_min"]:
            mid += size * count
        else:
            total += _pow2(-(-size // round_large) * round_large) * count
    total += -(-small // seg["small_segment"]) * _pow2(seg["small_segment"])
    return total + -(-mid // seg["mid_segment"]) * _pow2(seg["mid_segment"])


def _offload_optimizer_host(r: RoleEstimate, inp: _Inputs, ctx: dict, versions: dict, states: int, count: int,
                            what: str, share: str, assumptions: list[str]) -> list[Term]:
    """Host RAM of ZeRO-Offload's optimizer side for ``count`` ranks of a role: the fp32 partition and its fp32
    gradient, the release's 16-bit, staging and (ZeRO-3) flat gradient buffers, each page-locked block rounded up
    to a power of two when pin_memory pins it (schemas/deepspeed/offload_host_buffers.json), and the Adam moments,
    never pinned. Measured: bench/calibration/measured.json HZ2o-host and HZ3o-host."""
    from rlhf_lint.frameworks.deepspeed import row_at, version_tuple
    from rlhf_lint.schemas import load

    table = load("deepspeed/offload_host_buffers.json")
    n, w, stage = r.gpus, ctx["w"], ctx["stage"]
    f32 = dtype_bytes("fp32", 4)
    T = r.trained_params or r.params
    part = -(-T // n)
    layout = "zero3" if stage == 3 else "zero12"
    rows = table[layout]
    release = _patch_release(versions, "deepspeed")
    row = row_at(rows, release) if release is not None else None
    if row is None:
        row = row_at(rows, version_tuple(table["unknown_release"][layout]))
        if stage < 3:
            assumptions.append("DeepSpeed release not given: ZeRO-Offload's host buffers sized without the 16-bit "
                               "copy of the partition that ZeRO-1/2 keeps there from 0.17.0")
    pin, pin_how = _pin_memory(inp, ctx, versions, "optimizer", assumptions)
    rounds = _pinned_blocks_round(versions)
    src = f"{SRC_DS_STAGE3 if stage == 3 else SRC_DS_STAGE12}; {row['source']}"

    def held(name: str, blocks: list[int]) -> tuple[int, str]:
        """Bytes of a buffer made of ``blocks`` and how it is held, or (0, "") when the release has none."""
        if name not in row["buffers"]:
            return 0, ""
        pinned = name in row["always_pinned"] or (pin and name in row["pinned_with_pin_memory"])
        if not pinned:
            return sum(blocks), ""
        return sum(_pow2(b) if rounds else b for b in blocks), " pinned" + (", rounded up to a power of two"
                                                                              if rounds else "")

    if stage == 3:
        sub = _int_of(inp.get("deepspeed.sub_group_size"), 0) or K.sub_group_elements
        groups = _sub_groups(r, part, sub)
        master, master_how = held("fp32_master", [f32 * g for g in groups])
        grads, grads_how = held("fp32_grads", [f32 * g for g in groups])
        flat, flat_how = held("grad_partitions", [ctx["a"] * part])
        grad_terms = [Term(f"gradients:{r.role}", count * (grads + flat),
                           f"fp32 gradients of {len(groups)} sub-group(s){grads_how} ({gib(grads)}) + the flat "
                           f"{ctx['a_name']} gradient partition{flat_how} ({gib(flat)}), {pin_how}: x {share}", src)]
        extra = []
    else:
        master, master_how = held("fp32_master", [f32 * part])
        grads, grads_how = held("fp32_grads", [f32 * part])
        grad_terms = [Term(f"gradients:{r.role}", count * grads,
                           f"fp32 gradient partition {f32} B x {what} / {n}{grads_how} ({gib(grads)}), {pin_how}: "
                           f"x {share}", src)]
        numels = _whole_model(r.arch.tensor_numels(), T) if r.arch is not None and T == r.params else []
        bit16, bit16_how = held("bit16_params", [w * part])
        staging, staging_how = held("grad_staging", [w * max(numels)] if numels else [])
        note = (f"16-bit partition copy{bit16_how} ({gib(bit16)}) + gradient staging buffer of the largest "
                f"parameter{staging_how} ({gib(staging)})")
        accumulate = _int_of(inp.get("batch.grad_accum"), 0)
        if accumulate > 1:
            # accumulated_grads_in_cpu: a whole-parameter 16-bit buffer per parameter of the rank's partition,
            # about 1/n of the parameters, each its own block
            blocks, acc_how = held("grad_accumulation", [w * t for t in numels] or [w * T])
            blocks //= n
            bit16 += blocks
            note += (f" + 16-bit gradient accumulation buffer of each parameter{acc_how} ({gib(blocks)}, "
                     f"gradient_accumulation_steps {accumulate})")
        extra = [Term(f"offload_buffers:{r.role}", count * (bit16 + staging), f"{note}: x {share}", src)] \
            if bit16 + staging else []
    moments = states - (f32 * T if w == 2 else 0)
    per_rank = -(-moments // n)
    return [Term(f"optimizer_states:{r.role}", count * (master + per_rank),
                 f"CPU Adam: fp32 partition{master_how} {gib(master)} + moments {moments / T:g} B x {what} / {n} "
                 f"({gib(per_rank)}): x {share}", f"{SRC_CPU_ADAM}; {src}")] + grad_terms + extra


def _pinned_blocks_round(versions: dict | None) -> bool:
    """Whether torch's pinned host allocator rounds each block up to a power of two: from torch 1.11, and when the
    release is not known (schemas/deepspeed/offload_host_buffers.json, pinned_rounding)."""
    from rlhf_lint.schemas import load

    since = load("deepspeed/offload_host_buffers.json")["pinned_rounding"]["from_torch"]
    release = _release(versions, "torch")
    return release is None or release >= tuple(int(x) for x in since.split("."))


def _sleep_blocks(r: RoleEstimate, inp: _Inputs, ctx: dict, versions: dict, states: int,
                  assumptions: list[str]) -> tuple[int, str, str] | None:
    """(bytes per rank, how, source) of what OpenRLHF's --deepspeed_enable_sleep (or ORZ's offload between phases)
    parks in host RAM under ZeRO-3: the states its release asks offload_states for, each tensor in its own pinned
    block rounded up to a power of two (schemas/deepspeed/offload_host_buffers.json, offload_states). None where the
    framework's call is not known (the states are then counted at their own size)."""
    from rlhf_lint.frameworks.deepspeed import row_at, version_tuple
    from rlhf_lint.schemas import load

    framework = ctx.get("framework")
    table = load("deepspeed/offload_host_buffers.json")
    rows = table["offload_states"].get(framework)
    if rows is None:
        return None
    release = _patch_release(versions, framework)
    row = row_at(rows, release) if release is not None else None
    if row is None:
        row = rows[0]  # the fewest states: no error rests on a state the launch's release may not park
        if len(rows) > 1:
            assumptions.append(f"{framework} release not given: its DeepSpeed sleep sized with the states every "
                               f"release parks (fp32 partitions and Adam moments; later releases more)")
    names = list(row["states"])
    if "lp_grads" in names:
        deepspeed = _patch_release(versions, "deepspeed")
        if deepspeed is None or deepspeed < version_tuple(row["deepspeed_for_lp_grads"]):
            names.remove("lp_grads")
    f32 = dtype_bytes("fp32", 4)
    T = r.trained_params or r.params
    part = -(-T // r.gpus)
    groups = _sub_groups(r, part, _int_of(inp.get("deepspeed.sub_group_size"), 0) or K.sub_group_elements)
    moments = max(0, round((states - f32 * T) / T / f32))  # Adam: two fp32 moments per parameter
    size = _pow2 if _pinned_blocks_round(versions) and row["pin_memory"] else int
    blocks = {"hp_params": [f32 * g for g in groups], "optim_states": [f32 * g for g in groups] * moments,
              "lp_grads": [ctx["a"] * part]}
    total = sum(size(b) for name in names for b in blocks[name])
    how = (" + ".join(names) + f" of {len(groups)} sub-group(s), "
           + ("each block pinned and rounded up to a power of two" if size is _pow2 else "pinned"))
    return total, how, f"{SRC_DS_OFFLOAD_STATES}; {row['source']}"


PIN_MEMORY_SETTINGS = {"param": "deepspeed.offload_param_pin_memory",
                       "optimizer": "deepspeed.offload_optimizer_pin_memory"}


def _pin_memory(inp: _Inputs, ctx: dict, versions: dict, what: str, assumptions: list[str]) -> tuple[bool, str]:
    """Whether zero_optimization.offload_<what> is page-locked, and why: the launch's pin_memory; the value the
    framework's generated ds_config writes; DeepSpeed's default of the release (false up to 0.19.4, true from
    0.19.5: schemas/ds_config_checks.json). An unknown release reads it as false, the smaller host figure, and says
    so: an error must not rest on a default the launch may not get."""
    from rlhf_lint.frameworks.deepspeed import version_tuple
    from rlhf_lint.schemas import load

    pin = inp.get(PIN_MEMORY_SETTINGS[what])
    if isinstance(pin, bool):
        return pin, f"offload_{what}.pin_memory"
    written = load("deepspeed/offload_host_buffers.json")["pin_memory_by_framework"].get(ctx.get("framework"), {})
    if what in written:
        return written[what]["value"], f"{ctx.get('framework')} sets pin_memory"
    key = f"zero_optimization.offload_{what}.pin_memory"
    change = next(row for row in load("ds_config_checks.json")["changed_defaults"] if row["key"] == key)
    release = _patch_release(versions, "deepspeed")
    if release is None:
        assumptions.append(f"DeepSpeed release not given: offload_{what}.pin_memory unset read as false, the "
                           f"default up to {change['since']} (from it DeepSpeed pins, and torch rounds each pinned "
                           f"block up to a power of two)")
        return False, "pin_memory unset (DeepSpeed release unknown: false assumed)"
    value = change["new"] if release >= version_tuple(change["since"]) else change["old"]
    return value, f"pin_memory unset (DeepSpeed {versions['deepspeed']}'s default: {str(value).lower()})"


def _sub_groups(r: RoleEstimate, part: int, sub: int) -> list[int]:
    """Elements of each ZeRO-3 optimizer sub-group of one rank's ``part``: stage3.py _create_fp16_sub_groups closes
    a sub-group once its parameters' partitions reach sub_group_size. The parameter tensors come from the model's
    shapes when they add up to the role's parameters (a full fine-tune), else the partition is cut evenly."""
    n = r.gpus
    tensors = _whole_model(r.arch.tensor_numels(), r.trained_params or r.params) if r.arch is not None else []
    numels = [-(-t // n) for t in tensors] or [sub] * (part // sub) + ([part % sub] if part % sub else [])
    groups, size = [], 0
    for numel in numels:
        size += numel
        if size >= sub:
            groups.append(size)
            size = 0
    groups += [size] if size else []
    groups[-1] += part - sum(groups)  # the tensors' ceilings, back to the partition's size
    return groups


def _pinned_params(r: RoleEstimate, w: int, count: int, share: str) -> list[Term]:
    """Offloaded 16-bit parameters in page-locked memory (offload_param.pin_memory): torch's pinned host allocator
    rounds every block up to a power of two and keeps freed blocks cached (CachingHostAllocator). zero.Init pins
    each parameter's partition on its own (partition_parameters.py _partition_param); stage3.py then copies them into
    one pinned flat buffer per parameter group (param_groups_fp16_flat_cpu_memory), and the per-parameter blocks stay
    in the allocator's cache. Parameters under the persistence threshold stay on the GPU."""
    n, P = r.gpus, r.params
    keep = K.param_persistence_threshold_elements
    blocks = sum(_pow2(w * -(-t // n)) for t in r.arch.tensor_numels() if t > keep)
    flat = _pow2(w * -(-P // n))
    return [Term(f"params:{r.role}", count * flat, f"offloaded 16-bit params in one pinned flat buffer: {w} B x "
                                                   f"{_count(P)} / {n}, rounded up to a power of two = {gib(flat)} "
                                                   f"x {count} ranks ({share})", SRC_PINNED),
            Term(f"pinned_cache:{r.role}", count * blocks, f"zero.Init's per-parameter pinned partitions, each "
                                                          f"rounded up to a power of two and cached after the copy "
                                                          f"into the flat buffer: {gib(blocks)} x {count} ranks",
                 SRC_PINNED)]


def _one_after_another(transient: list[Term], together: list[str]) -> list[Term]:
    """Models of one process load (and are saved) one after another: only the largest copy of each kind is live."""
    kept: list[Term] = []
    for kind in ("loading", "saving"):
        mine = [t for t in transient if t.name.split(":")[0] == kind and t.name.split(":")[1] in together]
        if mine:
            big = max(mine, key=lambda t: t.bytes)
            others = [t.name.split(":")[1] for t in mine if t is not big]
            note = f"; {', '.join(others)} {kind} later in the same process" if others else ""
            kept.append(Term(big.name, big.bytes, big.formula + note, big.source))
    return kept + [t for t in transient if t.name.split(":")[1] not in together]


def _first_node(placement: list[dict[str, int]], role: str) -> int:
    for i, ranks in enumerate(placement):
        if role in ranks:
            return i
    return -1


def with_settings(job, changes: dict[str, object]):
    """A copy of the job with some settings replaced (the what-if behind suggestions)."""
    import copy

    new = copy.copy(job)
    new.settings = copy.copy(job.settings)
    new.settings.items = list(job.settings.items)
    for k, v in changes.items():  # through add, which refuses an undeclared key (a typo in a rule's what-if)
        new.settings.add(Setting(k, v, origin="what-if"))
    new.assumptions = []
    return new
