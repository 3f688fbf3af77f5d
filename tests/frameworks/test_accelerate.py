from pathlib import Path

import yaml

from lintutil import ROOT, fix_copy, run, triples
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import build_project

FIXTURES = Path(ROOT) / "tests" / "fixtures" / "accelerate"


def _fixed(name, tmp_path):
    fixed, result = fix_copy(FIXTURES / name, tmp_path, ["A"])
    yaml.safe_load(fixed)
    return (FIXTURES / name).read_bytes().decode(), fixed, result


def test_conflict_fix_deletes_the_refused_entries(tmp_path):
    original, fixed, result = _fixed("A001_bad.yaml", tmp_path)
    kept = [line for line in original.splitlines(keepends=True)
            if not line.startswith(("  zero_stage", "  gradient_accumulation_steps", "mixed_precision"))]
    assert fixed == "".join(kept)
    assert result.diagnostics == []


def test_save_flag_fixes(tmp_path):
    original, fixed, _ = _fixed("A002_bad.yaml", tmp_path)
    assert fixed == original.replace("zero3_save_16bit_model: false", "zero3_save_16bit_model: true")
    original, fixed, result = _fixed("A002_missing_save_crlf_bad.yaml", tmp_path)
    assert fixed == original.replace("  zero_stage: 3\r\n", "  zero_stage: 3\r\n  zero3_save_16bit_model: true\r\n")
    assert result.diagnostics == []


def test_init_flag_fix_is_safe(tmp_path):
    fixed, _ = fix_copy(FIXTURES / "A003_bad.yaml", tmp_path, ["A"])
    assert fixed == (FIXTURES / "A003_bad.yaml").read_text().replace("zero3_init_flag: true",
                                                                           "zero3_init_flag: false")


def test_job_settings_and_link_to_the_ds_config():
    project, _ = build_project([str(FIXTURES / "A001_with_file_good" / "good_with_file.yaml"), str(FIXTURES / "A001_with_file_good" / "ds_zero3.json"),
                                str(FIXTURES / "A002_bad.yaml")], Config())
    ds = project.sources[str(FIXTURES / "A001_with_file_good" / "ds_zero3.json")]
    assert ds.kind == "ds_config"
    (job, setting), = project.jobs_referencing(ds.path)
    assert job.framework == "accelerate" and job.path.endswith("good_with_file.yaml")
    assert job.value("topology.world_size") == 8
    stage = job.settings.get("zero.stage")  # decided by the ds_config file, which the job now reads
    assert stage.value == 3 and stage.path == ds.path
    other = next(j for j in project.jobs if j.path.endswith("A002_bad.yaml"))
    assert other.value("zero.stage") == 3 and other.value("precision.param_dtype") == "bf16"
    assert other.value("topology.nodes") == 1 and other.value("topology.gpus_per_node") == 4


def test_plugin_default_stage_when_unset(tmp_path):
    path = tmp_path / "acc.yaml"
    path.write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  offload_optimizer_device: cpu\n")
    project, _ = build_project([str(path)], Config())
    (job,) = project.jobs
    assert job.value("zero.stage") == 2 and job.value("offload.optimizer") == "cpu"
    assert "plugin default" in job.settings.get("zero.stage").origin


def test_other_yaml_is_not_an_accelerate_config(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("deepspeed_config:\n  zero_stage: 3\nname: not-accelerate\n")
    project, _ = build_project([str(path)], Config())
    assert project.jobs == []
    assert triples(run([path], ["A"])) == []


LAUNCH = FIXTURES / "launch"


def test_launch_takes_its_world_size_from_the_accelerate_config_for_batch_arithmetic():
    # train.sh: line 3 inherits num_processes 4 (32 != 4 x 1 x 4); line 4 says --num_processes 8 (32 = 4 x 1 x 8);
    # line 5 leaves the batch to "auto"
    result = run([LAUNCH], None)
    assert [(d.path.rsplit("/", 1)[-1], d.code, d.start.line, d.start.column) for d in result.diagnostics] == [
        ("ds_numbers.json", "D010", 2, 23)]
    d010 = result.diagnostics[0]
    assert "world size 4 = 16" in d010.message
    (related,) = d010.related
    text = (LAUNCH / "accelerate_4gpu.yaml").read_text()
    assert related.path.endswith("accelerate_4gpu.yaml") and text[related.span.start:related.span.end] == "4"
    assert text[:related.span.start].endswith("num_processes: ")


def test_launch_topology_settings_from_the_config_and_the_command_line():
    project, _ = build_project([str(LAUNCH)], Config())
    launches = sorted((j for j in project.jobs if j.path.endswith("train.sh")), key=lambda j: j.span.start)
    first, second, third = launches
    world = first.settings.get("topology.world_size")
    assert world.value == 4 and world.path.endswith("accelerate_4gpu.yaml") and "num_processes" in world.origin
    assert first.value("topology.nodes") == 1 and first.value("topology.gpus_per_node") == 4
    assert second.value("topology.world_size") == 8 and second.settings.get("topology.world_size").path.endswith(
        "train.sh")  # the command line wins
    assert third.value("topology.world_size") == 4


def test_launch_without_the_config_among_checked_files_has_no_world_size():
    project, _ = build_project([str(LAUNCH / "train.sh"), str(LAUNCH / "ds_numbers.json")], Config())
    launches = [j for j in project.jobs if j.path.endswith("train.sh")]
    assert launches and all(j.value("topology.world_size") in (None, 8) for j in launches)
    assert [d.code for d in run([LAUNCH / "train.sh", LAUNCH / "ds_numbers.json"], None).diagnostics] == []


def test_a_boolean_or_zero_count_is_no_topology(tmp_path):
    """`num_processes: true` is an int to Python (bool), not a number of processes: the config's job and a launch
    that points at it take no world size from it, nor nodes from `num_machines: 0`."""
    (tmp_path / "acc.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                       "num_processes: true\nnum_machines: 0\n", encoding="utf-8")
    (tmp_path / "train.sh").write_text("accelerate launch --config_file acc.yaml train.py\n", encoding="utf-8")
    project, _ = build_project([str(tmp_path / "acc.yaml"), str(tmp_path / "train.sh")], Config())
    assert project.jobs
    for job in project.jobs:
        assert job.settings.get("topology.world_size") is None and job.settings.get("topology.nodes") is None
