"""Sleep and offload phases of colocated jobs: vLLM asleep outside generation, DeepSpeed engines offloaded between
uses and trained in turn, and the weight sync where vLLM is woken while the policy sends it its weights."""
from pathlib import Path

from lintutil import ROOT, fix_copy, run, triples
from rlhf_lint.engine.config import Config
from rlhf_lint.memory.catalog import GIB
from rlhf_lint.memory.estimate import K, estimate
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.readers.source import Source

FIXTURES = Path(ROOT) / "tests" / "fixtures" / "memory"
ORZ_GOOD = FIXTURES / "orz" / "colocate_7b_good.py"
ORZ_BAD = FIXTURES / "orz" / "colocate_7b_bad.py"


def job_of(path: Path, kind: str, versions=None):
    source = Source.from_text(str(path), path.read_text(), kind=kind)
    parse_source(source)
    config = Config(versions=versions or {})
    jobs = [j for j in Project([source], config).jobs]
    assert len(jobs) == 1
    return jobs[0], config.hardware_for(jobs[0].hardware)


def terms(group, phase, role=None):
    return {(r, t.name) for r, t in group.phases[phase] if role is None or r == role}


# -- ORZ colocate_all ------------------------------------------------------------------------------------------------
def test_orz_colocate_all_settings_come_from_its_trainer():
    job, _ = job_of(ORZ_GOOD, "python")
    assert job.value("vllm.enable_sleep") is True and job.value("vllm.sleep_level") == 2
    assert job.value("vllm.sync_wake") == "all" and job.value("deepspeed.sync_loaded") is True
    assert job.value("deepspeed.enable_sleep") is True and job.value("offload.ref") is True
    assert job.value("deepspeed.sleep_keeps") == ("weights", "gradients")
    assert "trainer.py#L232-L235" in job.settings.get("vllm.enable_sleep").origin


def test_orz_without_colocate_all_keeps_every_model_awake(tmp_path):
    target = tmp_path / "separate.py"
    target.write_text(ORZ_GOOD.read_text().replace("colocate_all: bool = True", "colocate_all: bool = False"))
    job, _ = job_of(target, "python")
    for key in ("vllm.enable_sleep", "deepspeed.enable_sleep", "vllm.sync_wake", "offload.ref"):
        assert not job.value(key), key


def test_orz_phases_put_vllm_to_sleep_and_train_one_model_at_a_time():
    job, hardware = job_of(ORZ_GOOD, "python")
    est = estimate(job, hardware)
    group = est.group_of("vllm")
    assert set(group.phases) == {"generation", "experience", "training", "step", "weight-sync"}
    # vLLM keeps only its CUDA context outside generation and the weight sync
    for phase in ("experience", "training"):
        assert terms(group, phase, "vllm") == {("vllm", "runtime")}
    # generation: the policy and critic asleep (16-bit partitions + CUDA context), the reference offloaded
    actor = est.role("actor")
    asleep = [t for r, t in group.phases["generation"] if r == "actor"]
    assert {t.name for t in asleep} == {"weights", "gradients", "runtime"}
    assert sum(t.bytes for t in asleep) == actor.term("weights") + actor.term("gradients") + K.cuda_context
    # training: the actor's turn is the larger; the critic sleeps through it
    assert ("actor", "optimizer_states") in terms(group, "training")
    assert terms(group, "training", "critic") == {("critic", "weights"), ("critic", "gradients"), ("critic", "runtime")}
    # weight sync: vLLM's whole reservation beside the loaded policy and one gathered parameter
    sync = terms(group, "weight-sync")
    assert {("vllm", "vllm_reservation"), ("actor", "optimizer_states"), ("actor", "gathered_params")} <= sync
    assert group.peak_phase == "weight-sync"
    # host RAM: the parked optimizer states, and no vLLM weight copy (ORZ moves them to the meta device)
    host = {t.name for t in est.nodes[0].persistent}
    assert {"sleep_states:actor", "sleep_states:critic"} <= host and "vllm_sleep:weights" not in host


def test_orz_good_recipe_is_clean():
    assert triples(run([ORZ_GOOD], ["M"])) == []


def test_orz_weight_sync_overflow_is_the_reservation_to_lower():
    result = run([ORZ_BAD], ["M"])
    assert triples(result) == [("M001", 11, 7), ("M005", 36, 37)]
    m001, m005 = (d.message for d in result.diagnostics)
    # the nominal peak overflows by 2 GiB; the band's low end fits: tight, a warning (an error needs certainty)
    assert m001.startswith("tight: actor + ref + critic + vllm need 81.1 GiB per GPU (band 77.8 GiB to 84.3 GiB) in "
                           "the weight-sync phase")
    assert [d.severity.label for d in result.diagnostics] == ["warning", "warning"]
    assert "vLLM gpu_memory_utilization 0.6 (-7.9 GiB)" in m001
    assert m005.startswith("vLLM reserves 0.7 x 79.1 GiB = 55.4 GiB per GPU while actor, ref, critic hold 24.4 GiB")
    assert m005.endswith("(weight-sync phase total 81.1 GiB: vLLM woken while the policy sends it its weights, at "
                         "start-up and after every update); 0.6 fits")


