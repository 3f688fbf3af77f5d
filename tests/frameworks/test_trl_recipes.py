"""TRL recipes as open-r1 commits them (issue 15): torch_dtype is the master dtype without DeepSpeed, a recipe with
GRPOConfig-only fields is a GRPO job, and vllm_mode colocate reserves vLLM's share of each training GPU."""
from __future__ import annotations

from lintutil import build_written
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import GIB, K, estimate

H100 = Hardware(gpu="H100", gpus_per_node=8)
# a synthetic open-r1-style GRPO recipe (the keys open-r1's recipes/*/grpo/config_demo.yaml set)
GRPO = ("model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct\ntorch_dtype: bfloat16\nbf16: true\nuse_vllm: true\n"
        "gradient_accumulation_steps: 4\ngradient_checkpointing: true\nlearning_rate: 2.0e-05\n"
        "max_prompt_length: 512\nmax_completion_length: 1024\nnum_generations: 16\n"
        "per_device_train_batch_size: 16\nreward_funcs:\n- accuracy\n- format\noutput_dir: out\n")
SFT = ("model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct\nbf16: true\nper_device_train_batch_size: 4\n"
       "max_length: 2048\ndataset_name: x\noutput_dir: out\n")


def _jobs(tmp_path, files: dict):
    return {j.path.rsplit("/", 1)[1]: j for j in build_written(tmp_path, files).jobs}


def _terms(est, phase, role):
    group = next(g for g in est.groups if any(m.role == role for m in g.roles))
    return {t.name: t.bytes for r, t in group.phases[phase] if r == role}


def test_torch_dtype_is_the_master_dtype_without_deepspeed(tmp_path):
    jobs = _jobs(tmp_path, {"bf16.yaml": SFT + "torch_dtype: bfloat16\n", "dtype.yaml": SFT + "dtype: float16\n",
                            "unset.yaml": SFT, "auto.yaml": SFT + "torch_dtype: auto\n",
                            "ds.yaml": SFT + "torch_dtype: bfloat16\ndeepspeed: ds.json\n",
                            "ds.json": '{"zero_optimization": {"stage": 2}}\n'})
    bf16 = jobs["bf16.yaml"]
    setting = bf16.settings.get("precision.master_dtype")
    assert setting.value == "bf16" and bf16.value("train.strategy") == "ddp"
    text = (tmp_path / "bf16.yaml").read_text()
    assert text[setting.span.start:setting.span.end] == "bfloat16"  # points at the value it came from
    assert jobs["dtype.yaml"].value("precision.master_dtype") == "fp16"  # TRL >= 0.22's name for it
    # unset: TRL (the newest release, nothing pinned) loads float32 itself from 0.27: a certain fp32 master
    unset = jobs["unset.yaml"].settings.get("precision.master_dtype")
    assert unset.value == "fp32" and jobs["unset.yaml"].value("precision.loaded_dtype_open") is None
    assert "loads the model in fp32" in jobs["unset.yaml"].settings.get("hf.torch_dtype").origin
    # auto: the checkpoint's dtype, not recorded: the fp32 master in the figures, 16 bits at the band's low end
    assert jobs["auto.yaml"].settings.get("precision.master_dtype") is None
    assert jobs["auto.yaml"].value("precision.loaded_dtype_open") == "bf16"
    assert any("torch_dtype auto" in a for a in jobs["auto.yaml"].assumptions)
    # DeepSpeed keeps its own fp32 master whatever the loaded dtype
    assert jobs["ds.yaml"].settings.get("precision.master_dtype") is None

    P = resolve_model("Qwen/Qwen2.5-1.5B-Instruct").param_count
    loaded = _terms(estimate(bf16, H100), "step", "policy")
    assert loaded["weights"] == 2 * P and loaded["gradients"] == 2 * P and loaded["optimizer_states"] == 4 * P
    master = _terms(estimate(jobs["unset.yaml"], H100), "step", "policy")
    assert master["weights"] == 4 * P and master["gradients"] == 4 * P and master["optimizer_states"] == 8 * P


def test_a_recipe_with_grpo_only_fields_is_a_grpo_job(tmp_path):
    jobs = _jobs(tmp_path, {"grpo.yaml": GRPO, "sft.yaml": SFT})
    job = jobs["grpo.yaml"]
    typed = job.settings.get("job.type")
    assert typed.value == "grpo" and job.framework == "trl"
    text = (tmp_path / "grpo.yaml").read_text()
    assert text[typed.span.start:typed.span.end] == "num_generations"  # the key that makes it GRPO
    assert jobs["sft.yaml"].value("job.type") is None  # no GRPO field: left untyped
    # use_vllm true: the training phase is still GRPO's (completion-only logits), only generation moves to vLLM
    arch = resolve_model("Qwen/Qwen2.5-1.5B-Instruct").arch
    est = estimate(job, H100)
    assert [r.role for r in est.roles] == ["policy"]  # beta unset, release unknown: no reference
    training = _terms(est, "training", "policy")
    assert training["logits"] == 16 * 1024 * arch.vocab_size * 2 * K.trl_logps_copies[0]
    assert "generate_kv_cache" not in training and "generation" not in est.groups[0].phases


