"""D rules beyond the fixture snapshots (tests/rules/test_rule_snapshots.py): the ds_config schema and key data, world
size from the launch, versions from pins, settings for the memory model, and edge cases written inline."""
import json
import os
import shutil
import sys

import pytest

from lintutil import ROOT, run_lint
from rlhf_lint.engine.config import Config
from rlhf_lint.frameworks.deepspeed import schema_errors, settings_from_ds_config
from rlhf_lint.frameworks.jobs import Job, _BUILDERS, job_builder
from rlhf_lint.readers.json import parse_json
from rlhf_lint.model import UNKNOWN, Setting, Settings, Span

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "deepspeed")
# good fixtures that rely on DeepSpeed's lax coercion, which the editor schema deliberately does not allow
LAX = {"D012_good", "D023_good", "D012_bad_old"}
# good on the older release their snapshots.toml names; the editor schema describes the newest release
OLDER_RELEASE = {"D001_compile_good_0_14", "D001_compile_good_0_15"}


def _fixtures():
    return sorted(f[:-5] for f in os.listdir(FIXTURES) if f.endswith(".json") and not f.endswith(".fixed.json"))


@pytest.mark.parametrize("name", [n for n in _fixtures() if "_good" in n and n not in LAX | OLDER_RELEASE])
def test_good_fixtures_validate_against_the_schema(name):
    with open(os.path.join(FIXTURES, name + ".json"), encoding="utf-8") as fh:
        assert schema_errors(json.load(fh)) == []


@pytest.mark.parametrize("name", [n for n in _fixtures() if os.path.exists(os.path.join(FIXTURES, n + ".fixed.json"))])
def test_fixed_fixtures_are_json(name):
    """Fixes never leave the file unparseable; those without comments are strict JSON afterwards."""
    with open(os.path.join(FIXTURES, name + ".fixed.json"), encoding="utf-8") as fh:
        text = fh.read()
    doc = parse_json(text)
    if not doc.comments:
        json.loads(text)


def test_schema_rejects_what_deepspeed_rejects():
    errors = schema_errors({"zero_optimization": {"stage": 3, "overlap_com": True}})
    assert errors
    assert not schema_errors({"zero_optimization": {"stage": 3, "overlap_comm": True}, "train_batch_size": "auto"})
    assert schema_errors({"zero_optimization": {"stage": 3, "sub_group_size": 1.5}})


def test_generated_schema_files_are_current():
    from rlhf_lint.schemas.build import ds_config as builder

    schema, data = builder.build()
    for name, obj in (("ds_config.schema.json", schema), ("ds_config_keys.json", data)):
        with open(os.path.join(ROOT, "schemas", name), encoding="utf-8") as fh:
            assert json.load(fh) == json.loads(json.dumps(obj)), f"{name} is stale: run python -m rlhf_lint.schemas.build.ds_config"


def test_every_deprecation_and_fill_fact_has_a_source():
    from rlhf_lint.frameworks.deepspeed import ds_keys

    data = ds_keys()
    for table in ("deprecated", "rejected"):
        for path, info in data[table].items():
            assert info["source"].startswith("https://"), path
    for entry in data["keys"].values():
        assert entry["source"].startswith("https://")
    for fill in data["auto_fill"].values():
        assert fill["source"].startswith("https://")


# -- world size from the launch that names the config ----------------------------------------------------------
@pytest.fixture
def fake_launch_builder():
    """A job builder for YAML files named launch.yaml: `config: <ds_config>` and `world: <n>` (plus a `trainer:` key,
    one of the top-level keys that make rlhf-lint read a YAML file at all)."""

    @job_builder(kinds={"yaml"})
    def build(source, project):
        if os.path.basename(source.path) != "launch.yaml":
            return []
        text = source.text
        config_line = next(line for line in text.splitlines() if line.startswith("config:"))
        world_line = next(line for line in text.splitlines() if line.startswith("world:"))
        cfg_at = text.index(config_line) + len("config: ")
        world_at = text.index(world_line) + len("world: ")
        settings = Settings()
        settings.add(Setting("deepspeed.config_path", config_line.split(": ", 1)[1], path=source.path,
                             span=Span(cfg_at, cfg_at + len(config_line) - len("config: "))))
        settings.add(Setting("topology.world_size", int(world_line.split(": ", 1)[1]), path=source.path,
                             span=Span(world_at, world_at + len(world_line) - len("world: "))))
        framework = "deepspeed" if "hf" not in text else "accelerate"
        return [Job("launch", source.path, None, framework, settings)]

    yield build
    _BUILDERS[:] = [b for b in _BUILDERS if b[1] is not build]


