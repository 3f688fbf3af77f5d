import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from lintutil import ROOT, fix_copy, run, triples
from rlhf_lint.engine.config import Config
from rlhf_lint.model import UNKNOWN
from rlhf_lint.engine.runner import build_project
from rlhf_lint.frameworks.verl import parse_value, schema_keys

FIXTURES = Path(ROOT) / "tests" / "fixtures" / "verl"
MEMORY = Path(ROOT) / "tests" / "fixtures" / "memory"


def config(version="0.4.1", **more):
    cfg = Config()
    if version:
        cfg.versions["verl"] = version
    cfg.versions.update(more)
    return cfg


def launch(name, cfg):
    """Lint a launch fixture end to end (shell reader -> verl interpreter -> V rules)."""
    result = run([FIXTURES / name], ["V"], cfg)
    return result


def project_job(name, cfg):
    project, _ = build_project([str(FIXTURES / name)], cfg)
    (job,) = [j for j in project.jobs if j.framework == "verl"]
    return (FIXTURES / name).read_text(), job


def test_bad_launch_reports_what_verl_and_hydra_refuse():
    result = launch("V001_launch_bad.sh", config())
    assert triples(result) == [
        ("V021", 4, 1),    # no rollout log-prob micro batch (dynamic batch size off)
        ("V003", 6, 27),   # 100 x 1 prompts over 8 GPUs
        ("V004", 10, 49),  # mini batch 4 x 1 / 8 GPUs = 0
        ("V005", 11, 50),  # both micro batch forms
        ("V001", 14, 5),   # gpu_memory_utilisation: unknown key, close to gpu_memory_utilization
        ("V002", 15, 5),   # +rollout.n appends a key that exists
        ("V008", 16, 54),  # chunked prefill budget 8192 < 1024 + 8192
    ]
    messages = {d.code: d.message for d in result.diagnostics}
    assert "did you mean `actor_rollout_ref.rollout.gpu_memory_utilization`" in messages["V001"]
    assert "100 x 1 = 100 is not divisible by 8 GPUs" in messages["V003"]


def test_start_up_checks_are_warnings_without_fixes_past_the_newest_table():
    """A release newer than every table may validate differently: the same launch gets warnings that say so."""
    from rlhf_lint.frameworks.edge import newest_known

    major, minor, *_ = newest_known("verl").split(".")
    result = launch("V001_launch_bad.sh", config(f"{major}.{int(minor) + 1}.0"))
    checks = [d for d in result.diagnostics if d.code in ("V003", "V004", "V005", "V021")]
    assert sorted({d.code for d in checks}) == ["V003", "V004", "V005", "V021"]  # V008: not from 0.7.0 on (below)
    assert all(d.severity.label == "warning" and d.fix is None for d in checks)
    assert all("is newer than the newest release rlhf-lint knows" in d.message for d in checks)
    at_edge = launch("V001_launch_bad.sh", config(newest_known("verl")))
    assert {d.severity.label for d in at_edge.diagnostics if d.code in ("V003", "V004", "V021")} == {"error"}


def test_bad_launch_fixes_touch_only_their_tokens_and_the_script_still_parses(tmp_path):
    text = (FIXTURES / "V001_launch_bad.sh").read_text()
    fixed, result = fix_copy(FIXTURES / "V001_launch_bad.sh", tmp_path, ["V"], config())
    assert fixed == (text.replace("gpu_memory_utilisation", "gpu_memory_utilization")
                     .replace("+actor_rollout_ref.rollout.n=1", "actor_rollout_ref.rollout.n=1")
                     .replace("max_num_batched_tokens=8192", "max_num_batched_tokens=9216"))
    assert [d.code for d in result.diagnostics] == ["V021", "V003", "V004", "V005"]
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(tmp_path / "V001_launch_bad.sh")]).returncode == 0


