"""Memory rules on hand-built jobs: a `.memjob` fixture is a JSON description of a job's Settings (each with the
span of its value), so the M rules are tested before the shell and framework readers feed them."""
import os
import shutil

import pytest

from lintutil import ROOT
from rlhf_lint.frameworks import jobs
from rlhf_lint.engine import project
from rlhf_lint.engine.config import Config
from rlhf_lint.frameworks.jobs import Job, job_builder
from rlhf_lint.model import Setting, Settings
from rlhf_lint.engine.runner import Options, lint

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "memory")


def build_memjob(source, proj):
    tree = source.tree
    settings = Settings()
    member = tree.root.member("settings")
    for m in member.value.members:
        settings.add(Setting(m.key, m.value.to_python(), path=source.path, span=m.value.span))
    framework = tree.root.get("framework").to_python()
    hardware = {k: v for k, v in tree.root.get("hardware").to_python().items()}
    return [Job(os.path.basename(source.path), source.path, member.key_span, framework, settings, hardware=hardware)]


@pytest.fixture
def memjob_kind(monkeypatch):
    from rlhf_lint.readers import kinds

    monkeypatch.setitem(project.PARSERS, "memjob", "rlhf_lint.readers.json:parse_json_source")
    jobs.builders_for("memjob")  # register the real builders first, or they would land in the patched list only
    monkeypatch.setattr(jobs, "_BUILDERS", list(jobs._BUILDERS))
    job_builder(kinds={"memjob"})(build_memjob)
    original = kinds.kind_from_name
    monkeypatch.setattr("rlhf_lint.engine.runner.kind_from_name",
                        lambda name: "memjob" if name.endswith(".memjob") else original(name))
    from rlhf_lint.memory import fixes

    monkeypatch.setitem(fixes.SETTING_WRITERS, "orz", "rlhf_lint.memory.fixes:insert_openrlhf_flag")


def run(path, **options):
    return lint([path], Config(), Options(select=["M"], **options))


def found(result):
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


def test_case3_colocated_vllm_reservation(memjob_kind):
    result = run(os.path.join(FIXTURES, "case3_colocated_bad.memjob"))
    assert found(result) == [("M001", 4, 3), ("M005", 15, 36)]
    m001, m005 = result.diagnostics
    assert "actor + ref + critic + reward + vllm need" in m001.message
    assert "cheapest change that fits: vLLM gpu_memory_utilization 0.45 " in m001.message
    assert "(band 89.9 GiB to 107.5 GiB)" in m001.message and m001.severity.label == "error"  # even the low end
    assert "vLLM reserves 0.85 x 79.1 GiB = 67.3 GiB" in m005.message
    assert m005.fix is not None and m005.fix.applicability.value == "safe"


def test_case3_fix_sets_highest_fitting_utilization(memjob_kind, tmp_path):
    target = tmp_path / "case3.memjob"
    shutil.copy(os.path.join(FIXTURES, "case3_colocated_bad.memjob"), target)
    result = run(str(target), fix=True)
    text = target.read_text()
    expected = open(os.path.join(FIXTURES, "case3_colocated_bad.memjob")).read().replace(
        '"vllm.gpu_memory_utilization": 0.85', '"vllm.gpu_memory_utilization": 0.45')
    assert text == expected
    assert found(result) == []  # idempotent: nothing left to fix or report


def test_case3_good_is_clean(memjob_kind):
    assert found(run(os.path.join(FIXTURES, "case3_colocated_good.memjob"))) == []


def test_case3_at_half_utilisation_is_tight_not_an_error(memjob_kind, tmp_path):
    # 0.5 leaves 73.0 GiB nominal, band to 80.4 GiB with ZeRO-3's kept-gathered layers: a warning, never an error
    target = tmp_path / "case3.memjob"
    target.write_text(open(os.path.join(FIXTURES, "case3_colocated_good.memjob")).read().replace(
        '"vllm.gpu_memory_utilization": 0.45', '"vllm.gpu_memory_utilization": 0.5'))
    (d,) = run(str(target)).diagnostics
    assert d.code == "M001" and d.severity.label == "warning" and d.message.startswith("tight: ")


def test_case2_host_ram_and_grad_accum(memjob_kind):
    result = run(os.path.join(FIXTURES, "case2_host_bad.memjob"))
    # PPO trains on generated responses: a micro batch is padded to its longest one, so 4 x 2048 tokens is a bound,
    # not a count. The GPU groups overflow only at that bound (checkpointing off: ~69 GiB of activations and
    # logits), which is M009's warning and M006's safe fix (checkpointing), never an M001 error. The host RAM against
    # the container limit is the certain failure (M002), and the fp32 accumulation M003's unsafe fix.
    codes = found(result)
    assert [c for c in codes if c[0] in ("M001", "M002", "M003")] == [("M002", 4, 3), ("M003", 12, 85)]
    m006 = [d for d in result.diagnostics if d.code == "M006"]
    assert len(m006) == 2 and all(d.severity.label == "warning" for d in m006)
    assert all(d.fix is not None and d.fix.applicability.value == "safe" for d in m006)
    assert [d.code for d in result.diagnostics if d.code == "M009"] == ["M009", "M009"]
    by_code = {d.code: d for d in result.diagnostics}
    assert "container limit is 465.7 GiB" in by_code["M002"].message
    assert "actor and critic share this node" in by_code["M002"].message
    assert "saves" in by_code["M003"].message and by_code["M003"].fix.applicability.value == "unsafe"


