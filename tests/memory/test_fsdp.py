"""The FSDP memory model of verl's workers, and which M rule owns which overflow (M001 certain, M009 at the length
bound, M005 only when vLLM's reservation is what overflows)."""
import shutil
import subprocess
from pathlib import Path

from lintutil import ROOT, fix_copy, run, triples
from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.memory.catalog import GIB, resolve_model
from rlhf_lint.memory.estimate import K, estimate
from rlhf_lint.engine.runner import build_project

FIXTURES = Path(ROOT) / "tests" / "fixtures" / "memory"
A100 = Hardware(gpu="A100-80GB", gpus_per_node=8)


def config():
    cfg = Config()
    cfg.versions["verl"] = "0.7.0"
    return cfg


def job_of(path):
    project, _ = build_project([str(path)], config())
    (job,) = [j for j in project.jobs if j.framework == "verl"]
    return job


def variant(tmp_path, name, *replacements):
    text = (FIXTURES / name).read_text()
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new)
    target = tmp_path / name
    target.write_text(text)
    return target


def terms(group, phase, role):
    return {t.name: t.bytes for r, t in group.phases[phase] if r == role}


def test_typical_fsdp_grpo_is_clean_on_8_a100():
    assert triples(run([FIXTURES / "M001_fsdp_grpo_good.sh"], ["M"], config())) == []


def test_fsdp_states_are_fp32_sharded_and_gradients_live_only_while_training():
    job = job_of(FIXTURES / "M001_fsdp_grpo_good.sh")
    assert job.value("train.strategy") == "fsdp" and job.value("batch.max_tokens_per_gpu") == 24576
    est = estimate(job, A100)
    P = resolve_model("Qwen/Qwen2.5-7B-Instruct").param_count
    (group,) = est.groups
    generation = terms(group, "generation", "actor")
    training = terms(group, "training", "actor")
    # fp32 master parameters and Adam moments stay between phases; no DeepSpeed buckets under FSDP
    assert generation["weights"] == 4 * P // 8 and generation["optimizer_states"] == 8 * P // 8
    assert "gradients" not in generation and "deepspeed_buffers" not in training
    assert training["gradients"] == 4 * P // 8
    # the activations of the update are those of the token budget, with checkpointing: L x 2 B x tokens x h + one
    # layer recomputed; logits bf16 for the budget's tokens. One Qwen2.5-7B layer saves per token (flash attention):
    # two RMSNorms 2 x (4 + 2) x 3584, attention input 2 x 3584 + q 2 x 3584 + k, v 2 x 2 x 512 + output 2 x 3584,
    # MLP input 2 x 3584 + gate, up, SiLU, product 8 x 18944 = 225280 B, times the fitted share (constants.json)
    arch = resolve_model("Qwen/Qwen2.5-7B-Instruct").arch
    tokens = 24576
    expected = arch.num_layers * 2 * tokens * arch.hidden_size + K.activation_scale * 225280 * tokens
    assert abs(training["activations"] - expected) < 1024
    assert training["logits"] == tokens * arch.vocab_size * 2
    # the reference's shards are in host RAM (verl forces FSDP CPUOffload), vLLM sleeps outside generation
    assert terms(group, "experience", "ref")["weights"] == 0
    assert all(role != "vllm" for role, _ in group.phases["training"] + group.phases["experience"])
    (node,) = est.nodes
    assert {t.name: t.bytes for t in node.persistent}["params:ref"] == 2 * P
    assert round(group.phase_total("training") / GIB, 1) == 45.3
    assert round(group.phase_total("generation") / GIB, 1) == 59.9  # vLLM's budget; the one CUDA context beside it


def test_offloaded_states_leave_generation_and_come_back_for_the_update(tmp_path):
    path = variant(tmp_path, "M001_fsdp_grpo_good.sh",
                   ("fsdp_config.param_offload=False", "fsdp_config.param_offload=True"),
                   ("fsdp_config.optimizer_offload=False", "fsdp_config.optimizer_offload=True"))
    est = estimate(job_of(path), A100)
    (group,) = est.groups
    assert not {"weights", "optimizer_states"} & set(terms(group, "generation", "actor"))
    assert {"weights", "optimizer_states", "gradients"} <= set(terms(group, "training", "actor"))
    assert "weights" in terms(group, "experience", "actor")  # loaded back to compute the old log-probs
    (node,) = est.nodes
    parked = {t.name for t in node.persistent}
    assert {"params:actor", "optimizer_states:actor"} <= parked


