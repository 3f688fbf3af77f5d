"""Knowledge that used to be written in Python lives in schemas/: the memory model's numbers, dtype names and
accelerate's mixed_precision values, verl's key -> setting rows, the launcher modules and flag rows, OpenRLHF's
estimator -> job type map and the frameworks that fill ds_config "auto" values. Each file parses, every entry names
its source, and the code reads its values from the data: an edited copy of schemas/ changes what the code does."""
from __future__ import annotations

import json
import shutil

import pytest

from rlhf_lint import schemas

NEW_FILES = ("memory/constants.json", "precision.json", "verl/settings_map.json", "openrlhf/job_types.json",
             "ds_config_auto_fillers.json", "launchers.json", "accelerate/deepspeed_keys.json")


def _has_source(entry) -> bool:
    source = entry.get("source") if isinstance(entry, dict) else None
    return isinstance(source, str) and len(source.strip()) > 5


# -- every file parses, every entry has a source -----------------------------------------------------------------
@pytest.mark.parametrize("name", NEW_FILES)
def test_file_parses_as_json(name):
    with open(schemas.path(name), encoding="utf-8") as fh:
        assert isinstance(json.load(fh), dict)


def test_memory_constants_have_value_unit_meaning_and_source():
    constants = schemas.load("memory/constants.json")["constants"]
    assert len(constants) >= 20
    for name, entry in constants.items():
        assert set(entry) == {"value", "unit", "meaning", "source"}, name
        assert _has_source(entry) and entry["meaning"].strip() and entry["unit"].strip(), name
        value = entry["value"]
        if isinstance(value, dict):  # a table (optimizer -> bytes, term -> band): numbers or [low, high] pairs
            assert value and all(isinstance(v, (int, float, list)) for v in value.values()), name
            continue
        assert isinstance(value, (int, float, list)) and not isinstance(value, bool), name


def test_precision_rows_have_sources_and_spellings_are_unambiguous():
    data = schemas.load("precision.json")
    seen: dict[str, str] = {}
    for dtype, row in data["dtypes"].items():
        assert _has_source(row) and row["bytes"] in (1, 2, 4, 8) and dtype in row["names"]
        for name in row["names"]:
            assert name == name.lower() and seen.setdefault(name, dtype) == dtype, name
    assert _has_source(data["accelerate_mixed_precision"])


def test_verl_rows_have_sources_and_name_keys_verl_knows():
    from rlhf_lint.frameworks.verl import _CONVERT

    rows = schemas.load("verl/settings_map.json")["rows"]
    defaults = schemas.load("verl/ppo_trainer_defaults.json")
    known, megatron = defaults["releases"], defaults["megatron"]
    assert len(rows) == 78
    for row in rows:
        assert _has_source(row) and row["convert"] in _CONVERT, row
        # the Megatron trainer's rows name keys of its own config (ppo_megatron_trainer)
        tables = [t[row["since"]]["keys"] for t in (known, megatron) if row["since"] in t]
        assert any(row["key"] in keys for keys in tables), row
        assert row["setting"] and "." in row["setting"], row


def test_other_tables_have_a_source_per_entry():
    job_types = schemas.load("openrlhf/job_types.json")["by_estimator"]
    assert job_types and all(_has_source(row) and row["job_type"] for row in job_types.values())
    fillers = schemas.load("ds_config_auto_fillers.json")["frameworks"]
    assert {"hf", "accelerate", "trl"} <= set(fillers) and all(_has_source(row) for row in fillers.values())
    launchers = schemas.load("launchers.json")
    modules = launchers["python_modules"]["modules"]
    assert modules and all(_has_source(row) and row["launcher"] in launchers for row in modules.values())
    assert all(_has_source(row) for row in launchers["program_flags"]["ds_config"].values())
    assert all(_has_source(row) and row["type"] in ("int", "str") for row in launchers["accelerate"]["settings"].values())
    accelerate = schemas.load("accelerate/deepspeed_keys.json")["settings"]
    assert accelerate and all(_has_source(row) and row["key"] for row in accelerate.values())


