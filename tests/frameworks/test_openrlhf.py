"""Release detection, argparse emulation and the Job an OpenRLHF command becomes."""
from __future__ import annotations

from rlhf_lint.engine.config import Config
from rlhf_lint.model import UNKNOWN
from rlhf_lint.frameworks.openrlhf import analyze, interpret, knowledge
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.readers.source import Source

from openrlhf_harness import codes


def _project(script: str, requirements: str | None = None, versions=None):
    sources = [Source.from_text("train.sh", script, kind="shell")]
    if requirements is not None:
        sources.append(Source.from_text("requirements.txt", requirements, kind="requirements"))
    for s in sources:
        parse_source(s)
    project = Project(sources, Config(versions=versions or {}))
    return project, sources[0]


def _inv(script, requirements=None, versions=None):
    from rlhf_lint.frameworks.launchers import commands_of

    project, source = _project(script, requirements, versions)
    (command,) = [c for c in commands_of(source, project) if c.entry is not None]
    return analyze(command, source, project), command, source, project


FLAT = "python3 -m openrlhf.cli.train_ppo_ray --pretrain m --bf16 --flash_attn --vllm_num_engines 2\n"
DOTTED = "python3 -m openrlhf.cli.train_ppo_ray --actor.model_name_or_path m --ds.zero_stage 3\n"


def test_release_inferred_from_flags():
    inv, *_ = _inv(FLAT)
    assert inv.version == "v0.8.9.post1"  # the last release with --flash_attn (and --bf16)
    assert inv.version_source == "inferred" and "accepting all 4 flags" in inv.version_reason
    inv, *_ = _inv(DOTTED)
    assert inv.version == "v0.11.2" and inv.version_source == "inferred"  # the newest release in the tables


def test_inference_leaves_out_releases_requiring_a_newer_package_than_the_repository_pins():
    # OpenRLHF #1013's folder pins vllm 0.8.3: releases whose own pins ask for a newer vLLM (0.8.x from 0.8.0 on:
    # vllm 0.10.0) are unlikely; the newest of the others is taken, and the reason says why
    inv, *_ = _inv(FLAT, requirements="vllm==0.8.3\n")
    assert inv.version_source == "inferred" and "not newer than the pinned vllm 0.8.3" in inv.version_reason
    from packaging.version import Version

    from rlhf_lint.frameworks.versions import requires_table

    assert Version("0.7") <= Version(inv.version[1:]) < Version("0.8")
    (row,) = [r for r in requires_table()["openrlhf"] if r.versions.contains(inv.version[1:]) and r.extra == "vllm"]
    assert Version(row.requires.partition("==")[2]) <= Version("0.8.3")
    # a pin no release asks beyond changes nothing
    inv, *_ = _inv(FLAT, requirements="vllm==0.99.0\n")
    assert inv.version == "v0.8.9.post1" and "pinned" not in inv.version_reason


def test_release_from_pin_beats_inference_and_config_beats_pin():
    inv, *_ = _inv(FLAT, requirements="torch\nopenrlhf[vllm]==0.9.5  # pinned\n")
    assert (inv.version, inv.version_reason) == ("v0.9.5", "pinned in requirements.txt:2")
    inv, *_ = _inv(FLAT, requirements="openrlhf==0.9.5\n", versions={"openrlhf": "0.5.0"})
    assert inv.version == "v0.5.0" and inv.version_source == "config"


def test_unknown_version_maps_to_nearest_older_release():
    k = knowledge()
    index, note = k.release_of("0.9.5.post7")
    assert k.tag(index) == "v0.9.5" and "nearest older release" in note
    assert k.tag(k.release_of("v0.10.2")[0]) == "v0.10.2"


def test_pinned_script_reports_flags_of_other_era():
    project, source = _project(FLAT, requirements="openrlhf==0.10.2\n")
    assert "O001" not in {c for c, *_ in codes("train.sh", FLAT)}  # unpinned: a release accepting all is inferred
    from rlhf_lint.engine.project import Context
    from rlhf_lint.engine.registry import REGISTRY

    found = [f for f in REGISTRY.get("O001").run(Context(project, source=source))]
    assert [source.text[f.span.start:f.span.end] for f in found] == ["--pretrain", "--bf16", "--flash_attn",
                                                                       "--vllm_num_engines"]