def test_a_launch_script_name_still_wins(tmp_path):
    jobs = _jobs(tmp_path, {"run.sh": "accelerate launch rloo.py --config grpo.yaml\n", "grpo.yaml": GRPO})
    (job,) = jobs.values()
    assert job.value("job.type") == "rloo"


def test_colocated_vllm_reserves_on_the_training_gpus_and_server_does_not(tmp_path):
    jobs = _jobs(tmp_path, {"server.yaml": GRPO, "explicit.yaml": GRPO + "vllm_mode: server\n",
                            "colocate.yaml": GRPO + "vllm_mode: colocate\n",
                            "util.yaml": GRPO + "vllm_mode: colocate\nvllm_gpu_memory_utilization: 0.5\n"})
    server = estimate(jobs["server.yaml"], H100)
    assert [r.role for r in server.roles] == ["policy"]
    assert any("vllm_mode unset" in a for a in server.assumptions)
    assert [r.role for r in estimate(jobs["explicit.yaml"], H100).roles] == ["policy"]
    colo = estimate(jobs["colocate.yaml"], H100)
    (group,) = colo.groups  # one group: the engine lives on the policy's GPUs, in its process
    assert {m.role for m in group.roles} == {"policy", "vllm"} and group.shared_process
    vllm = colo.role("vllm")
    gpu = colo.gpu_memory
    reservation = {t.name: t.bytes for t in vllm.terms}["vllm_reservation"]
    # no vLLM pinned: current vLLM, whose budget leaves its CUDA context outside (tests/memory/test_vllm_profile.py)
    assert reservation == int(K.trl_colocate_gpu_memory_utilization * gpu)
    assert vllm.kv["max_num_seqs"] == 16 * 1 * 4  # per_device_train_batch_size x TP x gradient_accumulation_steps
    held = _terms(colo, "training", "vllm")
    assert held["vllm_reservation"] == reservation  # held through training: no sleep mode
    assert group.peak > server.groups[0].peak + reservation - 2 * GIB
    more = estimate(jobs["util.yaml"], H100).role("vllm")
    assert {t.name: t.bytes for t in more.terms}["vllm_reservation"] == int(0.5 * gpu)


def test_vllm_mode_default_follows_the_trl_release(tmp_path):
    jobs = _jobs(tmp_path, {"g.yaml": GRPO + "beta: 0.0\n", "c.yaml": GRPO + "vllm_mode: colocate\n",
                            "s.yaml": GRPO + "vllm_enable_sleep_mode: true\nvllm_mode: colocate\n"})
    roles = lambda job, trl: [r.role for r in estimate(job, H100, versions={"trl": trl}).roles]
    assert roles(jobs["g.yaml"], "0.18.0") == ["policy"]  # server by default up to 0.29
    assert roles(jobs["g.yaml"], "1.0.0") == ["policy", "vllm"]  # colocate by default since 1.0
    assert "vllm" not in roles(jobs["c.yaml"], "0.17.0")  # before 0.18: vLLM on a GPU of its own
    # a sleeping colocated engine is released outside generation
    slept = estimate(jobs["s.yaml"], H100)
    assert "vllm_reservation" not in _terms(slept, "training", "vllm")
    assert "vllm_reservation" in _terms(slept, "generation", "vllm")


def test_liger_kernel_does_not_fuse_grpo_logits_but_liger_loss_does(tmp_path):
    jobs = _jobs(tmp_path, {"kernel.yaml": GRPO + "use_liger_kernel: true\n",
                            "loss.yaml": GRPO + "use_liger_kernel: true\nuse_liger_loss: true\n",
                            "sft.yaml": SFT + "use_liger_kernel: true\n",
                            "old.yaml": SFT + "use_liger: true\n"})
    assert jobs["kernel.yaml"].value("train.fused_loss") is False  # no labels: Liger's forward builds the logits
    assert jobs["loss.yaml"].value("train.fused_loss") is True
    assert jobs["sft.yaml"].value("train.fused_loss") is True  # a cross entropy with labels: fused
    assert jobs["old.yaml"].value("train.fused_loss") is True  # SFTConfig's name for it in TRL 0.10 to 0.17


def test_an_untyped_recipe_takes_the_longest_length_its_release_defaults_to():
    # TRL 0.19's config classes disagree on max_length (SFT and DPO 1024, the online trainers 512, IterativeSFT
    # None): a recipe naming no trainer is bounded by the longest, not by the estimate's 2048-token fallback
    from rlhf_lint.frameworks.trl_defaults import defaults_for

    defaults, what, label, exact = defaults_for("trl", None, "0.19.1")
    typed, *_ = defaults_for("trl", "sft", "0.19.1")
    assert defaults["max_length"] == 1024 == typed["max_length"] and "longest" in what