def test_value_from_a_variable_is_reported_and_fixed_at_its_assignment(tmp_path):
    # `key=$VAR`, `"key=${VAR:-8000}"`, `key="$VAR"`: the value is wholly one expansion, so the finding and the fix
    # go where it was written; `key=${PROMPT}0` has no single place and is reported at the word, without a fix
    # the launches without a rollout log-prob micro batch also get V021
    assert triples(launch("V008_var_launch_bad.sh", config())) == [
        ("V008", 3, 8), ("V008", 4, 9), ("V021", 6, 1), ("V021", 10, 1), ("V008", 13, 66), ("V021", 14, 1),
        ("V021", 19, 1), ("V008", 22, 5)]
    fixed, result = fix_copy(FIXTURES / "V008_var_launch_bad.sh", tmp_path, ["V"], config())
    assert fixed == (FIXTURES / "V008_var_launch_bad.fixed.sh").read_text()
    remaining = [t for t in triples(result) if t[0] != "V021"]  # V021 has no fix
    assert remaining == [("V008", 22, 5)] and [d for d in result.diagnostics if d.code == "V008"][0].fix is None
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(tmp_path / "V008_var_launch_bad.sh")]).returncode == 0


def test_values_from_variables_that_verl_accepts_are_clean_and_mapped():
    assert triples(launch("V008_var_launch_good.sh", config())) == []
    text, job = project_job("V008_var_launch_good.sh", config())
    util = job.settings.get("vllm.gpu_memory_utilization")
    assert util.value == 0.5 and text[util.span.start:util.span.end] == "0.5"


def test_good_launch_is_clean_and_maps_to_settings():
    assert triples(launch("V001_launch_good.sh", config())) == []
    text, job = project_job("V001_launch_good.sh", config())
    util = job.settings.get("vllm.gpu_memory_utilization")
    assert util.value == 0.6 and text[util.span.start:util.span.end] == "0.6"
    assert job.value("vllm.tensor_parallel_size") == 2
    assert job.value("topology.world_size") == 8
    assert job.value("batch.n_samples_per_prompt") == 5
    assert job.value("offload.param") == "none"  # release default, no span
    assert job.settings.get("offload.param").span is None


def test_unknown_version_uses_every_release_and_softens_the_version_bound_check():
    codes = {d.code: d for d in launch("V001_launch_bad.sh", config(version=None)).diagnostics}
    assert "V002" not in codes  # append-vs-existing depends on the release: only with a known version
    assert codes["V008"].severity.label == "warning"
    assert "any verl release" in codes["V001"].message


def test_newer_release_has_no_chunked_prefill_check():
    assert "V008" not in [d.code for d in launch("V001_launch_bad.sh", config(version="0.7.0")).diagnostics]


def test_vllm_allowlist_of_old_releases():
    found = launch("V001_launch_good.sh", config(version="0.2.0", vllm="0.6.4")).diagnostics
    assert [(d.code, d.message) for d in found] == [
        ("V007", "verl 0.2.0 refuses vllm 0.6.4 at rollout start (Currently supported versions are 0.3.1, 0.4.2, "
                 "0.5.4, 0.6.3 and 0.7.0+; verl set by verl-version, vllm set by vllm-version)")]
    for vllm in ("0.6.3", "0.7.3"):
        assert launch("V001_launch_good.sh", config(version="0.2.0", vllm=vllm)).diagnostics == []
    assert launch("V001_launch_good.sh", config(version="0.4.1", vllm="0.6.3.post1")).diagnostics == []


def test_repository_yaml_config():
    result = run([FIXTURES / "V006_trainer_bad.yaml", FIXTURES / "V006_trainer_good.yaml"], ["V"], config())
    assert triples(result) == [("V006", 9, 25), ("V004", 13, 35), ("V008", 18, 29)]
    assert all(d.path.endswith("V006_trainer_bad.yaml") for d in result.diagnostics)


def test_yaml_fixes_keep_comments_and_still_load(tmp_path):
    original = (FIXTURES / "V006_trainer_bad.yaml").read_text()
    fixed, result = fix_copy(FIXTURES / "V006_trainer_bad.yaml", tmp_path, ["V"], config())
    assert fixed == original.replace("use_remove_padding: false", "use_remove_padding: true").replace(
        "max_num_batched_tokens: 8192", "max_num_batched_tokens: 32768")
    assert yaml.safe_load(fixed)["actor_rollout_ref"]["model"]["use_remove_padding"] is True
    assert [d.code for d in result.diagnostics] == ["V004"]