def test_canonical_names_unify_eras():
    k = knowledge()
    assert k.canonical("train_ppo_ray", "--zero_stage") == ("ds.zero_stage",)
    assert k.canonical("train_ppo_ray", "--ref_reward_offload") == ("ref.offload", "reward.offload")
    assert k.canonical("train_ppo_ray", "--generate_max_len") == ("rollout.max_new_tokens",)
    assert k.canonical("train_ppo_ray", "--prompt_max_len") == ("prompt_max_len",)  # not the same as --max_len
    assert k.canonical("train_sft", "--pretrain") == ("model.model_name_or_path",)


def test_negative_numbers_and_two_value_flags():
    script = ("python3 -m openrlhf.cli.train_ppo_ray --actor.model_name_or_path m --reward.clip_range -5 5 "
              "--reward.stop_properly_penalty_coef -0.5\n")
    inv, *_ = _inv(script, versions={"openrlhf": "0.11.0"})
    assert inv.get("reward.clip_range") == [-5.0, 5.0]
    assert inv.get("reward.stop_properly_penalty_coef") == -0.5
    assert codes("t.sh", "# openrlhf-version: 0.11.0\n" + script) == [("O015", 2, 12)]


def test_unknown_value_is_not_judged():
    script = "# openrlhf-version: 0.11.0\npython3 -m openrlhf.cli.train_ppo_ray --ds.zero_stage $(cat z) " \
             "--reward.remote_url http://x\n"
    inv, *_ = _inv(script)
    assert inv.get("ds.zero_stage") is UNKNOWN
    assert codes("t.sh", script) == []


def test_job_settings_in_common_vocabulary():
    script = ("python3 -m openrlhf.cli.train_ppo_ray --pretrain meta/Llama --reward_pretrain rm --zero_stage 3 "
              "--bf16 --adam_offload --actor_num_gpus_per_node 4 --vllm_num_engines 2 --micro_train_batch_size 2 "
              "--packing_samples --flash_attn --gradient_checkpointing\n")
    inv, command, source, project = _inv(script, versions={"openrlhf": "0.8.5"})
    (job,) = interpret(command, source, project)
    s = job.settings
    assert job.framework == "openrlhf" and s.value("framework.version") == "0.8.5"
    assert s.value("job.type") == "ppo" and s.value("job.entry") == "openrlhf.cli.train_ppo_ray"
    assert s.value("model.actor.path") == "meta/Llama" and s.value("model.reward.path") == "rm"
    assert s.value("zero.stage") == 3 and s.value("precision.param_dtype") == "bf16"
    assert s.value("offload.optimizer") == "cpu" and s.value("train.packing") is True
    assert s.value("train.flash_attn") is True and s.value("train.gradient_checkpointing") is True
    assert s.value("topology.actor.gpus_per_node") == 4 and s.value("topology.actor.nodes") == 1
    assert s.get("topology.actor.nodes").origin == "OpenRLHF v0.8.5 default"
    zero = s.get("zero.stage")
    assert source.text[zero.span.start:zero.span.end] == "3"
    assert s.get("batch.micro_rollout").origin == "OpenRLHF v0.8.5 default"
    assert set(job.roles) == {"actor", "ref", "critic", "reward", "vllm"}
    assert s.value("model.ref.path") == "meta/Llama" and s.value("model.critic.path") == "rm"
    assert "first reward model" in s.get("model.critic.path").origin
    assert "OpenRLHF v0.8.5" in job.assumptions[0]


def test_defaults_of_old_releases_differ():
    script = "python3 -m openrlhf.cli.train_ppo_ray --pretrain m --reward_pretrain r\n"
    old, *_ = _inv(script, versions={"openrlhf": "0.2.0"})
    new, *_ = _inv(script, versions={"openrlhf": "0.2.6"})
    assert old.get("actor.num_gpus_per_node") == 1 and new.get("actor.num_gpus_per_node") == 8


