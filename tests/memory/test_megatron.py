"""ms-swift `megatron sft|rlhf` launches sized by the Megatron-Core terms (rlhf_lint.memory.megatron): the layout
read from the flags and the release's defaults, model states per rank against Megatron's own arithmetic
(theoretical_memory_usage.py: 6 + 12 / DP bytes per parameter with the distributed optimizer), activations per
recompute setting and pipeline stage. Fixtures written for these tests."""
from __future__ import annotations

import math

import pytest

from lintutil import build_written

from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import GIB, model_by_id
from rlhf_lint.memory.estimate import activation_units, estimate

A100 = Hardware(gpu="A100-80GB")
QWEN7 = "Qwen/Qwen2.5-7B-Instruct"


def _job(tmp_path, flags: str, env: str = "NPROC_PER_NODE=8 "):
    project = build_written(tmp_path, {"train.sh": f"{env}megatron sft --model {QWEN7} {flags}\n"})
    (job,) = project.jobs
    return job


def _policy(tmp_path, flags: str, env: str = "NPROC_PER_NODE=8 "):
    job = _job(tmp_path, flags, env)
    est = estimate(job, A100)
    assert est.unmodelled is None, est.assumptions
    return job, est, est.role("policy")


def test_the_layout_and_the_release_defaults_are_read(tmp_path):
    job = _job(tmp_path, "--tensor_model_parallel_size 2 --pipeline_model_parallel_size 2 --micro_batch_size 2 "
                         "--global_batch_size 64 --max_length 4096 --recompute_granularity full")
    assert job.value("train.strategy") == "megatron"
    assert (job.value("megatron.tensor_parallel"), job.value("megatron.pipeline_parallel")) == (2, 2)
    assert (job.value("batch.micro_train"), job.value("batch.train"), job.value("seq.max_len")) == (2, 64, 4096)
    # what the launch leaves unset: ms-swift's Megatron defaults (distributed optimizer on, padding-free batches)
    assert job.value("megatron.distributed_optimizer") is True and job.value("train.remove_padding") is True
    assert "megatron_args.py" in job.settings.get("megatron.distributed_optimizer").origin
    assert job.value("megatron.recompute") == "full" and job.value("train.lora_rank") == 0


def test_model_states_per_rank_follow_megatrons_own_arithmetic(tmp_path):
    # 8 GPUs at TP 2: DP 4; bf16 weights 2 B, fp32 gradient buffer 4 B, fp32 master + Adam m, v 12 B / DP
    _, _, r = _policy(tmp_path, "--tensor_model_parallel_size 2 --max_length 1024")
    arch = model_by_id(QWEN7)
    per_rank = arch.param_count() / 2
    assert r.term("weights") == pytest.approx(2 * per_rank, rel=1e-3)
    assert r.term("gradients") == pytest.approx(4 * per_rank, rel=1e-3)
    assert r.term("optimizer_states") == pytest.approx(12 * per_rank / 4, rel=1e-3)
    # theoretical_memory_usage.py: (6 + 12 / DP) bytes per parameter of the most loaded shard
    states = r.term("weights") + r.term("gradients") + r.term("optimizer_states")
    assert states == pytest.approx((6 + 12 / 4) * per_rank, rel=1e-3)


def test_without_the_distributed_optimizer_every_rank_holds_eighteen_bytes(tmp_path):
    _, _, r = _policy(tmp_path, "--tensor_model_parallel_size 2 --use_distributed_optimizer false")
    per_rank = model_by_id(QWEN7).param_count() / 2
    assert r.term("optimizer_states") == pytest.approx(12 * per_rank, rel=1e-3)


def test_sequence_parallel_splits_the_checkpointed_layer_inputs_over_tensor_parallel_ranks(tmp_path):
    flags = "--tensor_model_parallel_size 4 --recompute_granularity full --max_length 8192 "
    _, _, plain = _policy(tmp_path / "a", flags)
    _, _, sp = _policy(tmp_path / "b", flags + "--sequence_parallel true")
    assert sp.term("activations") < plain.term("activations")
    arch = model_by_id(QWEN7)
    # full recompute, uniform chunks of one layer: each layer keeps its 16-bit input, / TP with SP
    inputs = arch.num_layers * 8192 * arch.hidden_size * 2 / 4
    # + one layer recomputed at a time, its activations split over TP too
    layer = 8192 * activation_units(arch, False) * arch.hidden_size / 4
    assert sp.term("activations") == pytest.approx(inputs + layer, rel=1e-6)
    # the logits: each TP rank holds its slice of the vocabulary, 16-bit plus the loss's fp32 softmax
    assert sp.term("logits") == pytest.approx(8192 * math.ceil(arch.vocab_size / 4) * 6, rel=1e-6)


