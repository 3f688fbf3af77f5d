"""Megatron-Core training memory per GPU (ms-swift `megatron sft|pt|rlhf`): what one rank of a tensor / pipeline /
context / expert parallel layout holds.

Parameters: a rank holds 1/TP of each layer's dense weights, 1/(EP x ETP) of the routed experts, its pipeline stage's
layers, and the embedding (first stage) or the LM head (last stage). Model states follow Megatron's mixed precision:
16-bit weights, an fp32 gradient buffer (bf16 with main_grads_dtype fp32 accumulates in fp32), and the fp32 master
copy with Adam's two moments, split over the data-parallel ranks by the distributed optimizer (dense parameters over
world / (TP x PP), context-parallel ranks included; experts over world / (EP x ETP x PP)). This is
megatron/training/theoretical_memory_usage.py's 6 + 12 / DP bytes per parameter. Activations follow Korthikanti et
al. (Table 2) with the per-layer count the rest of the estimate fits (ModelArch.layer_activation_bytes): split over
TP with sequence parallelism, partly replicated without it, over CP always; the first pipeline stage holds up to PP
micro batches in flight (1F1B). The stage with the larger total is reported.
"""
from __future__ import annotations

import math

from rlhf_lint.frameworks.precision import dtype_bytes
from rlhf_lint.memory.catalog import ModelArch
from rlhf_lint.startup.records import record

SRC_MEGATRON_STATES = ("https://github.com/NVIDIA/Megatron-LM/blob/core_r0.13.0/megatron/training/"
                       "theoretical_memory_usage.py (6 + 12 / DP bytes per parameter with the distributed optimizer, "
                       "18 without; the most loaded shard)")
SRC_MEGATRON_ACTIVATIONS = ("https://arxiv.org/abs/2205.05198 (Table 2); https://github.com/NVIDIA/Megatron-LM/blob/"
                            "core_r0.13.0/megatron/training/theoretical_memory_usage.py (first stage: PP micro "
                            "batches in flight, the interleaved schedule's penalty)")
SRC_MEGATRON_LOSS = ("https://github.com/NVIDIA/Megatron-LM/blob/core_r0.13.0/megatron/core/tensor_parallel/"
                     "cross_entropy.py")
SRC_SWIFT_MEGATRON = "https://github.com/modelscope/ms-swift/blob/v4.5.2/swift/megatron/arguments/megatron_args.py"
SRC_BRIDGE_LOAD = ("https://github.com/modelscope/ms-swift/blob/v4.5.2/swift/megatron/trainers/rlhf_mixin.py#L39-L41 "
                   "(bridge.load_weights: the checkpoint's safetensors shards read into each rank's slices)")
SRC_BRIDGE_SAVE = (f"{SRC_SWIFT_MEGATRON}#L679-L689 (save_safetensors true, max_shard_size '5GB': the HF checkpoint "
                   f"written shard by shard)")
SRC_HYBRID_OPTIMIZER = ("https://github.com/NVIDIA/Megatron-LM/blob/core_r0.13.0/megatron/core/optimizer/"
                        "cpu_offloading/hybrid_optimizer.py (fp32 parameter and gradient copies and the CPU "
                        "optimizer's states for the offloaded share)")


LAYOUT_KEYS = ("megatron.tensor_parallel", "megatron.pipeline_parallel", "megatron.virtual_pipeline",
               "megatron.context_parallel", "megatron.expert_parallel", "megatron.expert_tensor_parallel",
               "megatron.recompute", "megatron.recompute_num_layers", "megatron.distributed_optimizer",
               "megatron.mtp_layers")