def test_schema_release_choice():
    assert schema_keys("0.4.1")[0] == "0.4.1"
    assert schema_keys("0.4.5")[0] == "0.4.1"
    assert schema_keys("0.9.0")[0] == "0.9.0"
    assert schema_keys("0.8.5")[0] == "0.8.0"
    assert schema_keys("0.99.0")[0] == "0.9.1"  # past the newest release read: the newest (no "main" snapshot left)
    label, keys, exact = schema_keys(None)
    assert not exact and "actor_rollout_ref.rollout.gpu_memory_utilization" in keys


@pytest.mark.parametrize("text,value", [
    ("0.6", 0.6), ("1e-6", 1e-6), ("True", True), ("false", False), ("null", None), ("'a b'", "a b"),
    ("[1,2]", [1, 2]), ("${oc.env:X}", UNKNOWN), ("Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B"), ("16_384", 16384),
])
def test_override_values(text, value):
    assert parse_value(text) == value


def test_hybrid_engine_places_every_role_in_one_process_per_gpu():
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import K, estimate

    _, job = project_job("../memory/M005_verl_bad.sh", config())
    assert job.value("topology.shared_process") == ("actor", "vllm", "ref", "critic", "reward")
    assert job.value("vllm.num_engines") == 4  # 8 GPUs / rollout tensor parallel 2 (release default)
    assert job.value("vllm.enable_sleep") is True  # free_cache_engine, release default
    est = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8))
    (group,) = est.groups
    # GAE without a KL term: verl builds no reference model (main_ppo adds it only for use_kl_loss/use_kl_in_reward)
    assert group.names == ["actor", "critic", "vllm"] and group.shared_process
    generation = group.phases["generation"]
    assert [t.name for _, t in generation].count("runtime") == 1  # one CUDA context for the whole worker
    reservation = [t.bytes for role, t in generation if t.name == "vllm_reservation"]
    # no vLLM pinned: a current vLLM, whose budget leaves the worker's CUDA context (counted once) outside
    assert reservation == [int(0.9 * est.gpu_memory)]
    assert all(role != "vllm" for role, _ in group.phases["training"])  # the rollout sleeps while training
    (node,) = est.nodes
    assert [t.name for t in node.persistent if t.name.startswith("process:")] == ["process:actor+critic+vllm"]


def test_rollout_that_keeps_its_cache_stays_in_every_phase(tmp_path):
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    script = tmp_path / "keep.sh"
    script.write_text((MEMORY / "M005_verl_good.sh").read_text().replace(
        "trainer.nnodes=1", "trainer.nnodes=1 actor_rollout_ref.rollout.free_cache_engine=False"))
    project, _ = build_project([str(script)], config())
    (job,) = project.jobs
    est = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8))
    assert job.value("vllm.enable_sleep") is False
    assert any(role == "vllm" and t.name == "vllm_reservation" for role, t in est.groups[0].phases["training"])


def test_rollout_memory_share_against_what_fsdp_keeps_resident(tmp_path):
    result = run([MEMORY / "M005_verl_bad.sh"], ["M"], config())
    assert triples(result) == [("M001", 5, 1), ("M005", 11, 54)]
    assert "while actor, critic hold" in result.diagnostics[1].message
    assert triples(run([MEMORY / "M005_verl_good.sh"], ["M"], config())) == []
    fixed, after = fix_copy(MEMORY / "M005_verl_bad.sh", tmp_path, ["M"], config())
    assert fixed == (MEMORY / "M005_verl_bad.fixed.sh").read_text()
    assert triples(after) == []
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(tmp_path / "M005_verl_bad.sh")]).returncode == 0


def _verl_job(tmp_path, overrides: str, release: str):
    (tmp_path / "requirements.txt").write_text(f"verl=={release}\n")
    (tmp_path / "run.sh").write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-3B "
                                     "trainer.nnodes=1 trainer.n_gpus_per_node=2 " + overrides + "\n")
    project, _ = build_project([str(tmp_path)], Config())
    (job,) = [j for j in project.jobs if j.framework == "verl"]
    return job


