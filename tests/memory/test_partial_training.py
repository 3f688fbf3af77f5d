"""Freeze tuning, GaLore / APOLLO and BAdam in the estimate (rlhf_lint.memory.tuning, estimate._partial).

The expected figures are counted by hand from Meta-Llama-3-8B's config (hidden 4096, 32 layers, 32 heads, 8 KV heads,
intermediate 14336, vocabulary 128256, untied): one decoder layer holds 218,112,000 parameters, the embedding and the
LM head 525,336,576 each, the model 8,030,261,248.
"""
import math

import pytest

from rlhf_lint.engine.config import Hardware
from rlhf_lint.frameworks.jobs import Job
from rlhf_lint.memory import tuning
from rlhf_lint.memory.catalog import models, resolve_model
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.model import Setting, Settings

P = 8_030_261_248
LAYER = 218_112_000
EMBED = 525_336_576
MLP = 3 * 4096 * 14336
LLAMA3 = "meta-llama/Meta-Llama-3-8B"


def job(**values):
    settings = Settings()
    base = {"model.policy.path": LLAMA3, "topology.policy.nodes": 1, "topology.policy.gpus_per_node": 1,
            "train.strategy": "ddp", "precision.param_dtype": "bf16", "train.lora_rank": 0,
            "batch.micro_train": 1, "seq.max_len": 2048, "train.gradient_checkpointing": True}
    for key, value in {**base, **values}.items():
        settings.add(Setting(key.replace("__", "."), value))
    return Job("test", "test.yaml", None, "llamafactory", settings, roles=("policy",))


def policy(j):
    est = estimate(j, Hardware(gpu="A100-80GB"))
    return est, est.role("policy")


def sure(role, name):
    # what the role holds for the optimizer step (gradients without accumulation are written during the backward)
    return sum(t.bytes for t in role.terms if t.name == name and not t.unsure and (not t.phases or "step" in t.phases))


def test_the_layer_layout_adds_up_to_every_catalog_model():
    # LLaMA-Factory picks parameters by name: the named layout must hold exactly the parameters the catalog counts
    for arch in models():
        total = sum(n for _, shape in arch.outer_tensors() for n in [math.prod(shape)])
        for moe, ids in arch.layer_kinds():
            total += len(ids) * sum(c * math.prod(s) for _, s, c in arch.layer_tensors(moe))
        assert total == arch.param_count() - arch.extra_params, arch.name
    assert tuning.largest_layer(resolve_model(LLAMA3).arch) == LAYER


@pytest.mark.parametrize("layers, modules, extra, trained", [
    (2, ("all",), (), 2 * LAYER),
    (-2, ("mlp",), ("embed_tokens",), 2 * MLP + EMBED),
    (40, ("all",), (), 32 * LAYER),  # more layers than the model has: all of them
    (0, ("all",), ("lm_head",), EMBED),
    (1, ("self_attn",), ("norm",), 2 * 4096 * 4096 + 2 * 4096 * 1024 + 32 * 2 * 4096 + 4096),  # norm: every norm
])
def test_freeze_selects_what_llamafactory_selects(layers, modules, extra, trained):
    t = tuning.freeze(resolve_model(LLAMA3).arch, layers, modules, extra)
    assert (t.params, t.unsure) == (trained, 0)


def test_freeze_without_deepspeed_upcasts_only_the_trained_layers():
    est, r = policy(job(train__freeze_layers=2, train__freeze_modules=("all",)))
    T = 2 * LAYER
    assert r.trained_params == T
    assert r.term("weights") == 2 * (P - T) + 4 * T  # LLaMA-Factory upcasts what trains to fp32
    assert r.term("gradients") == 4 * T and r.term("optimizer_states") == 8 * T
    assert est.groups[0].peak < 40 * 2**30  # a full fine-tune of the same model is ~160 GiB


def test_freeze_in_pure_bf16_and_under_zero3():
    _, pure = policy(job(train__freeze_layers=2, precision__master_dtype="bf16", precision__half_trainable=True))
    T = 2 * LAYER
    assert (pure.term("weights"), pure.term("gradients"), pure.term("optimizer_states")) == (2 * P, 2 * T, 4 * T)
    _, z3 = policy(job(train__freeze_layers=2, train__strategy="deepspeed", zero__stage=3,
                       topology__policy__gpus_per_node=8))
    # DeepSpeed: 16-bit weights sharded, fp32 master + Adam states of the trained layers only
    assert z3.term("weights") == 2 * P // 8 and z3.term("optimizer_states") == 12 * T // 8


def test_an_unknown_freeze_module_is_counted_but_not_at_the_low_end():
    est, r = policy(job(train__freeze_layers=2, train__freeze_modules=("block_sparse_moe",)))
    unsure = [t for t in r.terms if t.unsure and t.name in ("weights", "gradients", "optimizer_states")]
    assert {t.name: t.bytes for t in unsure} == {"weights": 2 * 2 * LAYER, "gradients": 4 * 2 * LAYER,
                                                 "optimizer_states": 8 * 2 * LAYER}
    assert any("block_sparse_moe" in a for a in est.assumptions)
    nothing, _ = policy(job(train__freeze_layers=0))  # what surely trains: nothing
    assert est.groups[0].low_peak == nothing.groups[0].low_peak < est.groups[0].peak