# -- the code reads the data -------------------------------------------------------------------------------------
@pytest.fixture
def edit_schema(tmp_path, monkeypatch):
    """Point rlhf_lint.schemas at a copy of schemas/ and return ``edit(name, change)`` to change one of its files."""
    copy = tmp_path / "schemas"
    shutil.copytree(schemas.HERE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    monkeypatch.setattr(schemas, "HERE", str(copy))
    monkeypatch.setenv("RLHF_LINT_CACHE_DIR", str(tmp_path / "cache"))
    schemas.load.cache_clear()

    def edit(name: str, change) -> None:
        path = copy / name
        data = json.loads(path.read_text(encoding="utf-8"))
        change(data)
        path.write_text(json.dumps(data), encoding="utf-8")
        schemas.load.cache_clear()

    yield edit
    schemas.load.cache_clear()


def _estimate():
    from rlhf_lint.memory.catalog import GIB
    from rlhf_lint.memory.estimate import estimate
    from rlhf_lint.frameworks.jobs import Job
    from rlhf_lint.model import Setting, Settings
    from rlhf_lint.engine.config import Hardware

    settings = Settings()
    for key, value in {"model.policy.params": "7B", "zero.stage": 2, "precision.param_dtype": "bf16",
                       "topology.policy.nodes": 1, "topology.policy.gpus_per_node": 8, "batch.micro_train": 1,
                       "seq.max_len": 1024, "deepspeed.overlap_comm": True, "train.flash_attn": True}.items():
        settings.add(Setting(key, value))
    job = Job("t", "t.sh", None, "deepspeed", settings, roles=("policy",))
    role = estimate(job, Hardware(gpus_per_node=8, gpu_memory=80 * GIB)).role("policy")
    return {t.name: t for t in role.terms}


def test_the_estimate_reads_the_memory_constants(edit_schema):
    from rlhf_lint.memory.catalog import GIB

    before = _estimate()
    assert "5e8 elements" in before["deepspeed_buffers"].formula

    def change(data):
        c = data["constants"]
        c["cuda_context"]["value"] = 3
        c["activation_scale"]["value"] = 2 * c["activation_scale"]["value"]
        c["reduce_bucket_elements"]["value"] = 250000000
        c["optimizer_state_bytes"]["value"]["adamw"] = 12  # + the fp32 master copy: 16 B instead of 12

    edit_schema("memory/constants.json", change)
    after = _estimate()
    assert after["runtime"].bytes - before["runtime"].bytes >= 1.75 * GIB  # 3 GiB of context instead of 1.25
    assert "CUDA context and NCCL 3.00 GiB" in after["runtime"].formula
    assert after["activations"].bytes == 2 * before["activations"].bytes
    per_unit = [float(t.formula.split("*")[-1].split()[0]) for t in (before["activations"], after["activations"])]
    assert abs(per_unit[1] - 2 * per_unit[0]) <= 0.15, per_unit  # each printed to one decimal
    assert after["deepspeed_buffers"].bytes == before["deepspeed_buffers"].bytes // 2
    assert "2.5e8 elements" in after["deepspeed_buffers"].formula
    assert after["optimizer_states"].bytes * 12 == before["optimizer_states"].bytes * 16


def test_constants_read_the_data_with_their_units(edit_schema):
    from rlhf_lint.memory.catalog import GIB
    from rlhf_lint.memory.estimate import K

    assert K.cuda_context == 1.25 * GIB and K.sleep_keeps == ("weights", "gradients")  # GiB in bytes, a list as a tuple
    edit_schema("memory/constants.json", lambda d: d["constants"]["process_host_ram"].update(value=4))
    assert K.process_host_ram == 4 * GIB
    with pytest.raises(AttributeError):
        K.not_a_constant  # noqa: B018


def test_dtype_names_and_sizes_come_from_the_precision_table(edit_schema):
    from rlhf_lint.frameworks.deepspeed import normalise_dtype
    from rlhf_lint.frameworks.precision import accelerate_dtype, dtype_bytes

    assert (normalise_dtype(" Torch.BFloat16 "), normalise_dtype("half"), normalise_dtype("int8")) == ("bf16", "fp16", None)
    assert (dtype_bytes("float", 2), dtype_bytes("bf16", 4), dtype_bytes("fp8", 1)) == (4, 2, 1)
    assert accelerate_dtype("no") == "fp32"

    def change(data):
        data["dtypes"]["fp16"]["names"].remove("half")
        data["dtypes"]["fp32"]["bytes"] = 8
        data["accelerate_mixed_precision"]["values"]["no"] = "fp16"

    edit_schema("precision.json", change)
    assert (normalise_dtype("half"), dtype_bytes("float32", 2), accelerate_dtype("no")) == (None, 8, "fp16")


def _jobs(tmp_path, text):
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import build_project

    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "train.sh").write_text(text)
    project, _ = build_project([str(tmp_path / "work")], Config())
    return project.jobs