def test_job_wide_micro_batches_are_divided_over_the_gpus_and_verl_0_1_pads(tmp_path):
    # verl 0.1 (TinyZero's vendored copy): job-wide micro batch keys, no padding-free path, no checkpointing default
    job = _verl_job(tmp_path, "actor_rollout_ref.actor.ppo_micro_batch_size=8 critic.ppo_micro_batch_size=6 "
                              "actor_rollout_ref.ref.log_prob_micro_batch_size=4", "0.1")
    assert job.value("framework.version") == "0.1"
    micro = job.settings.get("batch.micro_train")
    assert micro.value == 4 and (tmp_path / "run.sh").read_text()[micro.span.start:micro.span.end] == "8"
    assert job.value("batch.critic.micro_train") == 3 and job.value("batch.ref.micro_forward") == 2
    assert job.value("train.remove_padding") is False and job.value("train.gradient_checkpointing") is False
    assert "ref" in job.roles  # 0.1 has no use_kl_in_reward switch: the reference is always built
    # a later release: the per-GPU key the launch writes is what counts, and padding removal is its own key
    later = _verl_job(tmp_path, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3", "0.7.0")
    assert later.value("batch.micro_train") == 3
    assert later.settings.get("train.remove_padding").origin.startswith("verl 0.7.0 default")


def test_verl_0_1_keeps_the_reference_on_the_gpu(tmp_path):
    # CPUOffload of the reference and reward models came with verl 0.2 (PR #121); 0.1 keeps their bf16 shards on the GPU
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.catalog import resolve_model
    from rlhf_lint.memory.estimate import estimate

    P = resolve_model("Qwen/Qwen2.5-3B").param_count
    for release, on_gpu in (("0.1", True), ("0.7.0", False)):
        job = _verl_job(tmp_path, "algorithm.adv_estimator=grpo actor_rollout_ref.actor.use_kl_loss=True", release)
        assert job.value("verl.inference_cpu_offload") is (not on_gpu)
        est = estimate(job, Hardware(gpu="H100", gpus_per_node=2))
        assert (est.role("ref").term("weights") == 2 * P // 2) is on_gpu
        host = {t.name for t in est.nodes[0].persistent}
        assert ("params:ref" in host) is (not on_gpu)


def test_model_engine_megatron_composes_the_megatron_config(tmp_path):
    # verl 0.8+: `model_engine=megatron` is ppo_megatron_trainer.yaml's own override: a Megatron actor, never FSDP
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    job = _verl_job(tmp_path, "model_engine=megatron actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                    "0.9.1")
    assert job.verl.config_name == "ppo_megatron_trainer" and job.value("train.strategy") == "megatron"
    assert job.value("zero.stage") is None  # the FSDP mapping is not applied
    assert job.value("megatron.tensor_parallel") == 2 and job.value("megatron.critic.tensor_parallel") == 1
    # the default GAE critic keeps its own layout (critic.megatron: TP 1) beside the actor's TP 2
    est = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=2))
    actor, critic = est.role("actor"), est.role("critic")
    assert "TP 2" in actor.terms[0].formula and "TP 1" in critic.terms[0].formula
    dp = _verl_job(tmp_path, "model_engine=dp", "0.9.1")
    assert dp.verl.config_name == "ppo_trainer" and dp.value("train.strategy") == "fsdp"


@pytest.mark.parametrize("overrides", ["model_engine=veomni", "actor@actor_rollout_ref.actor=my_actor"])
def test_an_actor_config_from_an_unread_file_leaves_the_strategy_unknown(tmp_path, overrides):
    job = _verl_job(tmp_path, overrides, "0.9.1")
    assert job.value("train.strategy") is UNKNOWN
    if "@" in overrides:  # only the swapped package is unknown: the trainer's own keys keep their values
        assert job.value("topology.gpus_per_node") == 2 and not job.verl.partial


def test_critic_offload_keys_follow_the_release(tmp_path):
    # verl 0.8.0 moved the critic's FSDP engine config from critic.model.fsdp_config to critic.fsdp
    new = _verl_job(tmp_path, "algorithm.adv_estimator=gae critic.fsdp.param_offload=True "
                              "critic.fsdp.optimizer_offload=True", "0.9.1")
    assert new.value("offload.critic.param") == "cpu" and new.value("offload.critic.optimizer") == "cpu"
    old = _verl_job(tmp_path, "algorithm.adv_estimator=gae critic.model.fsdp_config.param_offload=True", "0.7.1")
    assert old.value("offload.critic.param") == "cpu"
    # no version known: both spellings exist in the union of releases; the one the launch writes wins
    (tmp_path / "requirements.txt").unlink()
    project, _ = build_project([str(tmp_path / "run.sh")], Config())
    (job,) = project.jobs
    assert job.value("offload.critic.param") == "cpu"


def test_settings_map_reads_keys_the_newest_release_has():
    # a row whose key verl renamed must have a successor row, or the launch's value is lost on new releases
    from rlhf_lint.schemas import load

    releases = load("verl/ppo_trainer_defaults.json")["releases"]
    newest = max((r for r in releases if r != "main"), key=lambda r: tuple(int(p) for p in r.split(".")[:3]))
    megatron = load("verl/ppo_trainer_defaults.json")["megatron"]
    newest_megatron = max(megatron, key=lambda r: tuple(int(p) for p in r.split(".")[:3]))
    rows = load("verl/settings_map.json")["rows"]
    # the Megatron trainer's rows name keys of its own config (ppo_megatron_trainer)
    keys = set(releases[newest]["keys"]) | set(megatron[newest_megatron]["keys"])
    for row in rows:
        if row["key"] not in keys:
            assert any(r["setting"] == row["setting"] and r["key"] in keys for r in rows), row


@pytest.mark.parametrize("tail, partial", [
    ("", False),
    ('"$@"', True),  # forwarded arguments
    ("--config-name ppo_trainer $EXTRA", True),  # after a Hydra flag's value: was dropped as a flag value
    ("key.from_cmd=$(date +%s)", False),  # the key is written; only its value is unknown
])
def test_an_unknown_word_may_override_any_key(tmp_path, tail, partial):
    job = _verl_job(tmp_path, "actor_rollout_ref.actor.ppo_mini_batch_size=16 " + tail, "0.7.0")
    assert job.verl.open_words is partial and not job.verl.partial  # values unknown, keys still checked (V001)
    assert job.verl.get("actor_rollout_ref.actor.ppo_mini_batch_size") == 16  # written: still known
    # a release default the unknown word may have overridden is unknown to the rules
    assert (job.verl.get("data.train_batch_size") is UNKNOWN) is partial
    # the estimate keeps the default, the likeliest value (filled in, an unknown would be taken at its worst)
    assert job.value("train.remove_padding") is not UNKNOWN and job.value("train.strategy") == "fsdp"


def test_sglang_rollout_is_counted_as_an_upper_bound_with_its_own_process():
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import K, estimate

    _, job = project_job("sglang_rollout.sh", config())
    assert job.value("rollout.engine") == "sglang" and job.value("vllm.enable_sleep") is True
    est = estimate(job, Hardware(gpu="H100-80GB", gpus_per_node=8))
    (group,) = est.groups
    terms = {t.name: t for role, t in group.phases["generation"] if role == "vllm"}
    # SGLang's static pool is mem_fraction_static of the GPU less what the GPU holds when it starts: the whole
    # fraction is counted, and left out of the band's low end
    assert terms["vllm_reservation"].bytes == int(0.9 * est.gpu_memory) and terms["vllm_reservation"].unsure
    assert terms["engine_process"].bytes == K.cuda_context  # the scheduler's own process on the GPU
    asleep = {t.name for role, t in group.phases["training"] if role == "vllm"}
    assert asleep == {"engine_process"}  # released while training, the process stays
    assert not group.certain_overflow  # no error rests on the upper bound
    cfg = config()
    cfg.hardware = Hardware(gpu="H100-80GB", gpus_per_node=8)
    result = run([FIXTURES / "sglang_rollout.sh"], ["M005"], cfg)
    (m005,) = result.diagnostics
    assert m005.message.startswith("SGLang reserves 0.9 x 79.2 GiB") and m005.severity.label == "warning"


def test_an_unreadable_rollout_engine_keeps_the_rollout_as_vllm(tmp_path):
    # verl's examples pick the engine from the command line (ENGINE=${1:-vllm}): the rollout runs all the same, so its
    # reservation is counted, not dropped (a field report's VL run was called "fits" without it)
    from lintutil import build_written

    project = build_written(tmp_path, {"run.sh": (
        "ENGINE=$1\npython3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct "
        "actor_rollout_ref.rollout.name=$ENGINE trainer.n_gpus_per_node=8 trainer.nnodes=1\n")})
    job = next(j for j in project.jobs if j.framework == "verl")
    assert job.value("vllm.num_engines") is not None
    assert any("rollout.name cannot be read" in a for a in job.assumptions)


@pytest.mark.parametrize("flags, config_name, strategy", [
    ("--config-path=config --config-name='ppo_megatron_trainer.yaml'", "ppo_megatron_trainer", "megatron"),
    ("--config-path=./config --config-name=ppo_trainer", "ppo_trainer", "fsdp"),
])
def test_config_path_config_is_verls_own_folder(tmp_path, flags, config_name, strategy):
    # Hydra reads a relative --config-path from main_ppo.py's folder: `config` is verl/trainer/config, whose files
    # are the release's own, not a file of the repository that is missing
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    job = _verl_job(tmp_path, flags, "0.7.0")
    assert job.verl.config_name == config_name and not job.verl.partial
    assert job.value("train.strategy") == strategy
    if strategy == "megatron":  # sized as Megatron, never with DeepSpeed's defaults
        est = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=2))
        said = " ".join(est.assumptions)
        assert est.groups and "no ZeRO stage given" not in said and "DeepSpeed default" not in said