def test_32b_without_offload_on_8_x_24gb_overflows_whatever_the_lengths():
    result = run([FIXTURES / "M001_fsdp_32b_bad.sh"], ["M"], config())
    assert triples(result) == [("M001", 5, 1), ("M007", 19, 54)]
    m001 = result.diagnostics[0].message
    # the peak is the optimizer step: the gradient shards held and foreach AdamW's sqrt(v) copy of the fp32 shards
    assert m001.startswith("actor + ref + vllm need 82.1 GiB per GPU (band 74.3 GiB to 88.7 GiB) in the step "
                           "phase, RTX-4090 has 23.6 GiB: "
                           "actor optimizer states 30.5 GiB, actor weights 15.3 GiB, actor optimizer step 15.3 GiB, "
                           "actor gradients 15.3 GiB")
    # nothing the launch sets lowers the step of sharded fp32 states: the message says what would
    assert "none of the changes tried (checkpointing, ZeRO-3, offload, micro batch, fused AdamW, vLLM) lowers the " \
           "step phase: more GPUs to shard over" in m001
    # the other roles alone overflow the generation phase: no utilisation helps, so no M005
    assert "M005" not in [d.code for d in result.diagnostics]


def test_overflow_at_the_length_bound_is_a_warning_with_the_budget_that_fits(tmp_path):
    result = run([FIXTURES / "M009_length_bound_bad.sh"], ["M"], config())
    assert triples(result) == [("M009", 5, 1)]
    (d,) = result.diagnostics
    assert d.severity.label == "warning"
    assert "95.1 GiB per GPU in the training phase" in d.message
    assert "66.1 GiB without the length-dependent activations and logits" in d.message
    assert "a token budget of 7168 per GPU fits" in d.message
    fixed = variant(tmp_path, "M009_length_bound_bad.sh",
                    ("ppo_micro_batch_size_per_gpu=16 ", "use_dynamic_bsz=True "
                     "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=7168 "))
    # the budget fits every phase it changes; FSDP's optimizer step (states, gradients and foreach AdamW's copy,
    # 71 GiB of tensors whatever the lengths) stays within 10% of the card: a warning, never an error
    (after,) = run([fixed], ["M"], config()).diagnostics
    assert (after.code, after.severity.label) == ("M001", "warning")
    assert "76.4 GiB per GPU (band 69.1 GiB to 82.6 GiB) in the step phase" in after.message


def test_vllm_is_blamed_only_in_phases_that_hold_its_reservation(tmp_path):
    # asleep while training: the rollout's 0.6 fits beside what stays, nothing to report
    assert triples(run([FIXTURES / "M001_fsdp_grpo_good.sh"], ["M005"], config())) == []
    # awake while training at 0.8: the reservation sits beside the update's working set and M005 names the training
    # phase; the utilisation it sets makes that phase fit with the length-dependent terms at their bound
    awake = variant(tmp_path, "M001_fsdp_grpo_good.sh",
                    ("trainer.nnodes=1", "trainer.nnodes=1 actor_rollout_ref.rollout.free_cache_engine=False"),
                    ("gpu_memory_utilization=0.6", "gpu_memory_utilization=0.8"))
    result = run([awake], ["M"], config())
    assert triples(result) == [("M001", 8, 1), ("M005", 25, 54)]
    m005 = result.diagnostics[1].message
    assert "while actor, ref hold 45.3 GiB" in m005 and "(training phase total 109.1 GiB)" in m005
    assert m005.endswith("; 0.25 fits")  # the whole band of the training phase fits
    assert "let vLLM sleep while training" in result.diagnostics[0].message
    (tmp_path / "fix").mkdir()
    fixed, after = fix_copy(awake, tmp_path / "fix", ["M005"], config())
    assert "gpu_memory_utilization=0.25 " in fixed and triples(after) == []
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(tmp_path / "fix" / awake.name)]).returncode == 0