def test_selective_recompute_keeps_every_layers_activations(tmp_path):
    _, _, full = _policy(tmp_path / "a", "--recompute_granularity full --max_length 4096")
    _, _, selective = _policy(tmp_path / "b", "--max_length 4096")
    assert selective.term("activations") > 5 * full.term("activations")


def test_pipeline_stages_hold_a_share_of_the_layers_and_the_first_keeps_micro_batches_in_flight(tmp_path):
    _, _, one = _policy(tmp_path / "a", "--max_length 2048 --recompute_granularity full")
    _, est, four = _policy(tmp_path / "b", "--max_length 2048 --recompute_granularity full "
                                           "--pipeline_model_parallel_size 4 --global_batch_size 64")
    assert four.term("weights") < one.term("weights") / 2
    assert "stage" in next(t.formula for t in four.terms if t.name == "weights")
    assert any("micro batches in flight" in t.formula for t in four.terms) or four.term("logits")
    assert any("heavier pipeline stage" in a for a in est.assumptions)


def test_expert_parallel_splits_the_routed_experts(tmp_path):
    flags = "--max_length 2048 --recompute_granularity full --tuner_type full "
    text = "megatron sft --model Qwen/Qwen3-30B-A3B " + flags
    one = build_written(tmp_path / "a", {"train.sh": "NPROC_PER_NODE=8 " + text + "\n"}).jobs[0]
    eight = build_written(tmp_path / "b", {"train.sh": "NPROC_PER_NODE=8 " + text +
                                                        "--expert_model_parallel_size 8\n"}).jobs[0]
    a, b = estimate(one, A100).role("policy"), estimate(eight, A100).role("policy")
    arch = model_by_id("Qwen/Qwen3-30B-A3B")
    saved = arch.expert_params() * 7 / 8 * 2  # 2 B weights of the seven eighths of the experts another rank holds
    assert a.term("weights") - b.term("weights") == pytest.approx(saved, rel=0.01)


def test_lora_trains_only_the_adapters_named_by_megatron_module_names(tmp_path):
    _, _, r = _policy(tmp_path / "a", "--tuner_type lora --lora_rank 8 --target_modules linear_qkv linear_proj")
    _, _, every = _policy(tmp_path / "b", "--tuner_type lora --lora_rank 8")
    assert 0 < r.term("gradients") < every.term("gradients") < 1 * GIB
    assert r.term("weights") == every.term("weights")


def test_full_dpo_loads_a_reference_copy_and_lora_dpo_does_not(tmp_path):
    full = build_written(tmp_path / "f", {"train.sh": f"NPROC_PER_NODE=4 megatron rlhf --rlhf_type dpo --model {QWEN7} "
                                                       "--tensor_model_parallel_size 4 --max_length 2048\n"}).jobs[0]
    lora = build_written(tmp_path / "l", {"train.sh": f"NPROC_PER_NODE=4 megatron rlhf --rlhf_type dpo --model {QWEN7} "
                                                       "--tensor_model_parallel_size 4 --tuner_type lora\n"}).jobs[0]
    est = estimate(full, A100)
    assert est.role("ref") is not None
    assert est.role("ref").term("weights") == pytest.approx(est.role("policy").term("weights"), rel=1e-6)
    assert estimate(lora, A100).role("ref") is None


def test_optimizer_offload_moves_the_states_to_host_ram(tmp_path):
    _, _, gpu = _policy(tmp_path / "a", "--tensor_model_parallel_size 2")
    job, est, r = _policy(tmp_path / "b", "--tensor_model_parallel_size 2 --optimizer_cpu_offload true "
                                          "--optimizer_offload_fraction 0.5")
    assert job.value("offload.optimizer") == "cpu"
    assert r.term("optimizer_states") == pytest.approx(gpu.term("optimizer_states") / 2, rel=1e-3)
    host = next(t for node in est.nodes for t in node.persistent if t.name.startswith("cpu_optimizer"))
    # 8 ranks x (their half of 12 B + its fp32 gradient copy, 4 B per 12 B of states)
    assert host.bytes == pytest.approx(8 * r.host_states * 16 / 12, rel=1e-3)