def test_orz_weight_sync_fix_writes_the_highest_utilisation_that_fits(tmp_path):
    fixed, result = fix_copy(ORZ_BAD, tmp_path, ["M005"])
    assert fixed == ORZ_BAD.read_text().replace("gpu_memory_utilization: float = 0.7",
                                                "gpu_memory_utilization: float = 0.6")
    assert triples(result) == []
    assert triples(run([tmp_path / ORZ_BAD.name], ["M"])) == []


# -- OpenRLHF --vllm_enable_sleep ------------------------------------------------------------------------------------
OPENRLHF = FIXTURES / "openrlhf"


def test_openrlhf_before_0_9_2_wakes_the_whole_reservation_for_the_sync():
    job, hardware = job_of(OPENRLHF / "sleep_v0_9_1.sh", "shell", {"openrlhf": "0.9.1"})
    assert job.value("vllm.sync_wake") == "all" and job.value("vllm.sleep_level") == 1
    group = estimate(job, hardware).group_of("vllm")
    # without --deepspeed_enable_sleep the actor's states stay loaded through the broadcast
    assert {("vllm", "vllm_reservation"), ("actor", "optimizer_states"), ("actor", "gathered_params")} <= \
        terms(group, "weight-sync")
    assert group.phase_total("weight-sync") > group.phase_total("generation")


def test_openrlhf_0_9_2_and_later_wake_only_the_weights_for_the_sync():
    job, hardware = job_of(OPENRLHF / "sleep_v0_11.sh", "shell", {"openrlhf": "0.11.0"})
    assert job.value("vllm.sync_wake") == "weights"
    est = estimate(job, hardware)
    group = est.group_of("vllm")
    vllm = est.role("vllm")
    assert terms(group, "weight-sync", "vllm") == {("vllm", "vllm_weights"), ("vllm", "runtime")}
    assert sum(t.bytes for r, t in group.phases["weight-sync"] if r == "vllm") == \
        vllm.kv["weights_per_gpu"] + K.cuda_context
    # --ds.enable_sleep: the actor was offloaded after its update, before the broadcast
    assert terms(group, "weight-sync", "actor") == {("actor", "weights"), ("actor", "gradients"), ("actor", "runtime")}
    assert group.phase_total("weight-sync") < 25 * GIB
    # vLLM level-1 sleep parks its weights in host RAM
    assert any(t.name == "vllm_sleep:weights" for t in est.nodes[0].persistent)


def test_no_sleep_no_weight_sync_phase(tmp_path):
    target = tmp_path / "awake.sh"
    target.write_text((OPENRLHF / "sleep_v0_11.sh").read_text().replace("  --vllm.enable_sleep \\\n", ""))
    job, hardware = job_of(target, "shell", {"openrlhf": "0.11.0"})
    assert job.value("vllm.sync_wake") is None
    group = estimate(job, hardware).group_of("vllm")
    assert "weight-sync" not in group.phases
    assert ("vllm", "vllm_reservation") in terms(group, "training")


def test_verl_hybrid_engine_gets_no_separate_weight_sync_phase():
    # the rollout lives in the training process and wakes its weights before its KV cache: generation covers it
    from rlhf_lint.engine.config import Hardware

    job, _ = job_of(FIXTURES / "M001_fsdp_grpo_good.sh", "shell")
    assert job.value("vllm.enable_sleep") is True
    group = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8)).group_of("vllm")
    assert set(group.phases) == {"generation", "experience", "training", "step"}


def test_vllm_sleep_backup_is_one_pinned_power_of_two_block_per_allocator_segment():
    from rlhf_lint.memory.catalog import model_by_id
    from rlhf_lint.memory.estimate import _vllm_sleep_backup

    mib = 1 << 20
    qwen = model_by_id("Qwen/Qwen2.5-7B")  # hidden 3584, MLP 18944, 28 heads with 4 KV heads of 128, vocab 152064
    # embed and lm_head 1.09 GB -> 2 GiB each; per layer qkv 33.0 MB -> 32 MiB, o 25.7 MB -> 26 MiB segment ->
    # 32 MiB, gate_up 271.6 MB -> 512 MiB, down 135.8 MB -> 256 MiB; the norms share one 2 MiB segment
    assert _vllm_sleep_backup(qwen, 1, 2) == 2 * 2048 * mib + 28 * (32 + 32 + 512 + 256) * mib + 2 * mib
    # tensor parallel 2: every shard halves, and the power of two with it (the KV heads still split: 4 over 2)
    assert _vllm_sleep_backup(qwen, 2, 2) == 2 * 1024 * mib + 28 * (16 + 16 + 256 + 128) * mib + 2 * mib


def test_vllm_sleep_backup_counts_layers_without_listing_them():
    # a config.json may claim a billion layers: the backup is counted per layer kind, in bounded memory
    from rlhf_lint.memory.catalog import model_by_id
    from rlhf_lint.memory.estimate import _vllm_sleep_backup
    from rlhf_lint.startup.records import replace

    llama = model_by_id("meta-llama/Llama-3.1-8B")
    one, many = replace(llama, num_layers=1), replace(llama, num_layers=10**9)
    per_layer = _vllm_sleep_backup(replace(llama, num_layers=2), 1, 2) - _vllm_sleep_backup(one, 1, 2)
    assert per_layer > 0 and _vllm_sleep_backup(many, 1, 2) > (10**9 - 1) * per_layer * 0.99