def test_critic_checkpointing_is_its_own_setting_and_fix(tmp_path):
    path = variant(tmp_path, "M005_verl_bad.sh",
                   ("algorithm.adv_estimator=gae \\", "algorithm.adv_estimator=gae critic.ppo_micro_batch_size_per_gpu=8"
                    " actor_rollout_ref.model.use_remove_padding=False critic.model.enable_gradient_checkpointing=False"
                    " \\"),
                   ("gpu_memory_utilization=0.9", "gpu_memory_utilization=0.5"))
    result = run([path], ["M001", "M006"], config())
    # one finding for one overflow: M001 names the cheapest change that fits and carries it; M006 does not repeat it
    assert [d.code for d in result.diagnostics] == ["M001"]
    assert "cheapest change that fits: turn on gradient checkpointing (critic)" in result.diagnostics[0].message
    (tmp_path / "fix").mkdir()
    fixed, after = fix_copy(path, tmp_path / "fix", ["M001", "M006"], config())
    assert "critic.model.enable_gradient_checkpointing=True" in fixed and triples(after) == []


def test_reference_model_only_with_a_kl_term_and_without_lora(tmp_path):
    assert job_of(FIXTURES / "M001_fsdp_grpo_good.sh").roles == ("actor", "ref", "vllm")  # use_kl_loss=True
    no_kl = variant(tmp_path, "M001_fsdp_grpo_good.sh", ("use_kl_loss=True", "use_kl_loss=False"))
    assert job_of(no_kl).roles == ("actor", "vllm")
    lora = variant(tmp_path, "M001_fsdp_32b_bad.sh",
                   ("use_remove_padding=True", "use_remove_padding=True actor_rollout_ref.model.lora_rank=32"))
    assert job_of(lora).roles == ("actor", "vllm")  # the actor without its adapters is the reference


def test_megatron_strategy_on_the_fsdp_config_gets_no_verdict(tmp_path):
    # `actor.strategy=megatron` over ppo_trainer.yaml: the config holds no Megatron layout to size (the Megatron
    # trainer's config does), so no figures rather than a guessed TP 1, and M012 says so
    path = variant(tmp_path, "M001_fsdp_32b_bad.sh",
                   ("actor_rollout_ref.model.use_remove_padding=True",
                    "actor_rollout_ref.model.use_remove_padding=True actor_rollout_ref.actor.strategy=megatron"))
    job = job_of(path)
    est = estimate(job, Hardware(gpu="RTX4090", gpus_per_node=8))
    assert est.groups == [] and "Megatron layout is not read" in est.unmodelled
    assert [code for code, *_ in triples(run([path], ["M"], config()))] == ["M012"]


def test_the_optimizer_step_is_a_phase_with_the_gradient_shards_and_foreach_adams_copy_of_v():
    job = job_of(FIXTURES / "M001_fsdp_grpo_good.sh")
    est = estimate(job, A100)
    P = resolve_model("Qwen/Qwen2.5-7B-Instruct").param_count
    (group,) = est.groups
    step, training = terms(group, "step", "actor"), terms(group, "training", "actor")
    # after the backward: gradient shards held, gathered units, activations and logits freed; torch.optim.AdamW
    # (verl's default, foreach) writes sqrt(v) of the fp32 shards into new tensors
    assert step["gradients"] == training["gradients"] == 4 * P // 8
    assert step["optimizer_step"] == 4 * P // 8 and "optimizer_step" not in training
    assert not {"activations", "logits", "gathered_params"} & set(step)
    actor = est.role("actor")
    (copy,) = [t for t in actor.terms if t.name == "optimizer_step"]
    assert not copy.unsure and "verl's default torch.optim.AdamW" in copy.formula
    # 8 GPUs: the copy (3.8 GB) is smaller than the backward's transients it reuses, so no slack of its own, and
    # the step stays below the update
    assert not any(t.name == "allocator_slack" and t.phases == ("step",) for t in actor.terms)
    assert group.phase_total("step") < group.phase_total("training")