def test_launchers_read_their_tables(tmp_path, edit_schema):
    launch = ("accelerate launch --mixed_precision no --zero_stage 2 t.py\n"
              "python -m torch.distributed.run --nproc_per_node 4 t.py --deepspeed_config ds.json\n")
    acc, torchrun = _jobs(tmp_path, launch)
    assert (acc.value("precision.param_dtype"), acc.value("zero.stage")) == ("fp32", 2)
    assert (torchrun.framework, torchrun.value("topology.gpus_per_node")) == ("torchrun", 4)
    assert torchrun.value("deepspeed.config_path") == "ds.json"

    def change(data):
        del data["python_modules"]["modules"]["torch.distributed.run"]
        del data["program_flags"]["ds_config"]["--deepspeed_config"]
        data["accelerate"]["settings"]["--zero_stage"]["key"] = "train.fsdp_size"  # another declared key

    edit_schema("launchers.json", change)
    edit_schema("precision.json", lambda d: d["accelerate_mixed_precision"]["values"].update(no="fp16"))
    acc, plain = _jobs(tmp_path, launch)
    assert (acc.value("precision.param_dtype"), acc.value("zero.stage"), acc.value("train.fsdp_size")) == \
        ("fp16", None, 2)
    assert plain.framework == "python" and plain.value("deepspeed.config_path") is None


def test_accelerate_config_settings_follow_the_table(tmp_path, edit_schema):
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import build_project

    (tmp_path / "acc.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                       "mixed_precision: bf16\ndeepspeed_config:\n  zero_stage: 3\n"
                                       "  offload_optimizer_device: cpu\n  gradient_accumulation_steps: 4\n")

    def job():
        project, _ = build_project([str(tmp_path / "acc.yaml")], Config())
        return project.jobs[0]

    first = job()
    assert (first.value("offload.optimizer"), first.value("batch.grad_accum"), first.value("precision.param_dtype")) \
        == ("cpu", 4, "bf16")
    edit_schema("accelerate/deepspeed_keys.json", lambda d: d["settings"]["offload_optimizer_device"].update(key="offload.param"))
    edit_schema("precision.json", lambda d: d["accelerate_mixed_precision"]["values"].update(bf16="fp16"))
    second = job()
    assert (second.value("offload.optimizer"), second.value("offload.param"), second.value("precision.param_dtype")) == \
        (None, "cpu", "fp16")


def test_verl_settings_follow_the_rows(edit_schema):
    from rlhf_lint.frameworks.verl import new_config, settings_from

    assert settings_from(new_config(None)).value("train.strategy") == "fsdp"

    def change(data):
        for row in data["rows"]:
            if row["setting"] == "train.strategy":
                row["setting"] = "train.critic.strategy"  # another declared key

    edit_schema("verl/settings_map.json", change)
    settings = settings_from(new_config(None))
    assert settings.get("train.strategy") is None and settings.value("train.critic.strategy") == "fsdp"


def test_openrlhf_job_type_follows_the_table(edit_schema):
    from types import SimpleNamespace

    from rlhf_lint.frameworks.openrlhf import _job_type

    inv = lambda estimator: SimpleNamespace(job_type="ppo", get=lambda name, default=None: estimator)  # noqa: E731
    assert [_job_type(inv(e)) for e in ("gae", "group_norm", "rloo", "reinforce_baseline")] == \
        ["ppo", "grpo", "rloo", "reinforce"]
    edit_schema("openrlhf/job_types.json", lambda d: d["by_estimator"]["group_norm"].update(job_type="grpo-x"))
    assert _job_type(inv("group_norm")) == "grpo-x"


def test_hf_framework_list_comes_from_the_schema(tmp_path, edit_schema):
    from rlhf_lint.rules.deepspeed._common import hf_frameworks

    assert hf_frameworks() == {"accelerate", "trl", "hf", "transformers", "llamafactory", "axolotl", "swift"}
    edit_schema("ds_config_auto_fillers.json", lambda d: d["frameworks"].pop("hf"))
    assert "hf" not in hf_frameworks()
    # D020 then holds `--deepspeed FILE` (the HF Trainer's flag) to plain DeepSpeed: "auto" is reported
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import Options, lint

    work = tmp_path / "d020"
    work.mkdir()
    (work / "ds_config.json").write_text('{\n  "train_batch_size": "auto",\n  "zero_optimization": {"stage": 2}\n}\n')
    (work / "train.sh").write_text("deepspeed --num_gpus 8 train.py --deepspeed ds_config.json\n")
    result = lint([str(work)], Config(), Options(select=["D020"], jobs=1))
    assert [d.code for d in result.diagnostics] == ["D020"]