def test_case2_grad_accum_fix_is_unsafe(memjob_kind, tmp_path):
    target = tmp_path / "case2.memjob"
    original = open(os.path.join(FIXTURES, "case2_host_bad.memjob")).read()
    target.write_text(original)
    run(str(target), fix=True)  # safe fixes only: checkpointing (M001's cheapest change) is applied, the dtype not
    after_safe = target.read_text()
    assert '"precision.grad_accum_dtype": "fp32"' in after_safe
    assert '"train.gradient_checkpointing": true' in after_safe
    run(str(target), fix=True, unsafe_fixes=True)
    assert '"precision.grad_accum_dtype": "bf16"' in target.read_text()


def test_case2_good_is_clean(memjob_kind):
    # every fix the maintainers named: ZeRO-3, bf16 accumulation, checkpointing, and a container with more memory.
    # The code-level fixes alone do not fit 500 GB: with pin_memory (OpenRLHF sets it) each rank of the actor and
    # the critic holds its fp32 partition, CPU Adam's moments, the sub-groups' fp32 gradients and the flat bf16
    # gradient partition, the last two in power-of-two pinned blocks (~570 GB for both models; docs/accuracy.md
    # change 51, measured on one H200)
    assert found(run(os.path.join(FIXTURES, "case2_host_good.memjob"))) == []


def test_no_hardware_gives_info_only(memjob_kind, tmp_path):
    text = open(os.path.join(FIXTURES, "case3_colocated_bad.memjob")).read()
    target = tmp_path / "nohw.memjob"
    target.write_text(text.replace('"gpu": "A100-80GB", ', ""))
    result = run(str(target))
    assert found(result) == [("M008", 4, 3)]
    assert "no memory verdict" in result.diagnostics[0].message


def test_no_hardware_is_reported_once_per_repository():
    from lintutil import run as lint_run

    folder = os.path.join(FIXTURES, "orz")
    result = lint_run([os.path.join(folder, "debug_changes_memory.py"), os.path.join(folder, "debug_batch_only.py")],
                      ["M008"])
    got = [(os.path.basename(d.path), d.start.line, d.start.column, d.message) for d in result.diagnostics]
    # four launches (two configs x two DEBUG_MODE scenarios) in one repository: one info, on the first launch, with
    # its scenario and the count of the others
    assert got == [
        ("debug_changes_memory.py", 13, 7, "no GPU in the hardware profile, so no memory verdict (nor for 3 other "
                                           "launches in 2 files of this repository: `rlhf-lint estimate FILE` shows "
                                           "each); estimated peak per GPU with DEBUG_MODE=False: actor + ref + critic "
                                           "+ vllm 34.0 GiB"),
    ]
    # one launch alone: no count
    alone = lint_run([os.path.join(folder, "debug_batch_only.py")], ["M008"])
    assert [d.message.split(";")[0] for d in alone.diagnostics] == [
        "no GPU in the hardware profile, so no memory verdict (nor for 1 other launch in 1 file of this repository: "
        "`rlhf-lint estimate FILE` shows each)"]


VERL_BACKENDS = os.path.join(FIXTURES, "verl_backends")


def test_verl_megatron_backend_is_sized_as_megatron_and_warns_only():
    # verl's Megatron examples (TP/PP + distributed optimizer) were all "out of memory" when counted unsharded; they
    # are sized per Megatron rank now, and no measured verl Megatron run backs an error yet
    result = lint([os.path.join(VERL_BACKENDS, "megatron_7b.sh")], Config(), Options(select=["M"]))
    assert result.diagnostics and "M012" not in [code for code, *_ in found(result)]
    assert all(d.severity.label in ("warning", "info") for d in result.diagnostics)


def test_verl_fsdp_backend_keeps_its_verdict():
    # padded micro batches hold exactly 64 x 2048 tokens: an overflow whatever the lengths, M001
    result = lint([os.path.join(VERL_BACKENDS, "fsdp_7b.sh")], Config(), Options(select=["M001", "M009"]))
    assert found(result) == [("M001", 4, 1)]


DDP_JOB = """{
  "hardware": {"gpu": "A100-80GB", "gpus-per-node": 8},
  "framework": "hf",
  "settings": {
    "job.type": "sft", "model.policy.path": "Qwen/Qwen2.5-7B",
    "topology.policy.nodes": 1, "topology.policy.gpus_per_node": GPUS,
    "train.strategy": "ddp", "precision.param_dtype": "bf16", "precision.master_dtype": "fp32",
    "batch.micro_train": 1, "seq.max_len": 2048, "train.gradient_checkpointing": true, "train.flash_attn": true
  }
}"""


