"""HF Trainer / TRL launches through an accelerate config with distributed_type FSDP (issue 15): the plugin's
sharding, CPU offload, activation checkpointing and dtype reach the FSDP estimate instead of DDP replicas."""
from __future__ import annotations

from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.engine.runner import build_project
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.model import UNKNOWN

H100 = Hardware(gpu="H100", gpus_per_node=8)
MODEL = "Qwen/Qwen2.5-7B"
# synthetic open-r1-style files: an SFT recipe and an accelerate FSDP config (the keys `accelerate config` writes)
SFT = (f"model_name_or_path: {MODEL}\ntorch_dtype: bfloat16\nbf16: true\nper_device_train_batch_size: 1\n"
       "max_length: 4096\ndataset_name: x\noutput_dir: out\n")
ACC = "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 8\n"
RUN = "accelerate launch --config_file fsdp.yaml sft.py --config sft.yaml\n"


def _job(tmp_path, fsdp: str = "", acc: str = ACC, recipe: str = SFT, run: str = RUN):
    files = {"run.sh": run, "sft.yaml": recipe, "fsdp.yaml": acc + ("fsdp_config:\n" + fsdp if fsdp else "")}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    project, _ = build_project([str(tmp_path / n) for n in files], Config(root=str(tmp_path)))
    (job,) = [j for j in project.jobs if j.path.endswith("run.sh")]
    return job


def _training(est, role="policy", phase="training"):
    group = next(g for g in est.groups if any(m.role == role for m in g.roles))
    return {t.name: t.bytes for r, t in group.phases[phase] if r == role}


def _span_text(tmp_path, setting):
    return (tmp_path / "fsdp.yaml").read_text()[setting.span.start:setting.span.end]


def test_full_shard_shards_the_states_over_all_gpus(tmp_path):
    job = _job(tmp_path, "  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_offload_params: false\n")
    strategy = job.settings.get("train.strategy")
    assert strategy.value == "fsdp" and _span_text(tmp_path, strategy) == "FSDP"
    assert job.settings.get("train.fsdp_size") is None and job.value("train.fsdp_reshard_after_forward") is None
    assert job.settings.get("precision.master_dtype") is None  # mixed precision: accelerate upcasts to fp32
    P = resolve_model(MODEL).param_count
    est = estimate(job, H100)
    terms = _training(est)
    # fp32 parameters, gradients and Adam moments sharded over the 8 GPUs (16 B per parameter in all)
    assert terms["weights"] == 4 * P // 8 and _training(est, phase="step")["gradients"] == 4 * P // 8
    assert terms["optimizer_states"] == 8 * P // 8
    assert terms["gathered_params"] < 2 * P  # one unit at a time, not the whole bf16 model
    assert list(est.groups[0].phases) == ["training", "step"]  # SFT: no verl experience phase


def test_integer_spellings_and_the_default(tmp_path):
    for text, expect in (("1", "fsdp"), ("FULL_SHARD", "fsdp"), ("3", "ddp"), ("NO_SHARD", "ddp")):
        job = _job(tmp_path, f"  fsdp_sharding_strategy: {text}\n")
        assert job.value("train.strategy") == expect, text
    assert _job(tmp_path, "  fsdp_offload_params: false\n").value("train.strategy") == "fsdp"  # FULL_SHARD default
    bad = _job(tmp_path, "  fsdp_sharding_strategy: SHARD_EVERYTHING\n")
    assert bad.value("train.strategy") is UNKNOWN
    est = estimate(bad, H100)
    assert est.groups == [] and est.unmodelled  # no verdict rather than a DDP guess
    assert any("SHARD_EVERYTHING" in a for a in est.assumptions)


def test_shard_grad_op_keeps_the_gathered_parameters_to_backward(tmp_path):
    P = resolve_model(MODEL).param_count
    full = _training(estimate(_job(tmp_path, "  fsdp_sharding_strategy: FULL_SHARD\n"), H100))
    for fsdp in ("  fsdp_sharding_strategy: SHARD_GRAD_OP\n", "  fsdp_sharding_strategy: 2\n",
                 "  fsdp_version: 2\n  fsdp_reshard_after_forward: false\n"):
        job = _job(tmp_path, fsdp)
        assert job.value("train.fsdp_reshard_after_forward") is False, fsdp
        terms = _training(estimate(job, H100))
        assert terms["gathered_params"] >= 2 * P  # every bf16 unit at once: never below the replicated weights
        assert terms["optimizer_states"] == full["optimizer_states"]  # still sharded
    v2 = _job(tmp_path, "  fsdp_version: 2\n  fsdp_reshard_after_forward: true\n")
    assert v2.value("train.strategy") == "fsdp2" and v2.value("train.fsdp_reshard_after_forward") is None