def test_grpo_job_has_no_critic_and_bf16_default():
    script = ("python3 -m openrlhf.cli.train_ppo_ray --actor.model_name_or_path m --reward.remote_url http://x "
              "--algo.advantage.estimator group_norm --rollout.n_samples_per_prompt 8\n")
    inv, command, source, project = _inv(script)
    (job,) = interpret(command, source, project)
    assert job.settings.value("job.type") == "grpo"
    assert job.settings.value("precision.param_dtype") == "bf16"
    assert "critic" not in job.roles and "reward" not in job.roles
    assert job.settings.get("model.critic.path") is None and job.settings.value("model.ref.path") == "m"


def test_jobs_come_from_the_project():
    project, source = _project("deepspeed --num_gpus 8 --module openrlhf.cli.train_sft --model.model_name_or_path m "
                               "--train.batch_size 100 --train.micro_batch_size 8\n")
    (job,) = project.jobs
    assert job.framework == "openrlhf" and job.settings.value("topology.world_size") == 8
    assert job.settings.value("job.type") == "sft"


def test_old_example_script_is_openrlhf_only_when_the_release_says_so():
    script = "deepspeed ../train_sft.py --pretrain m --bf16 --flash_atn\n"
    assert codes("t.sh", script) == []  # a train_sft.py of one's own is not OpenRLHF's
    assert codes("t.sh", "# openrlhf-version: 0.2.0\n" + script) == [("O001", 2, 47)]


def test_every_fact_has_a_source():
    k = knowledge()
    spec = k.flags_at("train_ppo_ray", k.index("v0.11.0"))["--ds.zero_stage"]
    assert k.source_of("train_ppo_ray", spec) == \
        "https://github.com/OpenRLHF/OpenRLHF/blob/v0.10.2/openrlhf/cli/train_ppo_ray.py"
    old = k.flags_at("train_sft", k.index("v0.2.0"))["--pretrain"]
    assert k.source_of("train_sft", old).endswith("/blob/v0.0.1/examples/train_sft.py")
    for row in k.modules + k.all_renames():
        assert row["source"].startswith("https://github.com/")
    for ranges in k.checks.values():
        assert all(r["source"].startswith("https://github.com/") for r in ranges)


def test_pin_in_a_dockerfile_counts_too():
    sources = [Source.from_text("train.sh", FLAT, kind="shell"),
               Source.from_text("Dockerfile", "FROM x\nRUN pip install openrlhf==0.10.0\n", kind="dockerfile")]
    for s in sources:
        parse_source(s)
    project = Project(sources, Config())
    from rlhf_lint.frameworks.launchers import commands_of

    (command,) = commands_of(sources[0], project)
    inv = analyze(command, sources[0], project)
    assert (inv.version, inv.version_reason) == ("v0.10.0", "pinned in Dockerfile:2")


def test_pin_applies_to_its_folder_and_below_only():
    sources = [Source.from_text("repo/a/train.sh", FLAT, kind="shell"),
               Source.from_text("repo/b/requirements.txt", "openrlhf==0.11.0\n", kind="requirements"),
               Source.from_text("repo/requirements.txt", "openrlhf==0.9.5\n", kind="requirements")]
    for s in sources:
        parse_source(s)
    project = Project(sources, Config())
    from rlhf_lint.frameworks.launchers import commands_of

    (command,) = commands_of(sources[0], project)
    inv = analyze(command, sources[0], project)
    assert (inv.version, inv.version_reason) == ("v0.9.5", "pinned in requirements.txt:1")
    project = Project(sources[:2], Config())
    (command,) = commands_of(sources[0], project)
    assert analyze(command, sources[0], project).version_source == "inferred"