def test_an_unmodelled_optimizer_gets_no_figures(tmp_path):
    job = _job(tmp_path / "a", "--optimizer muon")
    assert "muon" in estimate(job, A100).unmodelled


def test_a_vision_tower_frozen_by_default_gets_no_optimizer_states(tmp_path):
    text = "NPROC_PER_NODE=2 megatron sft --model Qwen/Qwen2.5-VL-7B-Instruct --tensor_model_parallel_size 2 "
    frozen = estimate(build_written(tmp_path / "a", {"train.sh": text + "\n"}).jobs[0], A100).role("policy")
    trained = estimate(build_written(tmp_path / "b", {"train.sh": text + "--freeze_vit false\n"}).jobs[0],
                       A100).role("policy")
    assert frozen.term("weights") == trained.term("weights")
    assert frozen.term("optimizer_states") < trained.term("optimizer_states")


def test_fp16_training_keeps_its_gradients_in_fp16(tmp_path):
    _, _, bf16 = _policy(tmp_path / "a", "--tensor_model_parallel_size 2")
    _, _, fp16 = _policy(tmp_path / "b", "--tensor_model_parallel_size 2 --fp16 true")
    assert fp16.term("gradients") * 2 == pytest.approx(bf16.term("gradients"), rel=1e-6)


def test_an_overflow_names_megatrons_own_levers(tmp_path):
    from lintutil import run

    # a 72B model at TP 2 on one node: 6 + 12 / 4 bytes per parameter of 36B parameters on each rank
    (tmp_path / "train.sh").write_text(
        "# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 host-memory=2TB\n"
        "NPROC_PER_NODE=8 megatron sft --model Qwen/Qwen2.5-72B-Instruct --tensor_model_parallel_size 2 "
        "--max_length 4096 --packing true\n")
    (finding,) = [d for d in run([tmp_path / "train.sh"], ["M001"]).diagnostics]
    assert finding.severity.label == "error"
    assert "tensor_model_parallel_size 4" in finding.message and "full recompute" in finding.message
    assert "ZeRO" not in finding.message


def test_a_layout_megatron_refuses_gets_no_figures_and_a016_says_where(tmp_path):
    from lintutil import run

    job = _job(tmp_path / "a", "--tensor_model_parallel_size 3")
    assert "does not start" in estimate(job, A100).unmodelled
    # one process (no NPROC_PER_NODE: `megatron sft` runs plain python) cannot hold TP 2 either
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "train.sh").write_text(f"megatron sft --model {QWEN7} --tensor_model_parallel_size 2\n")
    (finding,) = run([tmp_path / "b" / "train.sh"], ["A016"]).diagnostics
    assert finding.severity.label == "error" and finding.message.startswith("world size 1 (the launch's")
    # the 16 default global batch against 32 data-parallel ranks
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "train.sh").write_text(f"NNODES=4 NPROC_PER_NODE=8 megatron sft --model {QWEN7}\n")
    (finding,) = run([tmp_path / "c" / "train.sh"], ["A016"]).diagnostics
    assert "global_batch_size 16 (the default)" in finding.message
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "train.sh").write_text(f"NNODES=2 NPROC_PER_NODE=8 megatron sft --model {QWEN7} "
                                             "--global_batch_size 32\n")
    assert not run([tmp_path / "d" / "train.sh"], ["A016"]).diagnostics


def test_an_argument_file_feeds_megatron_too(tmp_path):
    # ms-swift's parse_yaml_args runs before `megatron sft` as before `swift sft` (4.1 on): its ENV and its fields
    project = build_written(tmp_path, {
        "train.sh": "megatron sft cfg.yaml --max_length 4096\n", "requirements.txt": "ms-swift==4.5.2\n",
        "cfg.yaml": f"ENV:\n  NPROC_PER_NODE: 8\nmodel: {QWEN7}\ntensor_model_parallel_size: 4\nmax_length: 1024\n"})
    (job,) = [j for j in project.jobs if j.framework == "swift"]
    assert job.value("megatron.tensor_parallel") == 4 and job.value("topology.world_size") == 8
    assert job.value("seq.max_len") == 4096  # the flag wins over the file


