"""TRL's activation_offloading (SFTConfig, DPOConfig, KTOConfig, RewardConfig): the tensors saved for the backward go
to pinned host RAM in the forward, a stash of 5 kept on the GPU (trl/models/activation_offloading.py)."""
from rlhf_lint.engine.config import Hardware
from rlhf_lint.frameworks.jobs import Job
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.model import Setting, Settings

SEQ, H, L = 32768, 3584, 28  # Qwen2.5-7B


def estimate_of(checkpointing=True, **values):
    settings = Settings()
    base = {"model.policy.path": "Qwen/Qwen2.5-7B", "topology.policy.nodes": 1, "topology.policy.gpus_per_node": 8,
            "train.strategy": "deepspeed", "zero.stage": 3, "precision.param_dtype": "bf16", "batch.micro_train": 1,
            "seq.max_len": SEQ, "train.gradient_checkpointing": checkpointing, "train.fused_loss": True,
            "train.flash_attn": True,
            "job.type": "sft"}
    for key, value in {**base, **values}.items():
        settings.add(Setting(key, value))
    job = Job("test", "test.yaml", None, "trl", settings, roles=("policy",))
    return estimate(job, Hardware(gpu="H100-80GB", gpus_per_node=8))


def activations(checkpointing=True, **values):
    return estimate_of(checkpointing, **values).role("policy").term("activations")


def test_checkpointed_layer_inputs_but_the_stash_go_to_host_ram():
    kept, every = activations(**{"train.activation_offloading": True}), activations()
    assert every - kept == (L - 5) * 2 * SEQ * H


def test_without_checkpointing_one_layer_stays_on_the_gpu():
    offloaded = activations(False, **{"train.activation_offloading": True})
    assert offloaded < activations(False) / 10
    # the one layer the recomputation holds (there counted beyond the fused loss's chunk, s*h*(4 + 2) B)
    assert offloaded == activations(True) - L * 2 * SEQ * H + SEQ * H * 6


def test_the_offloaded_tensors_sit_in_pinned_host_ram():
    """Each layer input in its own pinned block (a power of two); with the loss unfused, its fp32 log-softmax too."""
    def host(**values):
        terms = {t.name: t.bytes for t in estimate_of(**values).nodes[0].persistent}
        return terms.get("activations:policy", 0)

    block = 1 << (2 * SEQ * H - 1).bit_length()
    assert host() == 0
    assert host(**{"train.activation_offloading": True}) == 8 * (L - 5) * block
    vocab = 152064
    log_softmax = 1 << (4 * SEQ * vocab - 1).bit_length()
    assert host(**{"train.activation_offloading": True, "train.fused_loss": False}) == \
        8 * ((L - 5) * block + log_softmax)