def test_deepspeed_launches_keep_every_model_in_one_process_ray_does_not():
    def job_of(script):
        inv, command, source, project = _inv(script, versions={"openrlhf": "0.4.0"})
        (job,) = interpret(command, source, project)
        return job
    ppo = job_of("deepspeed --module openrlhf.cli.train_ppo --pretrain m --reward_pretrain r\n")
    dpo = job_of("deepspeed --module openrlhf.cli.train_dpo --pretrain m\n")
    ray = job_of("python3 -m openrlhf.cli.train_ppo_ray --pretrain m --reward_pretrain r --colocate_actor_ref\n")
    assert ppo.settings.value("topology.shared_process") is True
    assert "train_ppo (no Ray)" in ppo.settings.get("topology.shared_process").origin
    assert dpo.settings.value("topology.shared_process") is True
    assert ray.settings.get("topology.shared_process") is None
    assert ray.settings.value("topology.colocate_actor_ref") is True


def test_split_knowledge_holds_every_rename_once():
    """schemas/openrlhf/build.py splits the facts by CLI; every rename of the build (363) is found again."""
    k = knowledge()
    rows = k.all_renames()
    assert len(rows) == 363
    assert sum(1 for r in rows if r["dotted"]) == 349
    assert set(k.cli_names) == set(k.specs) and sum(len(v) for v in k.specs.values()) == 1429  # 1422 + 7 of v0.11.1/v0.11.2


def test_release_inference_counts_match_flag_tables_of_every_release():
    """_count_accepted_at (by stretches of releases) agrees with _count_accepted (one release's flag table at a
    time) for every CLI, on exact names, abbreviations, ambiguous prefixes and unknown flags."""
    from rlhf_lint.frameworks.openrlhf import _count_accepted, _count_accepted_at

    k = knowledge()
    releases = list(range(len(k.tags)))
    for cli in k.cli_names:
        names = sorted({s.flag for s in k.specs_of(cli)})
        written = names[::7] + [n[: max(3, len(n) // 2)] for n in names[::11]] + ["--no_such_flag", "--", "-x"]
        fast = _count_accepted_at(k, cli, releases, written)
        assert fast == {i: _count_accepted(k, cli, i, written) for i in releases}, cli
        assert _count_accepted_at(k, cli, releases[40:60:3], written) == {i: fast[i] for i in releases[40:60:3]}


def test_inference_clis_train_nothing(tmp_path):
    """batch_inference and serve_rm load a model for forward passes only: an inference role, no optimizer states
    (a trained actor here gave false M001 errors on OpenRLHF v0.8.11's conditional-SFT example)."""
    from rlhf_lint.engine.config import config_from_mapping
    from rlhf_lint.engine.runner import build_project
    from rlhf_lint.memory.estimate import estimate

    (tmp_path / "run.sh").write_text(
        "deepspeed --module openrlhf.cli.batch_inference --eval_task rm --pretrain meta-llama/Llama-2-7b-hf "
        "--bf16 --zero_stage 0 --micro_batch_size 4\n"
        "deepspeed --module openrlhf.cli.batch_inference --eval_task generate --pretrain meta-llama/Llama-2-7b-hf "
        "--bf16 --zero_stage 0\n")
    config = config_from_mapping({"openrlhf-version": "0.8.11", "gpu": "A100-80GB"}, str(tmp_path / "rlhf-lint.toml"))
    project, _ = build_project([str(tmp_path / "run.sh")], config)
    rm, generate = project.jobs
    assert rm.roles == ("reward",) and generate.roles == ("ref",)
    for job in (rm, generate):
        [role] = estimate(job, config.hardware).roles
        assert not role.trainable and not any(t.name in ("optimizer_states", "gradients") for t in role.terms)


def test_engines_before_0_3_2_take_the_models_context_length():
    # create_vllm_engines passed no max_model_len before v0.3.2 (OpenRLHF #336): vLLM took max_position_embeddings
    script = ("python3 -m openrlhf.cli.train_ppo_ray --pretrain meta-llama/Meta-Llama-3-70B --vllm_num_engines 4 "
              "--vllm_tensor_parallel_size 2 --prompt_max_len 1024 --generate_max_len 1024\n")
    for pin, expected in (("openrlhf==0.3.0\n", "max_position_embeddings"), ("openrlhf==0.3.5\n", None)):
        inv, command, source, project = _inv(script, requirements=pin)
        (job,) = interpret(command, source, project)
        assert job.value("vllm.max_model_len") == expected
        assert job.value("vllm.max_model_len_assumed") is None  # pinned: a verdict may rest on it