def test_world_size_comes_from_the_launch(tmp_path, fake_launch_builder):
    shutil.copyfile(os.path.join(FIXTURES, "D010_good.json"), tmp_path / "ds.json")
    (tmp_path / "launch.yaml").write_text("config: ds.json\nworld: 8\ntrainer: fake\n")
    result = run_lint([tmp_path], select=["D010"])
    [diag] = result.diagnostics
    assert diag.message == ("train_batch_size 64 != train_micro_batch_size_per_gpu 4 x gradient_accumulation_steps 4 "
                            "x world size 8 = 128")
    assert (diag.start.line, diag.start.column) == (2, 23)
    [related] = diag.related
    launch_text = (tmp_path / "launch.yaml").read_text()
    assert related.path.endswith("launch.yaml")
    assert launch_text[related.span.start:related.span.end] == "8"
    (tmp_path / "launch.yaml").write_text("config: ds.json\nworld: 4\ntrainer: fake\n")
    assert run_lint([tmp_path], select=["D010"]).diagnostics == []


def test_auto_is_an_error_under_a_plain_deepspeed_launch(tmp_path, fake_launch_builder):
    shutil.copyfile(os.path.join(FIXTURES, "D020_good.json"), tmp_path / "ds.json")
    (tmp_path / "launch.yaml").write_text("config: ds.json\nworld: 8\ntrainer: fake\n")
    plain = run_lint([tmp_path], select=["D020"])
    assert {(d.start.line, d.severity.label) for d in plain.diagnostics} >= {(16, "error"), (9, "warning"), (2, "warning")}
    (tmp_path / "launch.yaml").write_text("config: ds.json\nworld: 8\ntrainer: fake\n# hf\n")
    assert run_lint([tmp_path], select=["D020"]).diagnostics == []


def test_missing_batch_keys_under_plain_deepspeed(tmp_path, fake_launch_builder):
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 1}, "bf16": {"enabled": true}}\n')
    (tmp_path / "launch.yaml").write_text("config: ds.json\nworld: 8\ntrainer: fake\n")
    [diag] = run_lint([tmp_path], select=["D011"]).diagnostics
    assert "neither train_batch_size nor train_micro_batch_size_per_gpu" in diag.message
    assert run_lint([tmp_path / "ds.json"], select=["D011"]).diagnostics == []  # no launch known: no guess


# -- settings for the memory model --------------------------------------------------------------------------------
def test_settings_from_ds_config():
    text = ('{"bf16": {"enabled": true}, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}},'
            ' "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": "auto",'
            ' "data_types": {"grad_accum_dtype": "fp32"}}')
    settings = settings_from_ds_config(parse_json(text), "ds.json")
    values = {s.key: s.value for s in settings}
    assert values == {"zero.stage": 3, "precision.param_dtype": "bf16", "precision.grad_accum_dtype": "fp32",
                      "offload.optimizer": "cpu", "offload.param": "none", "batch.micro_train": 2,
                      "batch.grad_accum": UNKNOWN}
    stage = settings.get("zero.stage")
    assert text[stage.span.start:stage.span.end] == "3"
    assert settings.get("offload.param").span is None and "default" in settings.get("offload.param").origin


def test_settings_defaults_follow_deepspeed():
    settings = settings_from_ds_config(parse_json('{"bf16": {"enabled": true}, "train_batch_size": 8}'), "d.json")
    assert settings.value("zero.stage") == 0
    assert settings.value("precision.grad_accum_dtype") == "fp32"  # bf16 without ZeRO: BF16_Optimizer
    settings = settings_from_ds_config(parse_json('{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2},'
                                                  ' "zero_optimization": {"stage": 1}}'), "d.json")
    assert settings.value("zero.stage") == 1  # the last duplicate wins, as under json.load
    assert settings.value("precision.grad_accum_dtype") == "bf16"
    legacy = settings_from_ds_config(parse_json('{"zero_optimization": {"stage": 2, "cpu_offload": true}}'), "d")
    assert legacy.value("offload.optimizer") == "cpu"


