"""TRL GRPOTrainer without vLLM (issue 15, huggingface/trl#3456): the reference model follows beta and the TRL
release, the LM head runs on the completion only, and HF generate's KV cache is a generation phase of its own."""
from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.engine.runner import build_project
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import K, estimate

A100 = Hardware(gpu="A100-80GB", gpus_per_node=1)
QWEN3 = "Qwen/Qwen3-0.6B"


def grpo(beta=None, versions=None, zero=None, gpus=1, dtype="fp32", prompt=2048, completion=1024):
    extra = {"train.strategy": None if zero is not None else "ddp", "seq.prompt_max_len": prompt,
             "seq.generate_max_len": completion, "trl.beta": beta}
    job = _job_from_options(QWEN3, gpus, None, zero, None, None, dtype, None, 4, None, False, True, "grpo", extra)
    return estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=gpus), versions=versions)


def terms(est, phase, role):
    (group,) = est.groups
    return {t.name: t.bytes for r, t in group.phases[phase] if r == role}


def test_reference_model_follows_beta_and_the_release_default():
    assert [r.role for r in grpo(beta=0.04).roles] == ["policy", "ref"]
    assert [r.role for r in grpo(beta=0.0).roles] == ["policy"]
    # beta unset: 0.04 up to TRL 0.18, 0.0 since 0.19
    assert [r.role for r in grpo(versions={"trl": "0.17.0"}).roles] == ["policy", "ref"]
    assert [r.role for r in grpo(versions={"trl": "0.19.1"}).roles] == ["policy"]
    unknown = grpo()
    assert [r.role for r in unknown.roles] == ["policy"]
    assert any("TRL release unknown" in a for a in unknown.assumptions)


def test_logits_cover_the_completion_and_generate_holds_the_kv_cache():
    arch = resolve_model(QWEN3).arch
    est = grpo(beta=0.04)
    training = terms(est, "training", "policy")
    # fp32 logits of 4 x 1024 completion tokens (logits_to_keep), not of the 3072-token sequence: four fp32 copies
    # at the backward of selective_log_softmax's logsumexp path
    assert training["logits"] == 4 * 1024 * arch.vocab_size * 4 * K.trl_logps_copies[1]
    assert K.trl_logps_copies[1] == 4  # rows I22/I23 (fp32) keep their figure
    assert "generate_kv_cache" not in training
    generation = terms(est, "generation", "policy")
    assert generation["generate_kv_cache"] == 4 * 3072 * arch.kv_bytes_per_token(4)
    assert "activations" not in generation and "logits" not in generation
    # the reference's log-prob forward: completion logits only, in the experience phase
    assert terms(est, "experience", "ref")["logits"] == 4 * 1024 * arch.vocab_size * (4 + 4)
    # a longer completion grows the KV cache and the logits
    longer = grpo(beta=0.04, completion=2048)
    assert terms(longer, "generation", "policy")["generate_kv_cache"] > generation["generate_kv_cache"]
    assert terms(longer, "training", "policy")["logits"] == 2 * training["logits"]


def test_zero3_gathers_the_whole_model_for_generate():
    est = grpo(beta=0.0, zero=3, gpus=8, dtype="bf16")
    params = est.roles[0].params
    gathered = terms(est, "generation", "policy")["generate_gathered"]
    assert gathered == 2 * params - 2 * params // 8
    assert "generate_gathered" not in terms(est, "training", "policy")


def test_trl_grpo_launch_reaches_the_estimate(tmp_path):
    script = tmp_path / "run_grpo.sh"
    script.write_text("accelerate launch --num_processes 1 -m trl.scripts.grpo --model_name_or_path Qwen/Qwen3-0.6B "
                      "--per_device_train_batch_size 4 --num_generations 4 --max_prompt_length 512 "
                      "--max_completion_length 256 --beta 0.04 --output_dir out\n")
    project, _ = build_project([str(script)], Config())
    (job,) = project.jobs
    est = estimate(job, A100)
    assert [r.role for r in est.roles] == ["policy", "ref"]
    arch = resolve_model(QWEN3).arch
    assert terms(est, "generation", "policy")["generate_kv_cache"] == 4 * 768 * arch.kv_bytes_per_token(2)
    # bf16 logits: selective_log_softmax's row-wise path holds three 2-byte copies at the backward's peak
    assert terms(est, "training", "policy")["logits"] == 4 * 256 * arch.vocab_size * 2 * K.trl_logps_copies[0]


