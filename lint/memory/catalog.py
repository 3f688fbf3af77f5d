"""Model architectures and GPUs, read from the catalogs in schemas/ (loaded once) or from a config.json text.

A model reference (hub id, local directory, a path with a known name in it, a bare size such as ``7.5B``) resolves
to a ModelArch; the parameter count is computed from the architecture. When the architecture had to be guessed
(a bare size, an unknown name with a size in it) the resolution says so and how.
"""
from __future__ import annotations

import math
import re
from rlhf_lint.startup.records import fields, record, replace
from functools import lru_cache
from rlhf_lint.startup.lazyre import lazy_compile

GIB = 1024**3

_SIZE_RE = lazy_compile(r"^\s*(\d+(?:\.\d+)?)\s*([bBmM])\s*$")
# "7B", "1.5b", and "1_6b" (stablelm-2-1_6b: an underscore for the decimal point)
_SIZE_IN_NAME_RE = lazy_compile(r"(?<![0-9a-z.])(\d+(?:[._]\d+)?)([bm])(?![a-z0-9])", re.IGNORECASE)
# "17B-16E": Llama 4's names give the active parameters and the expert count, not the total
_ACTIVE_SIZE_RE = lazy_compile(r"(?<![0-9a-z.])(\d+(?:\.\d+)?)b[-_](\d+)e(?![a-z0-9])", re.IGNORECASE)