def test_another_config_path_is_the_repositorys_own(tmp_path):
    job = _verl_job(tmp_path, "--config-path=my_configs --config-name=exp", "0.7.0")
    assert job.verl.partial  # my_configs/exp.yaml is not among the checked files


def _the_verl_job(folder):
    project, _ = build_project([str(folder)], Config())
    (job,) = [j for j in project.jobs if j.framework == "verl"]
    return job


def test_launch_through_an_interpreter_array_chosen_in_a_branch(tmp_path):
    """verl's examples since the uv integration (verl-project/verl#7127) launch as `"${LAUNCH[@]}" -m
    verl.trainer.main_ppo` with LAUNCH=(python3) or, under an `if`, LAUNCH=(uv run ... python3): the launch was not
    recognised at all."""
    (tmp_path / "run.sh").write_text(
        'MODEL=(actor_rollout_ref.model.path=Qwen/Qwen2.5-3B)\n'
        'LAUNCH=(python3)\n'
        'if [ "${VERL_USE_UV:-1}" != 0 ]; then\n'
        '    LAUNCH=(uv run --frozen --all-packages --extra vllm --extra fsdp python3)\n'
        'fi\n'
        '"${LAUNCH[@]}" -m verl.trainer.main_ppo "${MODEL[@]}" trainer.nnodes=1 trainer.n_gpus_per_node=2\n')
    job = _the_verl_job(tmp_path)
    assert job.value("model.actor.path") == "Qwen/Qwen2.5-3B"
    assert (job.value("topology.nodes"), job.value("topology.gpus_per_node")) == (1, 2)


