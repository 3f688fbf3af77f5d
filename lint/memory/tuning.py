"""Which parameters train, and what the optimizer keeps for them, when not every parameter gets full Adam states:
freeze tuning (a few decoder layers), gradient-projection optimizers (GaLore, APOLLO) and block-coordinate Adam
(BAdam). Pure functions of the model's shapes and the job's settings, read by rlhf_lint.memory.estimate.

Parameters are named as Hugging Face's Llama-style decoders name them (``model.layers.{i}.self_attn.q_proj.weight``),
since LLaMA-Factory selects them by substrings of those names. A module name that matches nothing here may still
exist in the real model: what it would add is returned apart (``unsure``), counted in the figures but not at the
band's low end.
"""
from __future__ import annotations

from rlhf_lint.memory.catalog import ModelArch
from rlhf_lint.startup.records import record

LAYERS = "model.layers."


def _mlp(arch: ModelArch, prefix: str, inter: int) -> list[tuple[str, tuple[int, ...]]]:
    h = arch.hidden_size
    if arch.mlp == "plain":
        out = [(f"{prefix}up_proj.weight", (inter, h)), (f"{prefix}down_proj.weight", (h, inter))]
        return out + ([(f"{prefix}up_proj.bias", (inter,)), (f"{prefix}down_proj.bias", (h,))] if arch.biases else [])
    return [(f"{prefix}gate_proj.weight", (inter, h)), (f"{prefix}up_proj.weight", (inter, h)),
            (f"{prefix}down_proj.weight", (h, inter))]


def layer_tensors(arch: ModelArch, moe: bool) -> list[tuple[str, tuple[int, ...], int]]:
    """(name within the layer, shape, how many) of one decoder layer's parameters; Linear weights as torch holds them,
    (out, in). The counts add up to ModelArch's parameter count of the layer."""
    h, d = arch.hidden_size, arch.dim_head
    out = [(f"self_attn.{name}.weight", (d_out, d_in), 1) for name, (d_in, d_out) in arch.attention_shapes().items()]
    if arch.kv_lora_rank:
        out += [(f"self_attn.{n}_layernorm.weight", (size,), 1)
                for n, size in (("q_a", arch.q_lora_rank), ("kv_a", arch.kv_lora_rank)) if size]
    else:
        q, kv = arch.num_heads * d, arch.num_kv_heads * d
        if arch.qkv_bias or arch.biases:
            out += [("self_attn.q_proj.bias", (q,), 1), ("self_attn.k_proj.bias", (kv,), 1),
                    ("self_attn.v_proj.bias", (kv,), 1)]
        if arch.biases:
            out.append(("self_attn.o_proj.bias", (h,), 1))
        if arch.qk_norm:
            out += [("self_attn.q_norm.weight", (d,), 1), ("self_attn.k_norm.weight", (d,), 1)]
    if moe:
        inter = arch.expert_intermediate_size
        out.append(("mlp.gate.weight", (arch.num_experts, h), 1))
        out += [(name.replace("mlp.", "mlp.experts.N.", 1), shape, arch.num_experts)
                for name, shape in _mlp(arch, "mlp.", inter)]
        if arch.shared_expert_intermediate_size:
            out += [(name, shape, 1) for name, shape in _mlp(arch, "mlp.shared_expert.",
                                                             arch.shared_expert_intermediate_size)]
            out.append(("mlp.shared_expert_gate.weight", (1, h), 1))
    else:
        out += [(name, shape, 1) for name, shape in _mlp(arch, "mlp.", arch.intermediate_size)]
    norm = [("input_layernorm.weight", (h,), 1), ("post_attention_layernorm.weight", (h,), 1)][:arch.norms_per_layer]
    norm += [(f"extra_norm_{i}.weight", (h,), 1) for i in range(arch.norms_per_layer - 2)]
    if arch.biases:
        norm += [(name.replace(".weight", ".bias"), shape, count) for name, shape, count in norm]
    return out + norm