# Meta-Llama-3-8B at rank 128, proj_type std: the moments of each matrix are r x its longer side, the projector
# r x its shorter side
MOMENTS = 32 * 128 * (4 * 4096 + 3 * 14336)
PROJECTOR = 32 * 128 * (2 * 4096 + 2 * 1024 + 3 * 4096)
FULL_SIZE = 2 * EMBED + 4096 + 32 * 2 * 4096  # embeddings, LM head and norms keep full-size moments


def test_projected_elements_by_hand():
    p = tuning.projected(resolve_model(LLAMA3).arch, 128, ("all",), "std")
    assert (p.moments_of, p.unprojected, p.projector, p.unsure_moments) == (MOMENTS + FULL_SIZE, FULL_SIZE,
                                                                            PROJECTOR, 0)
    assert p.largest == EMBED
    # one gate_proj (14336 x 4096): right keeps (m, r), left (r, n)
    assert tuning._projected_elements((14336, 4096), 128, "right")[:2] == (14336 * 128, 128 * 4096)
    assert tuning._projected_elements((14336, 4096), 128, "left")[:2] == (128 * 4096, 14336 * 128)
    assert tuning._projected_elements((14336, 4096), 128, "reverse_std")[:2] == (128 * 4096, 14336 * 128)
    assert tuning._projected_elements((14336, 4096), 10**6, "std")[0] == 14336 * 4096  # rank capped: full size


@pytest.mark.parametrize("name", ["galore", "apollo"])
def test_layerwise_projection_in_pure_bf16(name):
    est, r = policy(job(train__projected_optimizer=name, train__projection_rank=128, train__projection_targets=("all",),
                        train__optimizer_layerwise=True, precision__master_dtype="bf16"))
    assert r.term("weights") == 2 * P
    assert r.term("optimizer_states") == 4 * (MOMENTS + FULL_SIZE) + 2 * PROJECTOR  # bf16 m + v, bf16 projectors
    assert r.term("gradients") == 2 * EMBED  # one gradient at a time, freed in its hook
    step = [t for t in r.terms if t.name == "optimizer_step"]
    # per parameter: two full-size bf16 tensors of the embedding beat the SVD of a 14336 x 4096 gradient; inside the
    # backward, so not in a step phase of its own
    assert [(t.bytes, t.phases) for t in step] == [(2 * 2 * EMBED, ())]
    assert est.groups[0].certain_overflow is False and est.groups[0].peak < 35 * 2**30


def test_projection_with_fp32_weights_and_unknown_targets_stays_out_of_the_low_end():
    base = dict(train__projected_optimizer="galore", train__projection_rank=128, train__optimizer_layerwise=False)
    est, r = policy(job(**base, train__projection_targets=("all",)))
    assert sure(r, "gradients") == 4 * P  # every gradient held for the step, fp32 (LLaMA-Factory's upcast)
    assert sure(r, "optimizer_states") == 8 * (MOMENTS + FULL_SIZE) + 4 * PROJECTOR
    # the projector slices keep their whole fp32 SVD factor alive: counted, not at the low end
    assert [t.name for t in r.terms if t.unsure and not t.phases] == ["optimizer_states"]
    est2, r2 = policy(job(**base, train__projection_targets=("c_attn",)))
    assert any("c_attn" in a for a in est2.assumptions)
    assert sure(r2, "optimizer_states") == 8 * FULL_SIZE  # the low end: as if every linear layer were projected
    assert r2.term("optimizer_states") == 8 * P  # the figures: no linear layer projected


def test_projection_under_deepspeed_counts_full_states_and_says_why():
    est, r = policy(job(train__projected_optimizer="galore", train__projection_rank=128, train__strategy="deepspeed",
                        zero__stage=2, topology__policy__gpus_per_node=8))
    assert r.term("optimizer_states") == 12 * P // 8
    assert any("galore under deepspeed: LLaMA-Factory refuses it" in a for a in est.assumptions)


def test_badam_layer_mode():
    _, r = policy(job(train__block_optimizer="layer", precision__master_dtype="bf16", precision__half_trainable=True))
    assert r.trained_params == LAYER and r.term("weights") == 2 * P
    # one layer: an fp32 copy + fp32 Adam m and v, its bf16 gradients, then fp32 ones at the step
    assert r.term("optimizer_states") == 12 * LAYER and r.term("gradients") == 2 * LAYER
    assert sorted(t.bytes for t in r.terms if t.name == "optimizer_step") == [2 * LAYER, 4 * LAYER]
    _, z3 = policy(job(train__block_optimizer="layer", train__strategy="deepspeed", zero__stage=3,
                       topology__policy__gpus_per_node=8))
    assert z3.term("optimizer_states") == 12 * LAYER // 8 and z3.term("weights") == 2 * P // 8


def test_badam_ratio_mode():
    _, r = policy(job(train__block_optimizer="ratio", train__block_update_ratio=0.05))
    T = int(0.05 * (P - 2 * EMBED))  # BlockOptimizerRatio leaves the embedding and the LM head frozen
    assert r.term("weights") == 2 * P and r.term("optimizer_states") == 4 * T
    assert r.term("gradients") == (2 + 16) * T + 2 * EMBED


def test_freeze_under_accelerate_fsdp_shards_the_trained_layers_states_only():
    # an HF Trainer job under accelerate's FSDP: the frozen layers have no gradients or Adam states (as with LoRA),
    # rather than verl's fp32 actor with states for every parameter
    _, r = policy(job(train__freeze_layers=2, train__strategy="fsdp", topology__policy__gpus_per_node=8))
    T = 2 * LAYER
    assert r.term("weights") == 2 * P // 8
    assert r.term("optimizer_states") == 12 * T // 8 and r.term("gradients") == 4 * T // 8