@record(frozen=True)
class ModelArch:
    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool = False
    head_dim: int | None = None
    mlp: str = "gated"  # gated (SwiGLU/GeGLU: gate, up, down) | plain (GPT-2: up, down)
    qkv_bias: bool = False
    biases: bool = False  # GPT-2 style: every linear and norm has a bias
    position_embeddings: int = 0  # learned absolute positions (GPT-2)
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    # layers whose FFN is routed experts; None: all of them when num_experts (the others are dense MLPs of
    # intermediate_size: DeepSeek's first_k_dense_replace, Llama 4 Maverick's interleave step, Qwen MoE's
    # mlp_only_layers)
    moe_layers: int | None = None
    # bytes per routed-expert weight as the checkpoint stores them, where an inference engine loads them so
    # (gpt-oss: MXFP4, 0.53125); 0: the model's dtype
    expert_weight_bytes: float = 0.0
    # bytes per decoder linear weight as the checkpoint stores them, where an inference engine loads them so
    # (DeepSeek-V3's block-scaled FP8: 1 B and one fp32 scale per 128 x 128 block); 0: the model's dtype
    linear_weight_bytes: float = 0.0
    # multi-head latent attention (DeepSeek-V2/V3, Moonlight, Kimi K2): low-rank q and compressed KV
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    norms_per_layer: int = 2
    qk_norm: bool = False
    extra_params: int = 0  # parts outside the language model (a vision tower)
    # the context length of the config (0: not known); vLLM's max_model_len when the launch gives none
    max_position_embeddings: int = 0
    published_params: float | None = None
    source: str = ""
    # config.json's model_type: which model code runs (the loss's dtype differs by code and release)
    model_type: str = ""

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads

    @property
    def moe_layer_count(self) -> int:
        if not self.num_experts:
            return 0
        return self.num_layers if self.moe_layers is None else min(self.moe_layers, self.num_layers)

    @property
    def dense_layer_count(self) -> int:
        return self.num_layers - self.moe_layer_count

    @property
    def expert_intermediate_size(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    def attention_shapes(self) -> dict[str, tuple[int, int]]:
        """(d_in, d_out) of each attention projection of one layer, by the module names PEFT matches."""
        h = self.hidden_size
        if self.kv_lora_rank:
            qk = self.num_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
            shapes = ({"q_a_proj": (h, self.q_lora_rank), "q_b_proj": (self.q_lora_rank, qk)} if self.q_lora_rank
                      else {"q_proj": (h, qk)})
            shapes["kv_a_proj_with_mqa"] = (h, self.kv_lora_rank + self.qk_rope_head_dim)
            shapes["kv_b_proj"] = (self.kv_lora_rank, self.num_heads * (self.qk_nope_head_dim + self.v_head_dim))
            shapes["o_proj"] = (self.num_heads * self.v_head_dim, h)
            return shapes
        q, kv = self.num_heads * self.dim_head, self.num_kv_heads * self.dim_head
        return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h)}

    def layer_activation_bytes(self, moe: bool) -> int:
        """Bytes per token one decoder layer keeps for its backward in a 16-bit dtype, counted from what autograd
        saves: each norm's input (RMSNorm: its fp32 upcast 4h and the 16-bit normalised copy 2h; LayerNorm, the
        GPT-2 family with biases: its input 2h); the attention block's input, the outputs of its projections and
        the kernel's output (o_proj's input); the MLP's input and, per unit of width, gate, up, activation and
        product (gated, 8 B) or up and GeLU output (plain, 4 B); in an MoE layer each of the top-k experts holds its
        own copy of the token. Flash attention: no s^2 scores (counted apart). For a 4h GeLU layer this is 32h,
        Korthikanti et al.'s 34h without the dropout masks."""
        h = self.hidden_size
        norms = self.norms_per_layer * (2 * h if self.biases else 6 * h)
        shapes = self.attention_shapes()
        attention = 2 * h + 2 * shapes["o_proj"][0] + sum(2 * d_out for name, (_d_in, d_out) in shapes.items()
                                                          if name != "o_proj")
        per_width = 4 if self.mlp == "plain" else 8
        if moe:
            experts = max(1, self.experts_per_token) * (2 * h + per_width * self.expert_intermediate_size)
            mlp = 2 * h + experts + per_width * self.shared_expert_intermediate_size
        else:
            mlp = 2 * h + per_width * self.intermediate_size
        return norms + attention + mlp

    # -- parameter counts ------------------------------------------------------------------------------------
    def attention_params(self) -> int:
        if self.kv_lora_rank:  # MLA: the projections plus the RMSNorms of the q and kv latents
            return sum(i * o for i, o in self.attention_shapes().values()) + self.q_lora_rank + self.kv_lora_rank
        h, d = self.hidden_size, self.dim_head
        q, kv = self.num_heads * d, self.num_kv_heads * d
        n = h * q + 2 * h * kv + q * h
        if self.qkv_bias or self.biases:
            n += q + 2 * kv
        if self.biases:
            n += h
        if self.qk_norm:
            n += 2 * d
        return n

    def mlp_params(self, inter: int) -> int:
        h = self.hidden_size
        if self.mlp == "plain":
            return 2 * h * inter + ((inter + h) if self.biases else 0)
        return 3 * h * inter

    def moe_ffn_params(self) -> int:
        """One MoE layer's FFN: every expert, the router, a shared expert and its gate."""
        h = self.hidden_size
        n = self.num_experts * self.mlp_params(self.expert_intermediate_size) + h * self.num_experts
        if self.shared_expert_intermediate_size:
            n += self.mlp_params(self.shared_expert_intermediate_size) + h
        return n

    def _ffn_total(self) -> int:
        """The FFN parameters of every layer: MoE layers and the dense ones beside them."""
        return self.moe_layer_count * self.moe_ffn_params() + \
            self.dense_layer_count * self.mlp_params(self.intermediate_size)

    def ffn_params(self) -> int:
        """The FFN parameters of one layer, averaged over the layers (dense and MoE layers differ)."""
        return self._ffn_total() // self.num_layers

    def expert_params(self) -> int:
        """Routed experts' parameters over every layer (what expert parallelism splits)."""
        return self.moe_layer_count * self.num_experts * self.mlp_params(self.expert_intermediate_size)

    def norm_params(self) -> int:
        """One norm: its weight (and bias, GPT-2 style)."""
        return self.hidden_size * (2 if self.biases else 1)

    def layer_params(self) -> int:
        """One decoder layer: the largest (an MoE layer where there are both)."""
        ffn = self.moe_ffn_params() if self.num_experts else self.mlp_params(self.intermediate_size)
        return self.attention_params() + ffn + self.norms_per_layer * self.norm_params()

    def decoder_params(self) -> int:
        return self.num_layers * (self.attention_params() + self.norms_per_layer * self.norm_params()) \
            + self._ffn_total()

    def decoder_linear_params(self) -> int:
        """The decoder's parameters but its norms: its linear layers (and the router)."""
        return self.decoder_params() - self.num_layers * self.norms_per_layer * self.norm_params()

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    def param_count(self) -> int:
        h = self.hidden_size
        n = self.embedding_params() + self.position_embeddings * h
        if not self.tie_embeddings:
            n += self.vocab_size * h
        n += self.decoder_params() + self.norm_params()
        return n + self.extra_params

    def _mlp_tensors(self, prefix: str, inter: int) -> list[tuple[str, tuple[int, ...]]]:
        h = self.hidden_size
        if self.mlp == "plain":
            out = [(f"{prefix}up_proj.weight", (inter, h)), (f"{prefix}down_proj.weight", (h, inter))]
            return out + ([(f"{prefix}up_proj.bias", (inter,)), (f"{prefix}down_proj.bias", (h,))] if self.biases
                          else [])
        return [(f"{prefix}gate_proj.weight", (inter, h)), (f"{prefix}up_proj.weight", (inter, h)),
                (f"{prefix}down_proj.weight", (h, inter))]

    def layer_tensors(self, moe: bool) -> list[tuple[str, tuple[int, ...], int]]:
        """(name within the layer, shape, how many) of one decoder layer's parameters, named as Hugging Face's
        Llama-style decoders name them; Linear weights as torch holds them, (out, in). The counts add up to the
        parameter count of the layer."""
        h, d = self.hidden_size, self.dim_head
        out = [(f"self_attn.{name}.weight", (d_out, d_in), 1) for name, (d_in, d_out) in self.attention_shapes().items()]
        if self.kv_lora_rank:
            out += [(f"self_attn.{n}_layernorm.weight", (size,), 1)
                    for n, size in (("q_a", self.q_lora_rank), ("kv_a", self.kv_lora_rank)) if size]
        else:
            q, kv = self.num_heads * d, self.num_kv_heads * d
            if self.qkv_bias or self.biases:
                out += [("self_attn.q_proj.bias", (q,), 1), ("self_attn.k_proj.bias", (kv,), 1),
                        ("self_attn.v_proj.bias", (kv,), 1)]
            if self.biases:
                out.append(("self_attn.o_proj.bias", (h,), 1))
            if self.qk_norm:
                out += [("self_attn.q_norm.weight", (d,), 1), ("self_attn.k_norm.weight", (d,), 1)]
        if moe:
            out.append(("mlp.gate.weight", (self.num_experts, h), 1))
            out += [(name.replace("mlp.", "mlp.experts.N.", 1), shape, self.num_experts)
                    for name, shape in self._mlp_tensors("mlp.", self.expert_intermediate_size)]
            if self.shared_expert_intermediate_size:
                out += [(name, shape, 1) for name, shape in self._mlp_tensors("mlp.shared_expert.",
                                                                              self.shared_expert_intermediate_size)]
                out.append(("mlp.shared_expert_gate.weight", (1, h), 1))
        else:
            out += [(name, shape, 1) for name, shape in self._mlp_tensors("mlp.", self.intermediate_size)]
        norm = [("input_layernorm.weight", (h,), 1), ("post_attention_layernorm.weight", (h,), 1)]
        norm = norm[:self.norms_per_layer] + [(f"extra_norm_{i}.weight", (h,), 1)
                                              for i in range(self.norms_per_layer - 2)]
        if self.biases:
            norm += [(name.replace(".weight", ".bias"), shape, count) for name, shape, count in norm]
        return out + norm

    def outer_tensors(self) -> list[tuple[str, tuple[int, ...]]]:
        """The parameters outside the decoder layers (embeddings, final norm, an untied LM head)."""
        h = self.hidden_size
        out = [("model.embed_tokens.weight", (self.vocab_size, h))]
        if self.position_embeddings:
            out.append(("model.embed_positions.weight", (self.position_embeddings, h)))
        out.append(("model.norm.weight", (h,)))
        if self.biases:
            out.append(("model.norm.bias", (h,)))
        if not self.tie_embeddings:
            out.append(("lm_head.weight", (self.vocab_size, h)))
        return out

    def layer_kinds(self) -> list[tuple[bool, range]]:
        """(MoE?, layer indices) with the dense layers first (DeepSeek's first_k_dense_replace; the order does not
        change the sizes)."""
        dense = self.dense_layer_count
        kinds = [(False, range(0, dense))]
        if self.moe_layer_count:
            kinds.append((True, range(dense, self.num_layers)))
        return kinds

    def tensor_numels(self) -> list[int]:
        """Elements of each parameter tensor (embeddings, each layer's, the final norm, an untied LM head); parts
        outside the language model are left out."""
        outer = [math.prod(shape) for _, shape in self.outer_tensors()]
        out = outer[:1 + bool(self.position_embeddings)]
        for moe, ids in self.layer_kinds():
            layer = [math.prod(shape) for _, shape, count in self.layer_tensors(moe) for _ in range(count)]
            out += layer * len(ids)
        return out + outer[1 + bool(self.position_embeddings):]

    def largest_module_params(self) -> int:
        """DeepSpeed's ``largest_layer_params``: the biggest single nn.Module's own parameters (the embedding or
        LM head for every model here, else one expert/MLP projection)."""
        return max(self.embedding_params(), self.largest_linear_params())

    def largest_linear_params(self) -> int:
        """The biggest linear projection of a decoder layer: an MLP (or expert) projection or an attention one."""
        h = self.hidden_size
        inter = max(self.intermediate_size, self.moe_intermediate_size, self.shared_expert_intermediate_size)
        return max(h * inter, *(i * o for i, o in self.attention_shapes().values()))

    def kv_bytes_per_token(self, dtype_bytes: int = 2, tp: int = 1, latent: bool = True) -> int:
        """K and V of every layer for one token on one tensor-parallel rank (KV heads are split over TP ranks and
        replicated when there are fewer heads than ranks). MLA: vLLM caches the compressed latent and the rotary
        key, the same on every rank (``latent``); transformers' DynamicCache holds every head's K and V."""
        if self.kv_lora_rank and latent:
            return self.num_layers * (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes
        if self.kv_lora_rank:
            per_head = self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim
            return self.num_layers * max(1, self.num_heads // tp) * per_head * dtype_bytes
        heads_per_rank = max(1, -(-self.num_kv_heads // tp)) if tp > 1 else self.num_kv_heads
        return 2 * self.num_layers * heads_per_rank * self.dim_head * dtype_bytes

    def kv_formula(self, dtype_bytes: int, per_rank: bool = False, latent: bool = True) -> str:
        """How kv_bytes_per_token was counted, for an estimate's text."""
        if self.kv_lora_rank and latent:
            return (f"{self.num_layers} layers x (MLA latent {self.kv_lora_rank} + rotary key "
                    f"{self.qk_rope_head_dim}) x {dtype_bytes} B, on every TP rank")
        if self.kv_lora_rank:
            return (f"{self.num_layers} layers x heads{'/TP' if per_rank else ''} x (K "
                    f"{self.qk_nope_head_dim + self.qk_rope_head_dim} + V {self.v_head_dim}) x {dtype_bytes} B")
        return (f"2 x {self.num_layers} layers x KV heads{'/TP' if per_rank else ''} x {self.dim_head} x "
                f"{dtype_bytes} B")


@record(frozen=True)
class ModelResolution:
    reference: str
    arch: ModelArch | None
    how: str  # catalog | config.json | name | size | unknown
    guessed: bool = False
    note: str = ""
    params: int | None = None  # overrides arch.param_count() when a size was given

    @property
    def param_count(self) -> int | None:
        if self.params is not None:
            return self.params
        return None if self.arch is None else self.arch.param_count()


@record(frozen=True)
class GPU:
    name: str
    nominal_bytes: int
    usable_bytes: int
    source: str
    usable_source: str = ""


# -- catalogs ----------------------------------------------------------------------------------------------------
def _load(name: str) -> dict:
    from rlhf_lint.schemas import load

    return load(name)


_ARCH_FIELDS = set(fields(ModelArch))


def _arch_from_entry(entry: dict) -> ModelArch:
    data = {k: v for k, v in entry.items() if k in _ARCH_FIELDS}
    data["name"] = entry["id"]
    for key in ("extra_params",):
        if key in data:
            data[key] = int(data[key])
    return ModelArch(**data)


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.")
_DROP_ASCII = {i: None for i in range(128) if chr(i) not in _NAME_CHARS}


def _norm(text: str) -> str:
    """Lowercase, keeping only [a-z0-9.] (no pattern: it runs over every catalog name)."""
    low = text.lower()
    if low.isascii():
        return low.translate(_DROP_ASCII)
    return "".join(c for c in low if c in _NAME_CHARS)


def _entries() -> list[dict]:
    return _load("models.json")["models"]


@lru_cache(maxsize=None)
def _arch_at(i: int) -> ModelArch:
    """The architecture of catalog entry ``i``, built when first needed (a run resolves one or two models)."""
    return _arch_from_entry(_entries()[i])


@lru_cache(maxsize=None)
def models() -> tuple[ModelArch, ...]:
    return tuple(_arch_at(i) for i in range(len(_entries())))


@lru_cache(maxsize=None)
def _model_keys() -> list[tuple[str, int]]:
    """(normalised name, catalog index), longest first, so 'gpt2-xl' wins over 'gpt2'."""
    keys: list[tuple[str, int]] = []
    for i, entry in enumerate(_entries()):
        if entry.get("exact_id_only"):  # a name inside many others' (Qwen-7B): matched by its hub id alone
            continue
        names = {entry["id"].split("/")[-1], *entry.get("aliases", [])}
        for n in names:
            keys.append((_norm(n), i))
    return sorted(keys, key=lambda kv: -len(kv[0]))


def model_by_id(model_id: str) -> ModelArch | None:
    """An exact hub id: the entry's own, one of ``same_config`` (other repositories with the same config.json,
    matched only exactly: as a substring their names would catch unrelated models), or one of ``variants``
    (fine-tunes of the same shape whose config differs in its context length, such as an Instruct model)."""
    wanted = model_id.strip().lower()
    for i, entry in enumerate(_entries()):
        if entry["id"].lower() == wanted or wanted in (x.lower() for x in entry.get("same_config", ())):
            return _arch_at(i)
        for name, variant in entry.get("variants", {}).items():
            if name.lower() == wanted:
                return replace(_arch_at(i), name=name,
                               max_position_embeddings=variant.get("max_position_embeddings", 0))
    return None


def _find_known_name(reference: str) -> ModelArch | None:
    parts = [p for p in reference.replace("\\", "/").split("/") if p]
    # the last component is the most specific: /ckpt/llama-2-7b/global_step100 should still find llama-2-7b
    for part in reversed(parts):
        key = _norm(part)
        for name, i in _model_keys():
            if name and name in key:
                # a name must not continue with a digit: 'qwen2.57b' is not inside 'qwen2.572b'
                end = key.find(name) + len(name)
                if end < len(key) and key[end].isdigit() and not _dated_release_follows(part, name):
                    continue
                return _arch_at(i)
    return None


_MOE_SIZES_RE = lazy_compile(r"(?<![0-9a-z.])(\d+(?:\.\d+)?)b[-_]a(\d+(?:\.\d+)?)b(?![a-z0-9])", re.IGNORECASE)


def _same_moe_sizes(name: str) -> ModelArch | None:
    """The catalog MoE whose name carries the same `<total>B-A<active>B` pair as ``name`` (InternVL3_5-30B-A3B and
    Qwen3-30B-A3B): the first in catalog order."""
    m = _MOE_SIZES_RE.search(name)
    if m is None:
        return None
    for i, entry in enumerate(_entries()):
        other = _MOE_SIZES_RE.search(str(entry.get("id", "")).split("/")[-1])
        if other is not None and (float(other.group(1)), float(other.group(2))) == (float(m.group(1)),
                                                                                     float(m.group(2))):
            arch = _arch_at(i)
            if arch.num_experts:
                return arch
    return None


def _dated_release_follows(part: str, name: str) -> bool:
    """True when ``name`` (normalised) is followed in ``part`` by a separator and a four-digit release date
    (DeepSeek-V3-0324, Mistral-Nemo-2407): the same model, not a size ('gpt2-1.5b' is not gpt2). Only asked when a
    digit follows a match, which is rare: the pattern is built then."""
    spelled = "[^a-z0-9.]*".join(re.escape(c) for c in name)  # the characters _norm dropped may sit between
    return re.search(spelled + r"[-_]\d{4}(?![0-9.]*[bm](?![a-z]))", part.lower()) is not None


def parse_param_size(text: str) -> int | None:
    if text.rstrip()[-1:] not in ("b", "B", "m", "M"):  # a size ends in its unit: most references are names
        return None
    m = _SIZE_RE.match(text)
    if not m:
        return None
    scale = 1e9 if m.group(2).lower() == "b" else 1e6
    return int(float(m.group(1)) * scale)


def nearest_shape(params: int) -> ModelArch:
    """The dense catalog model closest in size: its shape stands in for activations and logits."""
    dense = [a for a in models() if not a.num_experts and not a.extra_params]
    return min(dense, key=lambda a: abs(a.param_count() - params))


def arch_from_config_json(text: str, name: str, source: str = "") -> ModelArch | None:
    """A Hugging Face config.json read as data. Returns None when the fields that matter are missing."""
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("text_config"), dict):  # multimodal wrappers (Gemma 3, Qwen-VL) nest the LM
        data = {**data, **data["text_config"]}

    def first(*keys, default=None):
        for k in keys:
            v = data.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return int(v)
        return default

    h = first("hidden_size", "n_embd", "d_model")
    layers = first("num_hidden_layers", "n_layer", "num_layers")
    heads = first("num_attention_heads", "n_head")
    vocab = first("padded_vocab_size", "vocab_size")
    if not (h and layers and heads and vocab):
        return None
    kv = first("num_key_value_heads", "multi_query_group_num", default=heads)
    if data.get("multi_query_attention") is False:
        kv = heads
    model_type = str(data.get("model_type", ""))
    plain = model_type in ("gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon")
    inter = first("intermediate_size", "n_inner", "ffn_hidden_size", default=4 * h)
    if model_type == "qwen":  # Qwen-1's remote code: w1 and w2 each take intermediate_size // 2
        inter //= 2
    experts = first("num_experts", "num_local_experts", "n_routed_experts", default=0)
    moe_inter = first("moe_intermediate_size", default=0)
    shared = first("shared_expert_intermediate_size", default=0)
    if experts and model_type.startswith("llama4"):
        # Llama 4: intermediate_size is one expert's (and the shared expert's), intermediate_size_mlp the dense
        # layers'
        moe_inter, shared = inter, inter
        inter = first("intermediate_size_mlp", default=inter)
    if experts and not shared and first("n_shared_experts", default=0):
        shared = first("n_shared_experts") * (moe_inter or inter)
    moe_layers = _moe_layer_count(data, layers) if experts else None
    quant = data.get("quantization_config") if isinstance(data.get("quantization_config"), dict) else {}
    return ModelArch(
        name=name,
        hidden_size=h,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv or heads,
        intermediate_size=inter,
        vocab_size=vocab,
        tie_embeddings=bool(data.get("tie_word_embeddings", model_type == "gpt2")),
        head_dim=first("head_dim"),
        mlp="plain" if plain else "gated",
        qkv_bias=bool(data.get("attention_bias") or data.get("add_qkv_bias")
                      or model_type in ("qwen", "qwen2", "qwen2_moe")),
        biases=model_type == "gpt2",
        position_embeddings=first("n_positions", default=0) if model_type == "gpt2" else 0,
        num_experts=experts,
        experts_per_token=first("num_experts_per_tok", "experts_per_token", default=0),
        moe_intermediate_size=moe_inter,
        shared_expert_intermediate_size=shared,
        moe_layers=moe_layers,
        expert_weight_bytes=MXFP4_BYTES if experts and quant.get("quant_method") == "mxfp4" else 0.0,
        linear_weight_bytes=_fp8_bytes(quant),
        q_lora_rank=first("q_lora_rank", default=0),
        kv_lora_rank=first("kv_lora_rank", default=0),
        qk_nope_head_dim=first("qk_nope_head_dim", default=0),
        qk_rope_head_dim=first("qk_rope_head_dim", default=0),
        v_head_dim=first("v_head_dim", default=0),
        max_position_embeddings=first("max_position_embeddings", "n_positions", "seq_length", default=0),
        source=source,
        model_type=model_type,
    )


# MXFP4: 32 four-bit values in 16 bytes and one 8-bit scale per block (transformers' Mxfp4GptOssExperts *_blocks and
# *_scales, https://github.com/huggingface/transformers/blob/v4.57.6/src/transformers/integrations/mxfp4.py)
MXFP4_BYTES = 17 / 32


def _fp8_bytes(quant: dict) -> float:
    """Bytes per weight of a checkpoint stored in FP8 (quant_method fp8): one byte, and with weight_block_size an
    fp32 scale per block (https://github.com/vllm-project/vllm/blob/v0.8.5/vllm/model_executor/layers/quantization/
    fp8.py: weight_scale_inv per block); 0 for any other format."""
    if quant.get("quant_method") != "fp8":
        return 0.0
    block = quant.get("weight_block_size")
    if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
        return 1 + 4 / (block[0] * block[1])
    return 1.0


def _moe_layer_count(data: dict, layers: int) -> int | None:
    """How many decoder layers route to experts, from the config's layout keys (None: all of them)."""
    def whole(key: str, default: int) -> int:
        v = data.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else default

    listed = data.get("moe_layers")
    if isinstance(listed, list) and all(isinstance(i, int) for i in listed):  # Llama 4 may list them
        return len({i for i in listed if 0 <= i < layers})
    if "first_k_dense_replace" in data or "moe_layer_freq" in data:  # DeepSeek-V2/V3, GLM-4.5, Kimi K2
        k, freq = whole("first_k_dense_replace", 0), max(1, whole("moe_layer_freq", 1))
        return sum(1 for i in range(layers) if i >= k and i % freq == 0)
    if "interleave_moe_layer_step" in data:  # Llama 4: every step-th layer
        step = max(1, whole("interleave_moe_layer_step", 1))
        return sum(1 for i in range(layers) if (i + 1) % step == 0)
    if "decoder_sparse_step" in data or "mlp_only_layers" in data:  # Qwen2-MoE / Qwen3-MoE
        step = max(1, whole("decoder_sparse_step", 1))
        dense = data.get("mlp_only_layers") if isinstance(data.get("mlp_only_layers"), list) else []
        return sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)
    return None


def resolve_model(reference: str, read_config=None) -> ModelResolution:
    """Resolve a model reference. ``read_config(reference)`` may return the text of ``<reference>/config.json``
    when that file can be read as data (the linter passes project files only; the estimate command reads disk)."""
    ref = str(reference).strip()
    size = parse_param_size(ref)
    if size is not None:
        shape = nearest_shape(size)
        return ModelResolution(ref, replace(shape, name=ref, model_type=""), "size", guessed=True, params=size,
                               note=f"{ref} parameters as given; layer shape of {shape.name} assumed for activations")
    if read_config is not None:
        text = read_config(ref)
        if text is not None:
            arch = arch_from_config_json(text, ref, source=f"{ref.rstrip('/')}/config.json")
            if arch is not None:
                return ModelResolution(ref, arch, "config.json", note=f"architecture read from {arch.source}")
    arch = model_by_id(ref)
    if arch is not None:
        return ModelResolution(ref, arch, "catalog")
    arch = _find_known_name(ref)
    if arch is not None:
        return ModelResolution(ref, arch, "name", guessed=True,
                               note=f"architecture of {arch.name} assumed from the name {ref!r}")
    last = ref.split("/")[-1] or ref
    sibling = _same_moe_sizes(last)
    if sibling is not None:
        return ModelResolution(ref, replace(sibling, name=ref, model_type=""), "name", guessed=True,
                               note=f"architecture of {sibling.name} assumed: {ref!r} names the same total and "
                                    f"active sizes (an MoE sibling: a vision-language or fine-tuned variant)")
    pair = _MOE_SIZES_RE.search(last)
    if pair is not None:
        # a dense stand-in of the total size would hold every expert in every token's path: activations many times
        # too large, and nothing for expert parallelism to split
        return ModelResolution(ref, None, "unknown",
                               note=f"model {ref!r} is not in the catalog: an MoE of {pair.group(1)}B parameters, "
                                    f"{pair.group(2)}B active, whose expert layout no catalog model shares (give its "
                                    f"config.json folder)")
    active = _ACTIVE_SIZE_RE.search(ref)  # any part: a checkpoint folder may sit under the model's name
    if active is not None:
        return ModelResolution(ref, None, "unknown",
                               note=f"model {ref!r} is not in the catalog, and its name gives the active parameters "
                                    f"({active.group(1)}B) of {active.group(2)} experts, not the total")
    m = None
    for m in _SIZE_IN_NAME_RE.finditer(last):
        pass
    digits = m.group(1).replace("_", ".") if m is not None else "0"  # stablelm-2-1_6b: 1.6B
    size = float(digits)
    if m is not None and size < 1e6:  # a mangled `Qwen2.5-999...9B` names no real size (and overflows int())
        params = int(size * (1e9 if m.group(2).lower() == "b" else 1e6))
        shape = nearest_shape(params)
        return ModelResolution(ref, replace(shape, name=ref, model_type=""), "size", guessed=True, params=params,
                               note=f"size {digits}{m.group(2).upper()} read from the name {ref!r}; "
                                    f"layer shape of {shape.name} assumed")
    return ModelResolution(ref, None, "unknown", note=f"model {ref!r} is not in the catalog and names no size")


# -- GPUs --------------------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def gpus() -> tuple[GPU, ...]:
    data = _load("gpus.json")
    reserve = int(data.get("reserve_mib", 0)) * 1024**2
    out = []
    for g in data["gpus"]:
        nominal = int(g["memory_gb"] * GIB)
        if "cuda_total_gib" in g:
            usable, usable_source = int(g["cuda_total_gib"] * GIB), g.get("cuda_total_source", "")
        else:
            usable, usable_source = nominal - reserve, "nominal minus the driver reservation (schemas/gpus.json)"
        out.append(GPU(g["name"], nominal, usable, g["source"], usable_source))
    return tuple(out)


@lru_cache(maxsize=None)
def _gpu_keys() -> dict[str, GPU]:
    keys: dict[str, GPU] = {}
    for entry, gpu in zip(_load("gpus.json")["gpus"], gpus()):
        for n in (entry["name"], *entry.get("aliases", [])):
            keys[_norm(n)] = gpu
    return keys


def close_gpu_names(name: str, n: int = 3) -> list[str]:
    """Catalog GPUs whose names or aliases look like ``name`` (a misspelt one: RTX-4O90 -> RTX-4090)."""
    import difflib  # only on this error path

    canonical: dict[str, str] = {}
    for entry in _load("gpus.json")["gpus"]:
        for alias in (entry["name"], *entry.get("aliases", [])):
            canonical.setdefault(_norm(alias), entry["name"])
    found = difflib.get_close_matches(_norm(name), list(canonical), n=3 * n)
    return list(dict.fromkeys(canonical[f] for f in found))[:n]


def resolve_gpu(name: str) -> GPU | None:
    key = _norm(name.replace("NVIDIA", "").replace("nvidia", ""))
    keys = _gpu_keys()
    if key in keys:
        return keys[key]
    key = key.replace("geforce", "").replace("tesla", "")
    return keys.get(key) or keys.get(key.replace("gb", "")) or keys.get(key + "gb")