def test_a_fused_or_loop_adamw_makes_no_step_copy_and_other_optimizers_are_not_guessed(tmp_path):
    for override, expected in (("+actor_rollout_ref.actor.optim.override_optimizer_config.fused=True", False),
                               ("+actor_rollout_ref.actor.optim.override_optimizer_config.foreach=False", False),
                               ("+actor_rollout_ref.actor.optim.override_optimizer_config.foreach=True", True)):
        path = variant(tmp_path, "M001_fsdp_grpo_good.sh", ("trainer.nnodes=1", f"trainer.nnodes=1 {override}"))
        job = job_of(path)
        foreach = job.settings.get("train.optimizer_foreach")
        assert foreach.value is expected and path.read_text()[foreach.span.start:foreach.span.end] in ("True",
                                                                                                        "False")
        assert ("optimizer_step" in terms(estimate(job, A100).groups[0], "step", "actor")) is expected
    path = variant(tmp_path, "M001_fsdp_grpo_good.sh",
                   ("trainer.nnodes=1", "trainer.nnodes=1 actor_rollout_ref.actor.optim.optimizer_impl=torchao.optim"))
    job = job_of(path)
    assert job.value("train.optimizer_impl") == "torchao.optim" and job.value("train.optimizer") == "adamw"
    est = estimate(job, A100)
    (copy,) = [t for t in est.role("actor").terms if t.name == "optimizer_step"]
    assert copy.unsure  # torchao's AdamW: counted at the nominal peak, not at the band's low end
    assert any("torch's foreach AdamW assumed (optimizer torchao.optim.adamw" in a for a in est.assumptions)


def test_verl_with_vllm_before_0_7_takes_the_utilisation_of_the_free_memory():
    # verl's own vLLM workers (0.3.1 - 0.6.3): KV cache = utilisation x the memory free after the other models'
    # weights, the rollout's weights and its profile run (the rollout is built last); from vLLM 0.7: of the GPU
    job = job_of(FIXTURES / "M001_fsdp_grpo_good.sh")
    new = estimate(job, A100, versions={"vllm": "0.8.3"}).role("vllm")
    old_est = estimate(job, A100, versions={"vllm": "0.6.3"})
    old = old_est.role("vllm")
    util = job.value("vllm.gpu_memory_utilization")
    others = sum(t.bytes for r in old_est.roles if r.role != "vllm" for t in r.terms
                 if t.name == "weights" and not t.phases)
    weights, profile = old.kv["weights_per_gpu"], old.kv["profile_peak"]
    card = old_est.gpu_memory
    free = card - K.cuda_context - others
    assert old.kv["kv_bytes"] == int(util * (free - weights - profile))
    assert old.term("vllm_reservation") == weights + old.kv["kv_bytes"]
    assert "fraction of the free memory" in next(t.formula for t in old.terms if t.name == "vllm_reservation")
    assert new.term("vllm_reservation") == int(util * card) - K.cuda_context


def test_parked_shards_take_pinned_blocks_rounded_up_to_powers_of_two(tmp_path):
    # verl parks each FSDP unit's flat shard and each Adam state with .to("cpu", non_blocking=True): pinned blocks
    # (schemas/verl/offload_pinning.json), each rounded up to a power of two
    path = variant(tmp_path, "M001_fsdp_grpo_good.sh",
                   ("fsdp_config.param_offload=False", "fsdp_config.param_offload=True"),
                   ("fsdp_config.optimizer_offload=False", "fsdp_config.optimizer_offload=True"))
    job = job_of(path)
    (node,) = estimate(job, A100, versions={"verl": "0.7.0"}).nodes
    parked = {t.name: t for t in node.persistent}
    params, states = parked["params:actor"], parked["optimizer_states:actor"]
    assert "one pinned block per FSDP unit" in params.formula and "and moment" in states.formula
    # against the same shards at their own size (a release before 0.3.0 parked them otherwise)
    (old,) = estimate(job, A100, versions={"verl": "0.2.0"}).nodes
    unrounded = {t.name: t.bytes for t in old.persistent}
    assert unrounded["params:actor"] < params.bytes < 2 * unrounded["params:actor"]
    assert unrounded["optimizer_states:actor"] < states.bytes < 2 * unrounded["optimizer_states:actor"]


def test_fsdp2_parks_parameters_unpinned_from_verl_0_6(tmp_path):
    path = variant(tmp_path, "M001_fsdp_grpo_good.sh",
                   ("fsdp_config.param_offload=False", "fsdp_config.param_offload=True"),
                   ("actor_rollout_ref.actor.strategy=fsdp ", "actor_rollout_ref.actor.strategy=fsdp2 "))
    job = job_of(path)
    new = {t.name: t for t in estimate(job, A100, versions={"verl": "0.7.0"}).nodes[0].persistent}
    old = {t.name: t for t in estimate(job, A100, versions={"verl": "0.5.0"}).nodes[0].persistent}
    assert "not pinned" in new["params:actor"].formula
    assert "one pinned block per parameter" in old["params:actor"].formula
    assert old["params:actor"].bytes > new["params:actor"].bytes