def outer_tensors(arch: ModelArch) -> list[tuple[str, tuple[int, ...]]]:
    """The parameters outside the decoder layers (embeddings, final norm, an untied LM head)."""
    h = arch.hidden_size
    out = [("model.embed_tokens.weight", (arch.vocab_size, h))]
    if arch.position_embeddings:
        out.append(("model.embed_positions.weight", (arch.position_embeddings, h)))
    out.append(("model.norm.weight", (h,)))
    if arch.biases:
        out.append(("model.norm.bias", (h,)))
    if not arch.tie_embeddings:
        out.append(("lm_head.weight", (arch.vocab_size, h)))
    return out


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _layer_kinds(arch: ModelArch) -> list[tuple[bool, range]]:
    """(MoE?, layer indices) with the dense layers first, as the catalog counts them."""
    dense = arch.dense_layer_count
    kinds = [(False, range(0, dense))]
    if arch.moe_layer_count:
        kinds.append((True, range(dense, arch.num_layers)))
    return kinds


@record
class Trained:
    """Parameters with gradients and optimizer states under freeze tuning."""

    params: int  # parameters the named modules surely select
    unsure: int = 0  # a layer's other parameters when a module name matches nothing here
    note: str = ""


def freeze(arch: ModelArch, layers: int, modules, extra) -> Trained:
    """LLaMA-Factory's freeze tuning (model/adapter.py _setup_freeze_tuning): the last ``layers`` decoder layers (the
    first -layers when negative); of them the parameters under ``modules`` ('all': every one); plus every parameter,
    in any layer or outside them, whose name holds one of ``extra`` (norm: the layers' norms as well)."""
    L = arch.num_layers
    ids = set(range(max(0, L - layers), L) if layers > 0 else range(min(-layers, L)))
    wanted = [str(m) for m in (modules or ("all",))]
    every = "all" in wanted
    extra = [str(e) for e in (extra or ())]
    kinds = [(ids & set(kind_ids), len(kind_ids), layer_tensors(arch, moe)) for moe, kind_ids in _layer_kinds(arch)]
    outer = outer_tensors(arch)
    missing = [m for m in wanted if m != "all"
               and not any(name.startswith(m) for _, _, tensors in kinds for name, _, _ in tensors)]
    known = sum(_numel(shape) for name, shape in outer if any(e in name for e in extra))
    unsure = 0
    for trainable, total, tensors in kinds:
        for name, shape, count in tensors:
            size = count * _numel(shape)
            if any(e in name for e in extra):
                known += total * size
            elif every or any(name.startswith(m) for m in wanted):  # '.{layer}.{module}' in the parameter's name
                known += len(trainable) * size
            elif missing:
                unsure += len(trainable) * size
    notes = []
    if missing:
        notes.append(f"freeze_trainable_modules {', '.join(missing)}: not a module of the estimate's layer layout; the "
                     f"rest of each trainable layer is counted, but not at the band's low end")
    lost = [e for e in extra if not any(e in name for name, _ in outer)
            and not any(e in name for _, _, tensors in kinds for name, _, _ in tensors)]
    if lost:
        notes.append(f"freeze_extra_modules {', '.join(lost)}: not a module of the estimate's layout, not counted "
                     f"(LLaMA-Factory accepts only the model's modules outside the layers)")
    return Trained(known, unsure, "; ".join(notes))


@record
class Projected:
    """What a gradient-projection optimizer (GaLore, APOLLO) keeps: elements, the dtype applied by the caller."""

    moments_of: int  # elements each Adam moment has: projected rank-r gradients plus the full unprojected ones
    projector: int  # elements of the stored projection matrices
    retained: int  # the whole SVD factor a projector slice keeps alive (fp32 parameters), beyond ``projector``
    unprojected: int  # trainable parameters with full-size moments (embeddings, LM head, norms, biases)
    unsure_moments: int  # more full-size moment elements if a target matched nothing here (0 at the low end)
    largest: int  # the largest parameter (one gradient at a time in layer-wise mode, the step's per-tensor copies)
    svd_workspace: int  # fp32 elements of one SVD of the largest projected matrix (copy, U, S, Vh)
    note: str = ""