def test_releases_before_megatron_lora_train_every_parameter(tmp_path):
    # ms-swift 3.5 has no Megatron tuner field (BaseArguments' train_type 'lora' is the HF path's): full training;
    # its Megatron-Core default for expert tensor parallelism is the tensor-parallel size
    project = build_written(tmp_path, {"train.sh": f"NPROC_PER_NODE=8 megatron sft --model {QWEN7}\n",
                                       "requirements.txt": "ms-swift==3.5.3\n"})
    (job,) = project.jobs
    assert job.value("train.lora_rank") == 0
    from rlhf_lint.memory import megatron as mcore

    class Inputs:
        def get(self, key, default=None):
            return {"megatron.tensor_parallel": 4}.get(key, default)

    assert mcore.layout(Inputs(), 8).etp == 4


VERL = ("python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer algorithm.adv_estimator=grpo "
        f"actor_rollout_ref.model.path={QWEN7} trainer.nnodes=1 trainer.n_gpus_per_node=8 "
        "data.max_prompt_length=1024 data.max_response_length=1024 "
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 actor_rollout_ref.actor.use_kl_loss=True "
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 "
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 "
        "actor_rollout_ref.rollout.tensor_model_parallel_size=2 actor_rollout_ref.rollout.gpu_memory_utilization=0.5 ")


def _verl(tmp_path, extra: str = ""):
    project = build_written(tmp_path, {"run.sh": VERL + extra + "\n", "requirements.txt": "verl==0.7.0\n"})
    (job,) = [j for j in project.jobs if j.framework == "verl"]
    return job, estimate(job, A100)


def test_verl_megatron_workers_get_the_actors_layout_and_megatron_cores_recompute_default(tmp_path):
    job, est = _verl(tmp_path)
    assert (job.value("megatron.tensor_parallel"), job.value("megatron.pipeline_parallel")) == (2, 2)
    assert job.value("megatron.recompute") == "none"  # recompute_granularity null
    assert est.unmodelled is None and {r.role for r in est.roles} == {"actor", "ref", "vllm"}
    actor = est.role("actor")
    # 8 GPUs at TP 2 x PP 2: data parallel 2; a quarter of the parameters on each rank
    per_rank = model_by_id(QWEN7).param_count() / 4
    assert actor.term("weights") == pytest.approx(2 * per_rank, rel=0.1)
    assert actor.term("optimizer_states") == pytest.approx(12 * per_rank / 2, rel=0.1)
    assert any(t.phases == ("experience",) and t.name == "activations" for t in actor.terms)


def test_verl_megatron_offload_parks_the_states_between_their_phases(tmp_path):
    _, resident = _verl(tmp_path / "a")
    _, parked = _verl(tmp_path / "b", "actor_rollout_ref.actor.megatron.param_offload=True "
                                      "actor_rollout_ref.actor.megatron.optimizer_offload=True")
    states = ("weights", "gradients", "optimizer_states")
    assert all(not t.phases for t in resident.role("actor").terms if t.name in states)
    assert all(t.phases for t in parked.role("actor").terms if t.name in states)
    # the rollout's phase holds less of the actor; host RAM holds what is parked
    assert parked.group_of("vllm").phase_total("generation") < resident.group_of("vllm").phase_total("generation")
    # in host RAM: the parameter buffer pinned whole (a power of two) and the optimizer states; the gradient buffer
    # is freed when the model is offloaded
    host = next(t for node in parked.nodes for t in node.persistent if t.name == "parked:actor")
    actor = parked.role("actor")
    weights, optimizer = actor.term("weights"), actor.term("optimizer_states")
    assert host.bytes == 8 * (2 ** math.ceil(math.log2(weights)) + optimizer)


def test_a_verl_megatron_overflow_is_a_warning_that_says_why(tmp_path):
    from lintutil import run

    (tmp_path / "run.sh").write_text("# rlhf-lint: hardware gpu=A10\n" + VERL + "\n")
    findings = [d for d in run([tmp_path / "run.sh"], ["M001", "M005"]).diagnostics]
    assert findings and all(d.severity.label == "warning" for d in findings)
    assert all("not yet checked against a measured verl run" in d.message for d in findings)