def test_hybrid_shard_groups_one_node(tmp_path):
    acc = ACC.replace("num_processes: 8", "num_processes: 16\nnum_machines: 2")
    job = _job(tmp_path, "  fsdp_sharding_strategy: HYBRID_SHARD\n", acc=acc)
    assert job.value("train.strategy") == "fsdp" and job.value("train.fsdp_size") == 8
    zero2 = _job(tmp_path, "  fsdp_sharding_strategy: 5\n", acc=acc)
    assert zero2.value("train.fsdp_size") == 8 and zero2.value("train.fsdp_reshard_after_forward") is False
    # two machines, no process count: the node's size is unknown, so no figure
    unknown = _job(tmp_path, "  fsdp_sharding_strategy: HYBRID_SHARD\n",
                   acc=ACC.replace("num_processes: 8", "num_machines: 2"), run=RUN)
    assert unknown.value("train.strategy") is UNKNOWN


def test_offload_params_moves_the_shards_to_host_ram(tmp_path):
    job = _job(tmp_path, "  fsdp_offload_params: true\n")
    param, opt = job.settings.get("offload.param"), job.settings.get("offload.optimizer")
    assert param.value == "cpu" and opt.value == "cpu" and _span_text(tmp_path, param) == "true"
    P = resolve_model(MODEL).param_count
    est = estimate(job, H100)
    parked = sum(t.bytes for t in est.nodes[0].persistent if t.name != "process:policy")
    # the 8 ranks' fp32 parameter and gradient shards, each FSDP unit's in a pinned block rounded up to a power of
    # two (the root's 1.09B / 8 x 4 B = 0.51 GiB takes 1 GiB, each layer's 0.11 GiB 0.125 GiB), and the Adam
    # moments at their own size (the optimizer steps on the CPU)
    arch = resolve_model(MODEL).arch
    root = arch.embedding_params() + arch.vocab_size * arch.hidden_size + arch.hidden_size
    blocks = 2**30 + arch.num_layers * 2**27
    assert 4 * root // 8 < 2**30 and 4 * arch.layer_params() // 8 < 2**27
    assert parked == 8 * (2 * blocks + 8 * P // 8)
    assert parked > 8 * (4 * P // 8 + 4 * P // 8 + 8 * P // 8)
    # and none of them on the GPU in any phase: only the gathered units, activations and runtime
    group = est.groups[0]
    assert all(t.bytes == 0 for _, items in group.phases.items() for _, t in items
               if t.name in ("weights", "gradients", "optimizer_states"))
    kept = estimate(_job(tmp_path, "  fsdp_offload_params: false\n"), H100).groups[0].peak
    assert kept - group.peak >= (4 + 4 + 8) * P // 8  # the states' 16 B per parameter / 8 GPUs, and their slack


def test_activation_checkpointing_turns_checkpointing_on(tmp_path):
    job = _job(tmp_path, "  fsdp_activation_checkpointing: true\n", recipe=SFT + "gradient_checkpointing: false\n")
    ckpt = job.settings.get("train.gradient_checkpointing")
    assert ckpt.value is True and _span_text(tmp_path, ckpt) == "true"
    off = _job(tmp_path, "  fsdp_activation_checkpointing: false\n", recipe=SFT + "gradient_checkpointing: false\n")
    assert off.value("train.gradient_checkpointing") is False


def test_no_mixed_precision_keeps_the_loaded_dtype(tmp_path):
    # bf16 off in the recipe too: TRL >= 0.20 turns an unset bf16 on (SFTConfig's "bf16 unless fp16")
    job = _job(tmp_path, "  fsdp_sharding_strategy: FULL_SHARD\n", acc=ACC.replace("bf16", "'no'"),
               recipe=SFT.replace("bf16: true\n", "bf16: false\n"))
    assert job.value("precision.master_dtype") == "bf16"
    P = resolve_model(MODEL).param_count
    assert _training(estimate(job, H100))["weights"] == 2 * P // 8


def test_a_dpo_reference_is_sharded_on_the_gpus(tmp_path):
    run = "accelerate launch --config_file fsdp.yaml trl/scripts/dpo.py --config sft.yaml\n"
    job = _job(tmp_path, "  fsdp_sharding_strategy: FULL_SHARD\n", run=run)
    assert job.value("job.type") == "dpo" and job.value("train.strategy") == "fsdp"
    est = estimate(job, H100)
    P = resolve_model(MODEL).param_count
    ref = next(r for r in est.roles if r.role == "ref")
    assert next(t.bytes for t in ref.terms if t.name == "weights") == 2 * P // 8  # not parked in host RAM


def test_deepspeed_through_accelerate_still_reads_the_stage(tmp_path):
    acc = ("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nmixed_precision: bf16\n"
           "num_processes: 8\ndeepspeed_config:\n  zero_stage: 3\n")
    job = _job(tmp_path, acc=acc)
    assert job.value("zero.stage") == 3 and job.value("train.strategy") != "fsdp"


def test_fsdp1_falls_back_to_reshard_after_forward_only_when_no_strategy_is_given(tmp_path):
    job = _job(tmp_path, "  fsdp_reshard_after_forward: SHARD_GRAD_OP\n")
    assert job.value("train.fsdp_reshard_after_forward") is False
    both = _job(tmp_path, "  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_reshard_after_forward: SHARD_GRAD_OP\n")
    assert both.value("train.fsdp_reshard_after_forward") is None  # accelerator.py: sharding_strategy wins
    odd = _job(tmp_path, "  fsdp_version: 2\n  fsdp_reshard_after_forward: sometimes\n")
    assert odd.value("train.strategy") is UNKNOWN


def test_a_trl_grpo_policy_under_fsdp_counts_its_activations_once(tmp_path):
    grpo = SFT.replace("max_length: 4096\n", "max_prompt_length: 512\nmax_completion_length: 1024\n"
                       "num_generations: 8\nbeta: 0.0\n")
    run = "accelerate launch --config_file fsdp.yaml grpo.py --config sft.yaml\n"
    job = _job(tmp_path, "  fsdp_sharding_strategy: FULL_SHARD\n", recipe=grpo, run=run)
    assert job.value("job.type") == "grpo" and job.value("train.strategy") == "fsdp"
    est = estimate(job, H100)
    policy = next(r for r in est.roles if r.role == "policy")
    assert [t.name for t in policy.terms].count("activations") == 1  # no verl experience-phase copy
    assert "experience" not in est.groups[0].phases and "generation" in est.groups[0].phases  # HF generate


def test_cpu_ram_efficient_loading_decides_who_loads_the_checkpoint(tmp_path):
    P = resolve_model(MODEL).param_count

    def loading(fsdp):
        est = estimate(_job(tmp_path, fsdp), H100)
        return sum(t.bytes for t in est.nodes[0].transient if t.name == "loading:policy")

    assert loading("  fsdp_cpu_ram_efficient_loading: true\n") == 2 * P  # rank 0, in torch_dtype bf16
    assert loading("  fsdp_cpu_ram_efficient_loading: false\n") == 8 * 2 * P  # every rank a full copy
    assert loading("  fsdp_offload_params: false\n") == 8 * 2 * P  # accelerate's default: false


def test_lora_and_qlora_shard_the_frozen_base_in_its_dtype_and_train_only_the_adapters(tmp_path):
    # LLaMA-Factory's fsdp_qlora example shape: a 4-bit base and LoRA r 8 on every linear layer under FULL_SHARD
    P = resolve_model(MODEL).param_count
    for extra, base_bytes in (("use_peft: true\nlora_r: 8\n", 2), ("use_peft: true\nlora_r: 8\nload_in_4bit: true\n",
                                                                 None)):
        job = _job(tmp_path, "  fsdp_sharding_strategy: FULL_SHARD\n", recipe=SFT + extra)
        assert job.value("train.lora_rank") == 8
        est = estimate(job, H100)
        terms = _training(est)
        adapters = est.role("policy").trained_params
        assert 0 < adapters < P // 100
        if base_bytes:  # the bf16 base (torch_dtype) sharded over 8, not verl's fp32 actor
            assert base_bytes * P // 8 <= terms["weights"] < (base_bytes * P + 4 * adapters) // 8 + 1
        else:  # NF4: about half a byte per linear weight
            assert terms["weights"] < P // 8
        step = _training(est, phase="step")
        assert step["gradients"] <= 4 * adapters // 8 and terms["optimizer_states"] <= 12 * adapters // 8
        assert not any(t.name == "optimizer_step" and t.bytes > 4 * adapters for t in est.role("policy").terms)


def test_fsdp2_offload_pins_each_parameter_shard(tmp_path):
    # CPUOffloadPolicy pins each parameter's shard and its gradient's copy: one rounded block per parameter
    job = _job(tmp_path, "  fsdp_version: 2\n  fsdp_offload_params: true\n")
    assert job.value("train.strategy") == "fsdp2"
    P = resolve_model(MODEL).param_count
    arch = resolve_model(MODEL).arch
    parked = sum(t.bytes for t in estimate(job, H100).nodes[0].persistent if t.name != "process:policy")

    def blocks(numel):
        return 1 << max(0, -(-4 * numel // 8) - 1).bit_length()

    assert parked == 8 * (2 * sum(blocks(t) for t in arch.tensor_numels()) + 8 * P // 8)