def test_generation_batch_follows_accumulation_and_the_release():
    arch = resolve_model(QWEN3).arch
    one = 4 * 3072 * arch.kv_bytes_per_token(4)

    def kv(versions=None, **settings):
        extra = {"train.strategy": "ddp", "seq.prompt_max_len": 2048, "seq.generate_max_len": 1024, "trl.beta": 0.0,
                 **settings}
        job = _job_from_options(QWEN3, 1, None, None, None, None, "fp32", None, 4, None, False, True, "grpo", extra)
        return terms(estimate(job, A100, versions=versions), "generation", "policy")["generate_kv_cache"]

    assert kv() == one
    # TRL 0.17+ generates the whole accumulated batch at once (trl PR #3283); 0.16 one micro batch
    assert kv(**{"batch.grad_accum": 8}) == 8 * one
    assert kv({"trl": "0.16.0"}, **{"batch.grad_accum": 8}) == one
    assert kv(**{"batch.grad_accum": 8, "trl.steps_per_generation": 2}) == 2 * one
    assert kv(**{"trl.generation_batch_size": 12}) == 3 * one


def test_the_release_a_repository_pins_reaches_the_estimate(tmp_path):
    # beta unset: TRL 0.17 (pinned in requirements.txt) loads a reference model, 0.19 does not; rlhf-lint's
    # configured version wins over the pin. Both the estimate command and the M rules read them.
    import json

    from lintutil import run_cli

    from rlhf_lint.frameworks.edge import target_versions

    (tmp_path / "run_grpo.sh").write_text(
        "accelerate launch --num_processes 1 -m trl.scripts.grpo --model_name_or_path Qwen/Qwen3-0.6B "
        "--per_device_train_batch_size 4 --num_generations 4 --output_dir out\n")
    (tmp_path / "requirements.txt").write_text("trl==0.17.0\n")

    def roles():
        done = run_cli("estimate", tmp_path, "--gpu", "A100-80GB", "--format", "json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return [r["role"] for r in json.loads(done.stdout)["roles"]]

    assert roles() == ["policy", "ref"]
    project, _ = build_project([str(tmp_path)], Config())
    assert target_versions(project, ("trl", "peft")) == {"trl": "0.17.0"}  # what the M rules' estimates read
    (tmp_path / "rlhf-lint.toml").write_text('trl-version = "0.19.1"\n')
    assert roles() == ["policy"]


def test_trl_rloo_follows_grpo_from_0_22(tmp_path):
    # TRL 0.22 rewrote RLOOTrainer on GRPO's design (RLOOConfig(TrainingArguments), logits_to_keep, vllm_mode);
    # before, an OnPolicyConfig PPO-style trainer with its own reference policy
    (tmp_path / "run.sh").write_text("trl rloo --model_name_or_path Qwen/Qwen3-0.6B --per_device_train_batch_size 4 "
                                     "--max_prompt_length 2048 --max_completion_length 1024 --beta 0.05\n")
    project, _ = build_project([str(tmp_path / "run.sh")], Config(root=str(tmp_path)))
    (job,) = project.jobs
    new = estimate(job, A100, versions={"trl": "0.23.0"})
    assert [r.role for r in new.roles] == ["policy", "ref"]
    old = estimate(job, A100, versions={"trl": "0.21.0"})
    assert [r.role for r in old.roles][:2] == ["actor", "ref"]
    # the LM head of the new trainer runs on the completion only
    assert new.role("policy").term("logits") < old.role("actor").term("logits")