def test_a_model_path_under_an_unread_folder_is_named_by_its_end(tmp_path):
    """verl's examples write MODEL_PATH=${MODEL_PATH:-${HOME}/models/${MODEL_ID}}: $HOME cannot be read, the folder
    name can; the estimate takes it, says so, and keeps verdicts resting on it at warnings."""
    from rlhf_lint.memory.estimate import estimate
    from rlhf_lint.engine.config import Hardware
    from lintutil import run_lint

    (tmp_path / "run.sh").write_text(
        'MODEL_ID=Qwen2.5-7B-Instruct\n'
        'MODEL_PATH=${MODEL_PATH:-${HOME}/models/${MODEL_ID}}\n'
        'python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.model.path="$MODEL_PATH" '
        'trainer.nnodes=1 trainer.n_gpus_per_node=1 actor_rollout_ref.rollout.tensor_model_parallel_size=1\n')
    job = _the_verl_job(tmp_path)
    setting = job.settings.get("model.actor.path")
    assert setting.value is UNKNOWN and setting.tail == "/models/Qwen2.5-7B-Instruct"
    est = estimate(job, Hardware(gpu="RTX-3090"))
    assert est.role("actor").model == "Qwen/Qwen2.5-7B"
    assert any("'Qwen2.5-7B-Instruct', the end of '.../models/Qwen2.5-7B-Instruct'" in a for a in est.assumptions)
    cfg = Config()
    cfg.hardware = Hardware(gpu="RTX-3090", gpus_per_node=1)
    found = [d for d in run_lint([tmp_path], cfg, select=["M001"]).diagnostics]
    assert found and all(d.severity.name == "WARNING" for d in found)
    assert "read from the end of a path the linter cannot read" in found[0].message