def test_rule_module_does_not_import_jsonschema():
    import subprocess

    code = ("import os, sys, rlhf_lint.rules.deepspeed as family\n"
            "for name in sorted(os.listdir(family.__path__[0])):\n"
            "    if name.endswith('.py'): __import__('rlhf_lint.rules.deepspeed.' + name[:-3])\n"
            "print('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


WARMUP_FLOAT = '{"train_micro_batch_size_per_gpu": 2,\n "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1e3}}}\n'


def test_deepspeed_version_from_the_repository_pin(tmp_path):
    """No version configured: the requirements pin decides (0.19.2 predates the warmup_num_steps check)."""
    _write(tmp_path / "ds_config.json", WARMUP_FLOAT)
    _write(tmp_path / "requirements.txt", "torch==2.4.0\ndeepspeed==0.19.2\n")
    result = run_lint([tmp_path], Config(), select=["D029"])
    assert [d.code for d in result.diagnostics] == []


def test_pinned_version_is_named_in_the_message(tmp_path):
    _write(tmp_path / "ds_config.json", WARMUP_FLOAT)
    _write(tmp_path / "requirements.txt", "deepspeed==0.19.4\n")
    result = run_lint([tmp_path], Config(), select=["D029"])
    assert [(d.code, d.start.line, d.start.column) for d in result.diagnostics] == [("D029", 2, 67)]
    assert "DeepSpeed 0.19.4, pinned in requirements.txt" in result.diagnostics[0].message


def test_configured_version_wins_over_the_pin(tmp_path):
    _write(tmp_path / "ds_config.json", WARMUP_FLOAT)
    _write(tmp_path / "requirements.txt", "deepspeed==0.19.4\n")
    result = run_lint([tmp_path], Config(versions={"deepspeed": "0.18.0"}), select=["D029"])
    assert result.diagnostics == []


def test_changed_default_is_silent_when_the_pin_gives_the_version(tmp_path):
    _write(tmp_path / "ds_config.json", '{"train_micro_batch_size_per_gpu": 2}\n')
    result = run_lint([tmp_path], Config(), select=["D040"])
    assert [d.code for d in result.diagnostics] == ["D040"]
    _write(tmp_path / "requirements.txt", "deepspeed==0.19.4\n")
    assert run_lint([tmp_path], Config(), select=["D040"]).diagnostics == []


def test_comment_keys_are_not_reported_where_deepspeed_ignores_them(tmp_path):
    cfg = tmp_path / "ds_config.json"
    cfg.write_text('{\n  "_comment": "ZeRO-2 for 8 GPUs",\n  "train_batch_size": 32,\n'
                   '  "zero_optimization": {"stage": 2, "_comment": "strict section"}\n}\n')
    result = run_lint([cfg], select=["D001", "D002"])
    # top level is read with dict.get (a comment key is harmless); zero_optimization is validated (it is fatal)
    assert [(d.code, d.start.line) for d in result.diagnostics] == [("D001", 4)]


def test_batch_arithmetic_counts_data_parallel_ranks_under_sequence_parallelism(tmp_path):
    cfg = tmp_path / "ds_config.json"
    cfg.write_text('{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,\n'
                   ' "sequence_parallel_size": 2}\n')
    assert run_lint([cfg], Config(world_size=8), select=["D010"]).diagnostics == []  # 2 x 2 x (8 / 2) = 16
    cfg.write_text('{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,\n'
                   ' "sequence_parallel_size": 2}\n')
    [diag] = run_lint([cfg], Config(world_size=8), select=["D010"]).diagnostics
    assert diag.message == ("train_batch_size 32 != train_micro_batch_size_per_gpu 2 x gradient_accumulation_steps 2 x "
                            "world size 4 = 16 (world size from the configuration) (data-parallel ranks: 8 processes "
                            "/ sequence_parallel_size 2)")


@pytest.mark.parametrize("precision, accum, expected", [
    ('"fp16": {"enabled": false}, "bf16": {"enabled": "auto"}', "bf16", []),  # auto beside a disabled section
    ('"bfloat16": {"enabled": "auto"}', "bf16", []),  # the legacy section name, auto: unknown model dtype
    ('"fp16": {"enabled": "auto"}, "bf16": {"enabled": true}', "fp32", ["D035"]),  # bf16 for sure
    ('"bf16": {"enabled": true}', "fp32", ["D035"]),
    ('"fp16": {"enabled": false}', "bf16", ["D035"]),  # an fp32 model with bf16 accumulation
])
def test_d035_skips_only_undecided_precision(tmp_path, precision, accum, expected):
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 0}, %s, '
                    '"data_types": {"grad_accum_dtype": "%s"}}\n' % (precision, accum), encoding="utf-8")
    config = Config(versions={"deepspeed": "0.18.5"})
    assert [d.code for d in run_lint([path], config, select=["D035"]).diagnostics] == expected


def test_closest_key_skips_the_matcher_only_where_it_cannot_change_the_answer():
    import difflib
    import random

    from rlhf_lint.rules.deepspeed._common import _closest

    def reference(key, candidates):  # the search before the quick_ratio bound
        scored = sorted(((difflib.SequenceMatcher(None, key.lower(), c.lower()).ratio(), c) for c in candidates),
                        reverse=True)
        if not scored or scored[0][0] < 0.8 or len(scored) > 1 and scored[1][0] >= scored[0][0] - 0.05:
            return None
        return scored[0][1]

    candidates = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "stage",
                  "offload_param", "offload_optimizer", "zero_optimization", "bf16", "fp16", "Stage3_x"}
    rng = random.Random(11)
    found = 0
    for _ in range(3000):
        word = list(rng.choice(sorted(candidates)))
        for _ in range(rng.randrange(4)):
            i = rng.randrange(len(word))
            word[i:i + rng.randrange(2)] = rng.choice(["", "a", "_", "S"])
        key = "".join(word)
        assert _closest(key, candidates) == reference(key, candidates), key
        found += _closest(key, candidates) is not None
    assert found > 1000


def test_children_of_a_section_read_once_from_the_key_table():
    from rlhf_lint.frameworks.deepspeed import ds_keys
    from rlhf_lint.rules.deepspeed._common import _children

    data = ds_keys()
    for section in ["", "zero_optimization", "bf16", "bfloat16", "zero_optimization.offload_param", "nothing"]:
        name = "bf16" if section == "bfloat16" else section
        prefix = f"{name}." if name else ""
        names = {p[len(prefix):] for t in ("keys", "sections", "aliases") for p in data[t]
                 if p and p.startswith(prefix) and "." not in p[len(prefix):]}
        assert _children(section) == {n for n in names if prefix + n not in data["deprecated"]}, section
    assert _children("zero_optimization")