@record
class Layout:
    world: int
    tp: int = 1
    pp: int = 1
    vpp: int = 0
    cp: int = 1
    ep: int = 1
    etp: int = 1
    sp: bool = False
    distributed: bool = True
    recompute: str = "selective"  # selective | full | none
    method: str = "uniform"
    recompute_layers: int = 1
    first_layers: int = 0  # decoder layers of the first / last pipeline stage when set apart (0: an even split)
    last_layers: int = 0
    mtp: int = 0  # multi-token-prediction layers, on the last stage

    @property
    def optimizer_ranks(self) -> int:
        """Ranks the dense parameters' optimizer is split over (data parallel with the context-parallel ranks)."""
        return max(1, self.world // (self.tp * self.pp))

    @property
    def expert_optimizer_ranks(self) -> int:
        """Ranks the routed experts' optimizer is split over (world / (EP x ETP x PP))."""
        return max(1, self.world // (self.ep * self.etp * self.pp))

    @property
    def data_parallel(self) -> int:
        """Ranks that see different micro batches."""
        return max(1, self.world // (self.tp * self.pp * self.cp))

    def describe(self) -> str:
        parts = [f"TP {self.tp}", f"PP {self.pp}" + (f" x VPP {self.vpp}" if self.vpp > 1 else ""),
                 f"CP {self.cp}", f"DP {self.data_parallel}"]
        if self.ep > 1:
            parts.append(f"EP {self.ep}" + (f" x ETP {self.etp}" if self.etp > 1 else ""))
        return ", ".join(parts) + (", sequence parallel" if self.sp else "")


def refused(lay: Layout) -> str | None:
    """Why Megatron-Core refuses the layout at start-up (initialize_model_parallel; rule A016 says where), or None."""
    for product, what in ((lay.tp * lay.pp * lay.cp, f"TP {lay.tp} x PP {lay.pp} x CP {lay.cp}"),
                          (lay.etp * lay.ep * lay.pp, f"ETP {lay.etp} x EP {lay.ep} x PP {lay.pp}")):
        if lay.world % product:
            return f"{lay.world} GPUs are not divisible by {what} = {product}"
    return None


def vocab_slice(arch: ModelArch, lay: Layout) -> int:
    """Logits per token on one rank: the vocabulary split over the tensor-parallel ranks."""
    return -(-arch.vocab_size // lay.tp)


def _int(value, default: int) -> int:
    return value if type(value) is int and value > 0 else default


# the sizes a role may set apart from the job's (verl's critic: megatron.critic.*)
ROLE_LAYOUT = {"tensor_parallel": "megatron.tensor_parallel", "pipeline_parallel": "megatron.pipeline_parallel",
               "context_parallel": "megatron.context_parallel", "expert_parallel": "megatron.expert_parallel",
               "recompute": "megatron.recompute"}


def layout(inp, world: int, role: str | None = None) -> Layout:
    """The job's layout; a role with a layout of its own (verl's critic: megatron.critic.*) takes its sizes."""
    own = {k: inp.get(f"megatron.{role}.{k}") for k in ROLE_LAYOUT} if role else {}

    def get(key: str):
        value = own.get(key)
        return value if value is not None else inp.get(ROLE_LAYOUT[key])

    tp = _int(get("tensor_parallel"), 1)
    recompute = get("recompute")
    method = inp.get("megatron.recompute_method")
    return Layout(
        world=max(1, world), tp=tp, pp=_int(get("pipeline_parallel"), 1),
        vpp=_int(inp.get("megatron.virtual_pipeline"), 0), cp=_int(get("context_parallel"), 1),
        # expert tensor parallel unset: Megatron-Core takes the tensor-parallel size (parallel_state.py)
        ep=_int(get("expert_parallel"), 1),
        etp=_int(inp.get("megatron.expert_tensor_parallel"), tp) if not own.get("tensor_parallel") else tp,
        # ms-swift turns sequence parallelism off without tensor parallelism (megatron_args.py _init_megatron)
        sp=inp.get("megatron.sequence_parallel") is True and tp > 1,
        distributed=inp.get("megatron.distributed_optimizer") is not False,
        recompute=recompute if recompute in ("selective", "full", "none") else "selective",
        method=method if method in ("uniform", "block") else "uniform",
        recompute_layers=_int(inp.get("megatron.recompute_num_layers"), 1),
        first_layers=_int(inp.get("megatron.first_stage_layers"), 0),
        last_layers=_int(inp.get("megatron.last_stage_layers"), 0),
        mtp=_int(inp.get("megatron.mtp_layers"), 0))


@record
class StageParams:
    """Parameters one rank of a pipeline stage holds: split over TP (dense) and over EP x ETP (experts)."""

    dense: int
    experts: int
    layers: int  # decoder layers of the stage
    head: bool  # the stage runs the LM head (and the loss)
    name: str
    vision: int = 0  # of ``dense``: a vision tower and its aligner (first stage)

    @property
    def total(self) -> int:
        return self.dense + self.experts


def stages(arch: ModelArch, scale: float, lay: Layout, lm_head: bool) -> list[StageParams]:
    """The first stage (embedding) and, with pipeline parallelism, the last (LM head); one stage holds both at PP 1.
    ``scale``: the resolved parameter count over the shape's (a size read from a name with a stand-in shape);
    without ``lm_head`` a small value or classification head replaces the LM head."""
    h = arch.hidden_size
    embedding = arch.embedding_params() + arch.position_embeddings * h
    head = arch.vocab_size * h if lm_head and not arch.tie_embeddings else 0
    experts = arch.expert_params()
    layers = max(0, arch.decoder_params() - experts)
    first_count, last_count = stage_layers(arch.num_layers, lay)

    def body(count: int) -> int:
        return int(layers * count / max(1, arch.num_layers) * scale) // lay.tp

    def routed(count: int) -> int:
        return int(experts * count / max(1, arch.num_layers) * scale) // (lay.ep * lay.etp)

    extra = int(arch.extra_params * scale)  # a vision tower: not split by Megatron's TP here, on the first stage
    embedding, head = int(embedding * scale), int(head * scale)
    # multi-token prediction: a decoder layer of the last layer's kind and its 2h x h projection and norms per depth,
    # on the last stage, sharing the embedding and the LM head
    mtp_dense, mtp_routed = mtp_params(arch, lay, scale)
    if lay.pp == 1:
        return [StageParams(body(first_count) + (embedding + head) // lay.tp + extra + mtp_dense,
                            routed(first_count) + mtp_routed, first_count + lay.mtp, lm_head, "the only stage",
                            extra)]
    # a tied LM head is a copy of the embedding on the last stage
    last_head = head if head or not lm_head else embedding
    return [StageParams(body(first_count) + embedding // lay.tp + extra, routed(first_count), first_count, False,
                        "first stage", extra),
            StageParams(body(last_count) + last_head // lay.tp + mtp_dense, routed(last_count) + mtp_routed,
                        last_count + lay.mtp, lm_head, "last stage")]


def mtp_params(arch: ModelArch, lay: Layout, scale: float) -> tuple[int, int]:
    """(dense, routed) parameters on one rank of the multi-token-prediction layers."""
    if not lay.mtp:
        return 0, 0
    h = arch.hidden_size
    experts = arch.num_experts * arch.mlp_params(arch.expert_intermediate_size) if arch.num_experts else 0
    dense = arch.layer_params() - experts + 2 * h * h + 3 * h
    return int(lay.mtp * dense * scale) // lay.tp, int(lay.mtp * experts * scale) // (lay.ep * lay.etp)


def stage_layers(layers: int, lay: Layout) -> tuple[int, int]:
    """Decoder layers of the first and the last pipeline stage: as set apart (decoder_first / last_pipeline_num_
    layers), the rest split evenly over the other stages, rounded up."""
    if lay.pp == 1:
        return layers, layers
    first, last = lay.first_layers, lay.last_layers
    middle = lay.pp - (1 if first else 0) - (1 if last else 0)
    rest = max(0, layers - first - last)
    even = math.ceil(rest / middle) if middle > 0 else 0
    return first or even, last or even


def in_flight(lay: Layout, micro: int, global_batch) -> tuple[float, str]:
    """Micro batches whose activations the first stage holds at once (1F1B: up to PP; the interleaved schedule adds
    (PP - 1) / (PP x VPP))."""
    if lay.pp == 1:
        return 1.0, ""
    micro_batches = None
    if type(global_batch) is int and global_batch > 0:
        micro_batches = max(1, global_batch // (micro * lay.data_parallel))
    if lay.vpp > 1:
        factor = lay.pp * (1 + (lay.pp - 1) / (lay.pp * lay.vpp))
        return factor, f"{factor:.2f} micro batches in flight (interleaved 1F1B, PP {lay.pp}, VPP {lay.vpp})"
    count = lay.pp if micro_batches is None else min(lay.pp, micro_batches)
    return float(count), f"{count} micro batches in flight (1F1B, PP {lay.pp})"


def layer_bytes_per_token(arch: ModelArch, lay: Layout, units: float, replicated: float) -> float:
    """One layer's saved activations per token on one rank: split over TP with sequence parallelism; without it the
    norms' and dropouts' share stays whole on every TP rank."""
    h = arch.hidden_size
    if lay.sp or lay.tp == 1:
        return units * h / lay.tp
    return units * h * (replicated + (1 - replicated) / lay.tp)


def stored_layers(lay: Layout, layers: int) -> tuple[int, int, int, str]:
    """(layers holding only their checkpointed input, layers holding every activation, layers recomputed at once in
    the backward, how) for the recompute settings."""
    if lay.recompute != "full":
        what = "selective recompute (core attention)" if lay.recompute == "selective" else "no recompute"
        return 0, layers, 0, what
    k = max(1, min(lay.recompute_layers, layers))
    if lay.method == "block":
        return k, layers - k, 1, f"full recompute of {k} layer(s) per stage (block), the rest keep their activations"
    return math.ceil(layers / k), 0, k, f"full recompute, uniform chunks of {k} layer(s): each chunk keeps its input"


def checkpoint_bytes_per_token(arch: ModelArch, lay: Layout, w: int) -> float:
    """A checkpointed layer input per token: 16-bit hidden states, split over TP with sequence parallelism."""
    return w * arch.hidden_size / (lay.tp if lay.sp else 1)


def offload_fraction(inp) -> float:
    if inp.get("offload.optimizer") != "cpu":
        return 0.0
    value = inp.get("megatron.optimizer_offload_fraction")
    return min(1.0, max(0.0, float(value))) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else 1.0


def grad_bytes(inp, w: int, dtype: str) -> tuple[int, str]:
    """The gradient buffer's bytes per parameter: bf16 training with fp32 main grads (ms-swift's default)
    accumulates and all-reduces in fp32; main_grads_dtype bf16, or fp16 training, keeps the parameters' dtype."""
    main = str(inp.get("megatron.main_grads_dtype") or "fp32").lower()
    if dtype == "bf16" and main not in ("bf16", "bfloat16"):
        return dtype_bytes("fp32", 4), "fp32 gradient buffer (bf16 with main_grads_dtype fp32)"
    return w, f"{dtype} gradient buffer (the parameters' dtype)"


def lora_rank(inp) -> int:
    rank = inp.get("train.lora_rank")
    return rank if type(rank) is int and rank > 0 else 0


def lora_targets(inp) -> tuple[str, ...] | None:
    """LoRA targets as Hugging Face projection names: Megatron's fused module names (linear_qkv, linear_fc1, ...)
    read as the projections they hold."""
    from rlhf_lint.schemas import load

    names = load("memory/megatron.json")["lora_target_names"]["names"]
    targets = inp.get("train.lora_targets")
    targets = targets if isinstance(targets, (list, tuple)) else ()
    wanted = tuple(n for t in targets for n in names.get(str(t), (str(t),)))
    return wanted or None