def test_ddp_overflow_is_an_error_on_one_gpu_and_a_warning_on_several(memjob_kind, tmp_path):
    # 4 + 4 + 8 B/param of a 7.6B model replicated: 114 GiB whatever the launcher; but on 8 GPUs the HF builders'
    # "ddp" is a guess (an FSDP launcher config the linter does not see would shard it)
    for gpus, severity in ((1, "error"), (8, "warning")):
        target = tmp_path / f"ddp{gpus}.memjob"
        target.write_text(DDP_JOB.replace("GPUS", str(gpus)))
        result = run(str(target))
        assert [(d.code, d.severity.label) for d in result.diagnostics] == [("M001", severity)]
    assert "if every GPU holds a full replica" in result.diagnostics[0].message


def _combined_case(tmp_path, host: str) -> str:
    text = open(os.path.join(FIXTURES, "M001_combined_change_bad.sh")).read()
    target = tmp_path / "run.sh"
    target.write_text(text.replace("gpus-per-node=8", f"gpus-per-node=8 host-memory={host}"))
    return str(target)


def test_changes_combined_when_none_fits_alone(tmp_path):
    # 70B under ZeRO-2 on 8 x A100-80GB: ZeRO-3 alone leaves 142 GiB, CPU Adam alone 139 GiB; together they fit
    result = lint([_combined_case(tmp_path, "2TiB")], Config(), Options(select=["M001"]))
    (m001,) = result.diagnostics
    assert "no single change fits; together these fit: ZeRO stage 3 + offload the optimizer to CPU" in m001.message
    assert m001.fix is not None and m001.fix.applicability.value == "unsafe"
    inserted = sorted(edit.content.strip(" \\\n") for edit in m001.fix.edits)
    assert inserted == ["--adam_offload", "3"]  # --zero_stage 2 -> 3, and the switch for CPU Adam


def test_combination_that_overflows_host_ram_is_not_proposed(tmp_path):
    # the same launch on nodes of 512 GiB: CPU Adam for 70B needs ~1 TiB of host RAM, so no change fits
    result = lint([_combined_case(tmp_path, "512GiB")], Config(), Options(select=["M001"]))
    (m001,) = result.diagnostics
    assert "together these fit" not in m001.message and m001.fix is None
    assert "no single change fits; largest savings: offload the optimizer to CPU" in m001.message


def test_a_process_count_written_as_a_command_substitution_is_no_certain_overflow(tmp_path):
    # `--nproc_per_node=$(nvidia-smi -L | wc -l)`: every GPU of the node, not torchrun's default of one; a 32B
    # ZeRO-3 run on 8 x A100-80GB is no "does not fit" error (on one GPU it would need 535 GiB)
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 3}, "bf16": {"enabled": true}}\n')
    (tmp_path / "run.sh").write_text(
        "# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8\n"
        "torchrun --nproc_per_node=$(nvidia-smi -L | wc -l) train.py --deepspeed ds.json "
        "--model_name_or_path Qwen/Qwen2.5-32B --per_device_train_batch_size 1 --bf16\n")
    result = lint([str(tmp_path)], Config(), Options(select=["M001"]))
    assert [(d.code, d.severity.label) for d in result.diagnostics] == [("M001", "warning")]
    assert "on 8 GPUs (the hardware profile's" in result.diagnostics[0].message


def _m007(tmp_path, model, utilization, generate):
    from lintutil import run_lint
    from rlhf_lint.engine.config import Hardware

    (tmp_path / "run.sh").write_text(
        f"python3 -m openrlhf.cli.train_ppo_ray --pretrain {model} --actor_num_nodes 1 --actor_num_gpus_per_node 8 "
        f"--vllm_num_engines 1 --vllm_tensor_parallel_size 1 --vllm_gpu_memory_utilization {utilization} "
        f"--prompt_max_len 1024 --generate_max_len {generate} --zero_stage 3 --bf16\n")
    cfg = Config()
    cfg.hardware = Hardware(gpu="A100-80GB", gpus_per_node=8)
    return [(d.severity.name, d.message) for d in run_lint([tmp_path], cfg, select=["M007"]).diagnostics]


def test_m007_on_a_stand_in_shape_is_a_warning_unless_the_weights_alone_fill_the_reservation(tmp_path):
    # a size read from the name: the KV bytes per token are the nearest catalog model's
    (severity, message), = _m007(tmp_path, "org/my-7b-sft", 0.2, 200000)
    assert severity == "WARNING" and "stand-in layer shape for org/my-7b-sft" in message
    # 70B of weights fill the 0.9 reservation of one 80 GB card whatever the shape: still an error
    (severity, message), = _m007(tmp_path, "org/my-70b-sft", 0.9, 1024)
    assert severity == "ERROR" and "already fill the reservation" in message
    # the same shortfall with the model's own shape stays an error
    (severity, _), = _m007(tmp_path, "Qwen/Qwen2.5-7B", 0.2, 200000)
    assert severity == "ERROR"
