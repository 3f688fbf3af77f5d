"""Which parameters train, and what the optimizer keeps for them, when not every parameter gets full Adam states:
freeze tuning (a few decoder layers), gradient-projection optimizers (GaLore, APOLLO) and block-coordinate Adam
(BAdam). Pure functions of the model's shapes and the job's settings, read by rlhf_lint.memory.estimate.

Parameters are named as Hugging Face's Llama-style decoders name them (``model.layers.{i}.self_attn.q_proj.weight``),
since LLaMA-Factory selects them by substrings of those names. A module name that matches nothing here may still
exist in the real model: what it would add is returned apart (``unsure``), counted in the figures but not at the
band's low end.
"""
from __future__ import annotations

import math

from rlhf_lint.memory.catalog import ModelArch
from rlhf_lint.startup.records import record

LAYERS = "model.layers."


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
    kinds = [(ids & set(kind_ids), len(kind_ids), arch.layer_tensors(moe)) for moe, kind_ids in arch.layer_kinds()]
    outer = arch.outer_tensors()
    missing = [m for m in wanted if m != "all"
               and not any(name.startswith(m) for _, _, tensors in kinds for name, _, _ in tensors)]
    known = sum(math.prod(shape) for name, shape in outer if any(e in name for e in extra))
    unsure = 0
    for trainable, total, tensors in kinds:
        for name, shape, count in tensors:
            size = count * math.prod(shape)
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
    for moe, ids in arch.layer_kinds():
        for name, shape, count in arch.layer_tensors(moe):
            count *= len(ids)
            largest = max(largest, math.prod(shape))
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
            unprojected += count * math.prod(shape)
            if len(shape) == 2:
                linear_rest += count * math.prod(shape)
    for name, shape in arch.outer_tensors():
        largest = max(largest, math.prod(shape))
        unprojected += math.prod(shape)  # embeddings are no nn.Linear; lm_head is left out of 'all'
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
    return max(sum(count * math.prod(shape) for _, shape, count in arch.layer_tensors(moe))
               for moe, ids in arch.layer_kinds() if len(ids))


def largest_tensor(arch: ModelArch) -> int:
    """Elements of the largest parameter tensor (the embedding or LM head for every model here)."""
    return max([math.prod(shape) for _, shape in arch.outer_tensors()]
               + [math.prod(shape) for moe, ids in arch.layer_kinds() if len(ids)
                  for _, shape, _c in arch.layer_tensors(moe)])