def test_verl_megatron_lora_trains_the_adapters_its_megatron_config_names(tmp_path):
    _, full = _verl(tmp_path / "a")
    _, lora = _verl(tmp_path / "b", "actor_rollout_ref.model.lora.rank=64")
    a, b = full.role("actor"), lora.role("actor")
    assert b.term("weights") == a.term("weights") and b.term("gradients") < a.term("gradients") / 20
    # the default targets (linear_qkv, linear_proj, linear_fc1, linear_fc2) are every linear layer
    assert "LoRA adapter parameters" in next(t.formula for t in b.terms if t.name == "gradients")


def test_a_layout_size_left_to_a_variable_gets_no_figures(tmp_path):
    # any guess of $TP (1, say) could turn into a false "does not fit": the estimate declines and says which
    job = _job(tmp_path / "a", "--tensor_model_parallel_size $TP --pipeline_model_parallel_size 2")
    assert "tensor_parallel cannot be read" in estimate(job, A100).unmodelled
    _, est = _verl(tmp_path / "b", "actor_rollout_ref.actor.megatron.context_parallel_size=$CP")
    assert "context_parallel cannot be read" in est.unmodelled


def test_stages_set_apart_hold_their_own_layer_counts(tmp_path):
    from rlhf_lint.memory import megatron as mcore

    assert mcore.stage_layers(24, mcore.Layout(world=8, pp=2, last_layers=11)) == (13, 11)
    assert mcore.stage_layers(61, mcore.Layout(world=64, pp=8, last_layers=5)) == (8, 5)
    assert mcore.stage_layers(28, mcore.Layout(world=8, pp=4, first_layers=4, last_layers=4)) == (4, 4)
    assert mcore.stage_layers(28, mcore.Layout(world=8, pp=3)) == (10, 10)
    job = _job(tmp_path, "--pipeline_model_parallel_size 2 --decoder_last_pipeline_num_layers 10")
    assert job.value("megatron.last_stage_layers") == 10


def test_verl_megatron_token_budgets_are_per_rank_and_micro_batches_split_over_cp(tmp_path):
    # megatron_actor.py multiplies ppo_max_token_len_per_gpu by the CP size before splitting the sequences: each rank
    # still holds the budget; a fixed micro batch of whole sequences is split over the CP ranks
    cp = "actor_rollout_ref.actor.megatron.context_parallel_size=2 "
    _, budget = _verl(tmp_path / "a", cp + "actor_rollout_ref.actor.use_dynamic_bsz=True "
                                          "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=6000")
    assert budget.role("actor").micro_tokens["training"][0] == 6000
    _, micro = _verl(tmp_path / "b", cp)
    assert micro.role("actor").micro_tokens["training"][0] == 2 * 2048 // 2


def test_a_verl_critic_keeps_its_own_megatron_layout(tmp_path):
    _, est = _verl(tmp_path, "algorithm.adv_estimator=gae critic.model.path=" + QWEN7 + " "
                             "critic.megatron.tensor_model_parallel_size=4 critic.megatron.param_offload=True")
    actor, critic = est.role("actor"), est.role("critic")
    assert "TP 2, PP 2" in actor.terms[0].formula and "TP 4, PP 1" in critic.terms[0].formula
    assert next(t for t in critic.terms if t.name == "weights").phases  # parked between its phases


def test_multi_token_prediction_adds_a_layer_and_a_loss_on_the_last_stage(tmp_path):
    flags = "--model Qwen/Qwen3-30B-A3B --expert_model_parallel_size 8 --max_length 4096 --packing true "
    plain = estimate(build_written(tmp_path / "a", {"train.sh": f"NPROC_PER_NODE=8 megatron sft {flags}\n"}).jobs[0],
                     A100).role("policy")
    mtp = estimate(build_written(tmp_path / "b", {"train.sh": f"NPROC_PER_NODE=8 megatron sft {flags}"
                                                              "--mtp_num_layers 1\n"}).jobs[0], A100).role("policy")
    arch = model_by_id("Qwen/Qwen3-30B-A3B")
    # one more MoE layer: its experts over EP 8, the rest whole (TP 1), plus the 2h x h projection
    experts = arch.num_experts * arch.mlp_params(arch.expert_intermediate_size)
    added = (arch.layer_params() - experts + 2 * arch.hidden_size ** 2 + 3 * arch.hidden_size) + experts // 8
    assert mtp.term("weights") - plain.term("weights") == pytest.approx(2 * added, rel=0.01)
    assert mtp.term("logits") == pytest.approx(2 * plain.term("logits"), rel=1e-6)