def _projected_elements(shape: tuple[int, int], rank: int, proj_type: str) -> tuple[int, int, int]:
    """(moment elements, projector elements, SVD factor elements the projector is sliced from) of one (m, n) matrix
    (GaLoreProjector.project / APOLLO's GradientProjector: std projects the longer side, reverse_std the shorter,
    right keeps (m, r), left (r, n), full (r, r) between two projectors)."""
    m, n = shape
    k = min(m, n)
    r = max(1, min(rank, k))
    side = {"std": "right" if m >= n else "left", "reverse_std": "left" if m >= n else "right"}.get(proj_type,
                                                                                                   proj_type)
    if side == "right":  # grad (m, n) @ B.T with B = Vh[:r] of shape (r, n)
        return m * r, r * n, k * n
    if side == "left":  # A.T @ grad with A = U[:, :r] of shape (m, r)
        return r * n, m * r, m * k
    return r * r, r * (m + n), k * (m + n)  # full: A (m, r) and B (r, n)


def projected(arch: ModelArch, rank: int, targets, proj_type: str) -> Projected:
    """The matrices LLaMA-Factory hands to GaLore / APOLLO (train/trainer_utils.py _create_galore_optimizer): the 2-D
    weights of nn.Linear modules whose name holds a target ('all': every linear layer of the decoder, lm_head
    excluded); every other trainable parameter keeps full-size moments."""
    wanted = [str(t) for t in (targets or ("all",))]
    every = "all" in wanted
    moments = projector = retained = unprojected = linear_rest = 0
    largest = svd_elements = 0
    matched: set[str] = set()
    for moe, ids in _layer_kinds(arch):
        for name, shape, count in layer_tensors(arch, moe):
            count *= len(ids)
            largest = max(largest, _numel(shape))
            module = LAYERS + name.rsplit(".", 1)[0]
            hits = [t for t in wanted if t in module]
            matched.update(hits)
            if len(shape) == 2 and (every or hits):
                mo, pr, sv = _projected_elements(shape, rank, proj_type)
                moments, projector, retained = moments + count * mo, projector + count * pr, retained + count * sv
                m, n = shape
                k = min(m, n)
                svd_elements = max(svd_elements, m * n + k * (m + n) + k)
                continue
            unprojected += count * _numel(shape)
            if len(shape) == 2:
                linear_rest += count * _numel(shape)
    for name, shape in outer_tensors(arch):
        largest = max(largest, _numel(shape))
        unprojected += _numel(shape)  # embeddings are no nn.Linear; lm_head is left out of 'all'
    missing = [t for t in wanted if t != "all" and t not in matched]
    note = ""
    unsure = 0
    if missing:
        # a target the layout does not know may project more of the linear layers: their full-size moments are
        # counted, but not at the low end
        unsure = linear_rest
        note = (f"projection targets {', '.join(missing)}: not modules of the estimate's layer layout; the linear "
                f"layers they may name keep full-size moments in the figures, projected ones at the band's low end")
    return Projected(moments + unprojected - unsure, projector, retained - projector, unprojected - unsure, unsure,
                     largest, svd_elements, note)


def largest_layer(arch: ModelArch) -> int:
    """BAdam's block: one decoder layer (the largest, an MoE layer where there are both)."""
    return max(sum(count * _numel(shape) for _, shape, count in layer_tensors(arch, moe))
               for moe, ids in _layer_kinds(arch) if len(ids))


def outside_layers(arch: ModelArch) -> int:
    return sum(_numel(shape) for _, shape in outer_tensors(arch))


def largest_tensor(arch: ModelArch) -> int:
    """Elements of the largest parameter tensor (the embedding or LM head for every model here)."""
    return max([_numel(shape) for _, shape in outer_tensors(arch)]
               + [_numel(shape) for moe, ids in _layer_kinds(arch) if len(ids)
                  for _, shape, _c in layer_tensors(arch, moe)])
