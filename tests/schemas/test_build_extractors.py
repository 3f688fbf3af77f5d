"""The extractors of schemas/build read release artifacts statically: run here on the small synthetic trees of
tests/schemas/upstream/ (folders, and a wheel zipped from one), offline."""
from __future__ import annotations

import json
import os
import shutil
import zipfile

import pytest

from rlhf_lint.schemas.build import accelerate, deepspeed, openrlhf, orz, requires, verl
from rlhf_lint.schemas.build.ds_config import extend as ds_extend
from rlhf_lint.schemas.build.upstream import Cache, Offline, Release, metadata_requires, newest_patches

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "upstream")


def tree(name: str, package: str = "pkg", version: str = "1.0") -> Release:
    return Release(package, version, os.path.join(HERE, name), "https://example.invalid/")


# -- OpenRLHF argparse -------------------------------------------------------------------------------------------
def test_openrlhf_flags_are_read_with_helpers_loops_and_conditionals_expanded():
    clis = openrlhf.release_flags(tree("openrlhf_tree"))
    assert list(clis) == ["train_demo"]  # __init__ is no CLI
    rows = {r[0]: r for r in clis["train_demo"]}
    assert rows["--ckpt.max_mem"][1:5] == ["ckpt.max_mem", "store", "int", 100000000]
    assert rows["--ds.param_dtype"][3:6] == ["str", "bf16", ["bf16", "fp16"]]
    assert rows["--packing"][2:7] == ["store_true", "bool", False, None, 0]
    assert rows["--muon.no_nesterov"][1:5] == ["muon.nesterov", "store_false", "bool", True]
    assert rows["--target_modules"][6] == "*"
    assert rows["--run_name"][4] is openrlhf.UNKNOWN  # a call: not evaluated
    assert rows["--actor.warmup"][4] == 0.1 and rows["--critic.warmup"][4] == 0.2  # for loop + conditional
    assert rows["--actor.lr"][4] == 1e-6 and rows["--critic.lr"][4] == 9e-6  # helper with a keyword
    assert rows["--critic.betas"][4:7] == [[0.9, 0.95], None, 2]


def test_openrlhf_extend_carries_closes_and_opens_rows():
    data = {"tags": ["v0.1.0", "HEAD"], "clis": {"train_demo": [
        ["--keep", "keep", "store", "int", 1, None, None, 0, 1],
        ["--gone", "gone", "store", "int", 1, None, None, 0, 1],
        ["--respec", "respec", "store", "int", 1, None, None, 0, 1],
        ["--old", "old", "store", "int", 1, None, None, 0, 0]]}}
    new = [["--keep", "keep", "store", "int", 1, None, None], ["--respec", "respec", "store", "int", 2, None, None],
           ["--fresh", "fresh", "store", "str", openrlhf.UNKNOWN, None, None]]
    counts = openrlhf.extend(data, [("v0.2.0", {"train_demo": new})])
    assert data["tags"] == ["v0.1.0", "v0.2.0", "HEAD"]
    assert counts["added"] == 2 and counts["closed"] == 2 and counts["releases"] == ["v0.2.0"]
    spans = {(r[0], r[4]): (r[7], r[8]) for r in data["clis"]["train_demo"]}
    assert spans == {("--keep", 1): (0, 2), ("--gone", 1): (0, 0), ("--respec", 1): (0, 0),
                     ("--respec", 2): (1, 2), ("--fresh", None): (1, 2), ("--old", 1): (0, 0)}


def test_openrlhf_builder_needs_no_file_outside_the_repository():
    with open(openrlhf.__file__, encoding="utf-8") as fh:
        text = fh.read()
    assert "/work/" not in text and ".tsv" not in text


# -- DeepSpeed pydantic models and refused keys ------------------------------------------------------------------
def test_deepspeed_model_fields_aliases_inheritance_and_removed_keys():
    release = tree("deepspeed_tree", "deepspeed", "9.9.0")
    facts = deepspeed.release_facts(release)
    zero = facts["sections"]["zero_optimization"]
    assert zero["file"] == "deepspeed/runtime/zero/config.py"
    fields = zero["fields"]
    assert fields["stage"]["default"] == 0  # inherited from a base model
    assert "stage3_prefetch_bucket_size" in fields and fields["stage3_prefetch_bucket_size"]["field"] == \
        "prefetch_bucket_size"
    assert fields["cpu_offload"].get("deprecated") is True
    assert fields["overlap_comm"]["nullable"] and fields["compute_grad_norm"]["type"] == "bool"
    assert fields["legacy_knob"] == {"field": "legacy_knob", "type": "any", "nullable": True, "default": 5}
    assert "Config" not in fields
    assert facts["sections"]["zero_optimization.offload_optimizer"]["fields"]["pin_memory"]["default"] is True
    assert "bf16 (DeepSpeedBF16Config)" in facts["missing_models"]  # not in this tree: reported, not guessed
    assert facts["removed"] == {"amp": {"message": "AMP has been removed. See https://example.invalid/issues/1."},
                                "nebula": {"message": "Nebula has been removed."},
                                "zero_optimization.mics_shard_size": {"message": "MiCS has been removed."}}


def test_deepspeed_extend_adds_new_fields_and_closes_removed_ones():
    data = {"keys": {"zero_optimization.stage": {"mode": "strict"},
                     "zero_optimization.mics_shard_size": {"mode": "strict"},
                     "amp": {"mode": "open"}},
            "sections": {"zero_optimization": {"mode": "strict"}}, "aliases": {}}
    facts = deepspeed.release_facts(tree("deepspeed_tree", "deepspeed", "9.9.0"))
    counts = ds_extend(data, "9.9.0", facts)
    assert data["keys"]["zero_optimization.compute_grad_norm"]["since"] == "9.9.0"
    assert data["keys"]["zero_optimization.mics_shard_size"]["removed_in"] == "9.9.0"
    assert data["keys"]["amp"]["removed_in"] == "9.9.0"
    assert data["removed"]["amp"]["raises"] == "DeepSpeedConfigError"
    assert data["removed"]["amp"]["source"].endswith("/v9.9.0/deepspeed/runtime/config.py")
    assert counts["added"] >= 5 and counts["closed"] == 2


def test_deepspeed_top_level_keys_read_with_get_scalar_param_and_dict_get():
    facts = deepspeed.release_facts(tree("deepspeed_tree", "deepspeed", "9.9.0"))
    # constants through ``from .constants import *`` (the last assignment wins), a default argument, ``in``,
    # ``self._param_dict.get``; not the keys of a section's own dict, nor a function the config never calls
    assert facts["top_level"] == ["clipping", "comm_dtype", "eigen", "local_flag", "steps"]


def test_deepspeed_fold_top_level_adds_lenient_rows_with_ranges():
    from rlhf_lint.schemas.build.ds_config import fold_top_level

    data = {"keys": {"steps": {"mode": "lenient"}}, "sections": {}, "aliases": {}, "deprecated": {}}
    stored = {"0.10.3": {"top_level": ["steps", "eigen"]}, "0.14.5": {"top_level": ["steps", "eigen", "gc"]},
              "0.19.8": {"top_level": ["steps", "gc"]}}
    assert fold_top_level(data, stored) == {"added": 2, "closed": 1}
    assert data["keys"]["eigen"]["removed_in"] == "0.19.8" and "since" not in data["keys"]["eigen"]
    assert data["keys"]["gc"]["since"] == "0.14.5" and "removed_in" not in data["keys"]["gc"]
    assert data["keys"]["gc"]["source"].endswith("/v0.19.8/deepspeed/runtime/config.py")
    assert data["keys"]["steps"] == {"mode": "lenient"}  # a row of the table is left as it is


def test_deepspeed_release_facts_are_stored_compactly_and_read_back_whole(tmp_path, monkeypatch):
    from rlhf_lint.schemas.build import ds_config

    monkeypatch.setattr(ds_config, "FACTS_OUT", str(tmp_path / "releases.json"))
    stored = {"base": "0.19.6", "releases": {
        "0.19.7": {**_facts({"zero_optimization": ["stage", "knob"]}), "top_level": ["a", "b"]},
        "0.10.3": {**_facts({"zero_optimization": ["stage"], "bf16": ["enabled"]}), "top_level": ["a"]},
        "0.14.5": {**_facts({"zero_optimization": ["stage"], "bf16": ["enabled"]}), "top_level": ["a"]}}}
    ds_config.save_facts(stored)
    raw = json.loads((tmp_path / "releases.json").read_text())
    assert list(raw["releases"]) == ["0.10.3", "0.14.5", "0.19.7"]
    assert raw["releases"]["0.14.5"]["sections"]["zero_optimization"] == {"same_as": "0.10.3"}
    assert raw["releases"]["0.14.5"]["top_level"] == {"same_as": "0.10.3"}
    assert "fields" in raw["releases"]["0.19.7"]["sections"]["zero_optimization"]  # changed: written in full
    assert ds_config.load_facts()["releases"] == {v: stored["releases"][v] for v in raw["releases"]}


def test_deepspeed_refresh_summary_counts_rows_added_closed_and_bounded():
    from rlhf_lint.schemas.build.__main__ import format_summary
    from rlhf_lint.schemas.build.ds_config import diff_keys

    before = {"deepspeed": {"releases": ["0.19.6"], "version": "0.19.6"},
              "keys": {"a": {}, "b": {}, "c": {"removed_in": "0.19.6"}}, "removed": {}}
    after = {"deepspeed": {"releases": ["0.10.3", "0.19.6"], "version": "0.19.6"},
             "keys": {"a": {"since": "0.14.5"}, "b": {"removed_in": "0.19.7"}, "c": {"removed_in": "0.19.6"},
                      "d": {"since": "0.19.8"}}, "removed": {"e": {"since": "0.19.7"}}}
    d = diff_keys(before, after)
    assert d["rows"] == {"added": ["d", "e"], "closed": ["b"], "bounded": ["a"]}
    assert (d["added"], d["closed"], d["bounded"], d["releases"]) == (2, 1, 1, ["0.10.3"])
    assert format_summary([d]).splitlines()[1] == "ds_config_keys.json | 0.10.3 | 2 | 1 | 1 | 0.19.6"


def _facts(sections: dict) -> dict:
    return {"sections": {sec: {"file": "deepspeed/runtime/zero/config.py",
                               "fields": {k: {"field": k, "type": "int", "nullable": False} for k in keys}}
                         for sec, keys in sections.items()}, "removed": {}, "source": "x"}


def test_deepspeed_backfill_sets_since_closes_old_fields_and_keeps_unknown_starts_open():
    from rlhf_lint.schemas.build.ds_config import DS_VERSION, backfill

    data = {"keys": {"zero_optimization.stage": {"mode": "strict"},
                     "zero_optimization.new_knob": {"mode": "strict"},
                     "zero_optimization.newest_knob": {"mode": "strict"},
                     "bf16.enabled": {"mode": "strict"}},
            "sections": {"zero_optimization": {"mode": "strict"}, "bf16": {"mode": "strict"}},
            "aliases": {}, "deepspeed": {"source": "base"}}
    older = {"0.10.3": _facts({"zero_optimization": ["stage", "old_knob"]}),
             "0.12.6": _facts({"zero_optimization": ["stage", "new_knob", "old_knob"]}),
             "0.14.5": _facts({"zero_optimization": ["stage", "new_knob"], "bf16": ["enabled"]})}
    counts = backfill(data, older)
    keys = data["keys"]
    assert "since" not in keys["zero_optimization.stage"]  # in every release read: older than the table knows
    assert keys["zero_optimization.new_knob"]["since"] == "0.12.6"
    assert keys["zero_optimization.new_knob"]["since_source"].endswith("/v0.12.6/deepspeed/runtime/zero/config.py")
    assert keys["zero_optimization.newest_knob"]["since"] == DS_VERSION  # not in the newest older release read
    assert keys["zero_optimization.old_knob"]["removed_in"] == "0.14.5"  # only older releases had it
    assert "since" not in keys["zero_optimization.old_knob"]
    assert "since" not in keys["bf16.enabled"]  # before 0.14.5 no bf16 model: where it starts is not known
    assert data["sections"]["bf16"]["model_since"] == "0.14.5"
    assert counts == {"added": 3, "closed": 1}


def test_deepspeed_key_presence_between_and_outside_the_releases_read(monkeypatch):
    from rlhf_lint.frameworks import deepspeed as ds

    monkeypatch.setattr(ds, "read_releases", lambda: ["0.10.3", "0.12.6", "0.14.5", "0.19.6"])
    row = {"since": "0.14.5", "removed_in": "0.19.6"}
    assert ds.key_presence(row, "0.14.5")[0] == "yes"
    assert ds.key_presence(row, "0.12.0")[0] == "no"  # absent in 0.12.6 and before
    assert ds.key_presence(row, "0.13.0") == ("maybe", "added after 0.12.6, by 0.14.5")
    assert ds.key_presence(row, "0.9.0")[0] == "maybe"  # older than every release read
    assert ds.key_presence(row, "0.19.6") == ("no", "removed in DeepSpeed 0.19.6")
    assert ds.key_presence(row, "0.17.0")[0] == "maybe"  # between 0.14.5 (had it) and 0.19.6 (did not)
    assert ds.key_presence({}, "0.9.0")[0] == "yes"
    assert ds.before_edge("0.9.5") == "0.10.3" and ds.before_edge("0.11.0") is None


# -- verl, accelerate, ORZ -----------------------------------------------------------------------------------------
def test_verl_generated_config_is_flattened_with_sections():
    found = verl.release_keys(tree("verl_tree", "verl", "9.9.0"))
    assert set(found) == {"fsdp"}  # no Megatron config in this tree
    keys = found["fsdp"]["keys"]
    assert keys["actor_rollout_ref"] == {} and keys["actor_rollout_ref.actor.optim"] == {}
    assert keys["actor_rollout_ref.actor.optim.lr"] == 1e-6
    assert keys["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] is None
    assert keys["trainer.logger"] == ["console"]
    assert found["fsdp"]["source"].endswith("/v9.9.0/verl/trainer/config/_generated_ppo_trainer.yaml")
    # the model_engine config group's choices (verl 0.7.1 on): the files of config/model_engine/
    assert found["fsdp"]["model_engines"] == ["dp", "megatron"]
    assert found["fsdp"]["model_engines_source"].endswith("/v9.9.0/verl/trainer/config/model_engine/")


def test_accelerate_plugin_keys_are_the_subscripts_of_deepspeed_config():
    text = tree("accelerate_tree").read("accelerate/commands/config/cluster.py")
    assert accelerate.plugin_keys(text) == ["offload_optimizer_device", "zero3_init_flag", "zero_stage"]


def test_orz_fields_in_dataclass_order_with_overrides():
    data = orz.extract(os.path.join(HERE, "orz_tree"), "abc1234")
    assert list(data["fields"]) == ["seed", "actor_num_nodes", "prompt_data"]
    assert data["fields"]["seed"]["default"] == 42 and "default" not in data["fields"]["prompt_data"]
    assert data["base_config_fields"]["seed"]["default"] is None
    assert data["releases"] == ["abc1234"] and "/blob/abc1234/" in data["source"]


# -- Requires-Dist -------------------------------------------------------------------------------------------------
def test_requires_rows_from_metadata(tmp_path):
    wheel = tmp_path / "fakeframework-1.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(os.path.join(HERE, "METADATA"), "fakeframework-1.2.0.dist-info/METADATA")
        zf.writestr("fakeframework-1.2.0.data/purelib/fakeframework/__init__.py", "")
    release = Release("fakeframework", "1.2.0", str(wheel), "")
    assert "fakeframework/__init__.py" in release.names()  # a wheel's .data/purelib is its root
    dist = metadata_requires(release)
    assert len(dist) == 7
    rows = requires.rows_of("fakeframework", "1.2.0", dist, "src")
    assert [r[2:4] for r in rows] == [
        ["", "torch==2.14.0"], ["", "transformers<5.21.0,>=5.16.1"], ["vllm", "vllm==0.29.0"],
        ["gpu", 'flash-attn==2.8.3; sys_platform == "linux"']]  # bare names and dev extras pin nothing


def test_requires_coverage_ignores_open_ended_rows():
    rows = [{"package": "trl", "versions": ">=0.19"}, {"package": "trl", "versions": ">=0.28,<=1.0.0"}]
    assert requires.covered(rows, "trl", "1.0.0") and not requires.covered(rows, "trl", "1.1.0")


# -- the cache -----------------------------------------------------------------------------------------------------
def test_offline_cache_reuses_what_it_holds_and_refuses_the_rest(tmp_path):
    folder = tmp_path / "fakeframework-1.2.0"
    folder.mkdir()
    with zipfile.ZipFile(folder / "fakeframework-1.2.0-py3-none-any.whl", "w") as zf:
        zf.write(os.path.join(HERE, "METADATA"), "fakeframework-1.2.0.dist-info/METADATA")
    cache = Cache(str(tmp_path), offline=True, log=lambda m: None)
    assert cache.cached_versions("fakeframework") == ["1.2.0"]
    assert cache.release("fakeframework", "1.2.0").path.endswith(".whl")
    assert "torch==2.14.0" in cache.requires("fakeframework", "1.2.0")["requires_dist"]
    assert json.loads((folder / "requires.json").read_text())["requires_dist"][0] == "torch==2.14.0"
    with pytest.raises(Offline):
        cache.release("fakeframework", "1.3.0")
    with pytest.raises(Offline):
        cache.requires("fakeframework", "1.3.0")


def test_trl_config_defaults_follow_trl_bases_to_training_arguments():
    from rlhf_lint.schemas.build import trl

    wanted = {"per_device_train_batch_size", "gradient_checkpointing", "bf16", "fp16", "max_length", "packing",
              "num_generations", "max_completion_length"}
    found = trl.release_defaults(tree("trl_tree", "trl", "9.9.0"), wanted)
    assert set(found) == {"SFTConfig", "GRPOConfig"}  # a dataclass not derived from TrainingArguments is no config
    sft = found["SFTConfig"]["defaults"]
    # its own fields, its TRL base's (bf16 None: "unless fp16"), TrainingArguments' for the rest
    assert sft == {"per_device_train_batch_size": 8, "gradient_checkpointing": True, "bf16": trl.BF16_UNLESS_FP16,
                   "fp16": False, "max_length": 1024, "packing": False}
    grpo = found["GRPOConfig"]["defaults"]
    assert grpo["per_device_train_batch_size"] == 1 and grpo["gradient_checkpointing"] is False
    assert grpo["num_generations"] == 8 and "learning_rate" not in grpo
    assert found["SFTConfig"]["source"].endswith("/v9.9.0/trl/trainer/sft_config.py")
    assert newest_patches(["0.6.0", "0.7.1", "0.7.11", "0.7.2", "1.0.0rc1", "1.0.0", "x"], trl.OLDEST) == \
        ["0.7.11", "1.0.0"]


def test_swift_builder_reads_defaults_through_bases_and_the_presets(tmp_path):
    # a tiny ms-swift-shaped git repository written for this test: the builder reads it with `git show`, never imports
    import subprocess

    from rlhf_lint.schemas.build import swift

    repo = tmp_path / "ms-swift"
    (repo / "swift" / "llm" / "argument").mkdir(parents=True)
    (repo / "swift" / "llm" / "ds_config").mkdir(parents=True)
    (repo / "swift" / "llm" / "argument" / "base_args.py").write_text(
        "from dataclasses import dataclass, field\n"
        "@dataclass\nclass TunerArguments:\n    train_type: str = 'lora'\n    lora_rank: int = 8\n"
        "    target_modules: list = field(default_factory=lambda: ['all-linear'])\n"
        "@dataclass\nclass BaseArguments(TunerArguments):\n    max_length: int = None\n    lora_rank: int = 16\n")
    (repo / "swift" / "llm" / "argument" / "train_args.py").write_text(
        "from transformers import Seq2SeqTrainingArguments\nfrom .base_args import BaseArguments\n"
        "class TrainArguments(BaseArguments, Seq2SeqTrainingArguments):\n"
        "    gradient_checkpointing: bool = True\n    per_device_train_batch_size: int = 1\n"
        "    torch_dtype: str = compute_default()\n")
    (repo / "swift" / "llm" / "ds_config" / "zero3_offload.json").write_text(
        '{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true}, '
        '"overlap_comm": true}}')
    # the Megatron path: its own classes, deriving from the HF path's BaseArguments
    (repo / "swift" / "megatron" / "argument").mkdir(parents=True)
    (repo / "swift" / "megatron" / "argument" / "megatron_args.py").write_text(
        "from dataclasses import dataclass\n@dataclass\nclass MegatronArguments:\n"
        "    tensor_model_parallel_size: int = 1\n    use_distributed_optimizer: bool = True\n"
        "    recompute_granularity: str = 'selective'\n    max_length: int = 2048\n")
    (repo / "swift" / "megatron" / "argument" / "train_args.py").write_text(
        "from swift.llm.argument.base_args import BaseArguments\nfrom .megatron_args import MegatronArguments\n"
        "class MegatronTrainArguments(MegatronArguments, BaseArguments):\n    padding_free: bool = True\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
    for tag in ("v3.2.1", "v3.2.2", "v3.2.2.post1", "v2.6.0"):
        subprocess.run(git + ["tag", tag], check=True)
    gitdir = str(repo / ".git")
    assert swift.newest_patches(subprocess.run(git + ["tag"], capture_output=True, text=True).stdout.split()) == \
        ["3.2.2"]
    row = swift.extract(swift.GitTag(gitdir, "3.2.2"))
    fields = row["commands"]["sft"]["fields"]
    # own fields over the bases' in C3 order; a non-literal default is left out
    assert {k: v["default"] for k, v in fields.items()} == {
        "gradient_checkpointing": True, "per_device_train_batch_size": 1, "max_length": None, "lora_rank": 16,
        "train_type": "lora", "target_modules": ["all-linear"]}
    assert fields["lora_rank"]["class"] == "BaseArguments"
    assert fields["lora_rank"]["source"].endswith("/v3.2.2/swift/llm/argument/base_args.py#L10")
    assert "padding_free" not in fields  # the Megatron classes stay out of the HF path's rows
    megatron = row["megatron_commands"]["sft"]
    assert megatron["class"] == "MegatronTrainArguments" and "rlhf" not in row["megatron_commands"]
    # the HF path's tuner defaults (BaseArguments: LoRA) are not the Megatron path's: left out of its row
    assert {k: v["default"] for k, v in megatron["fields"].items()} == {
        "padding_free": True, "tensor_model_parallel_size": 1, "use_distributed_optimizer": True,
        "recompute_granularity": "selective", "max_length": 2048}
    assert megatron["fields"]["max_length"]["source"].endswith("/swift/megatron/argument/megatron_args.py#L7")
    assert row["deepspeed_presets"]["zero3_offload"]["stage"] == 3
    assert row["deepspeed_presets"]["zero3_offload"]["offload_optimizer"] == "cpu"
    assert row["deepspeed_presets"]["zero3_offload"]["offload_param"] == "none"
    # pin_memory only where the preset writes it
    assert row["deepspeed_presets"]["zero3_offload"]["offload_optimizer_pin_memory"] is True
    assert "offload_param_pin_memory" not in row["deepspeed_presets"]["zero3_offload"]
    # a release the mirror has no tag of is read from its wheel (here a folder of the same files): the same row,
    # its sources naming the release on the index
    from rlhf_lint.schemas.build.upstream import Release

    index = "https://pypi.org/project/ms-swift/3.2.2/"
    wheel = swift.extract(swift.Wheel(Release("ms-swift", "3.2.2", str(repo), index)))

    def defaults(r):
        return {c: {k: v["default"] for k, v in r[c]["sft"]["fields"].items()}
                for c in ("commands", "megatron_commands")}

    assert defaults(wheel) == defaults(row)
    assert wheel["commands"]["sft"]["fields"]["lora_rank"]["source"] == \
        "https://pypi.org/project/ms-swift/3.2.2/ (ms-swift) swift/llm/argument/base_args.py#L10"
    assert {k: {f: v for f, v in p.items() if f != "source"} for k, p in wheel["deepspeed_presets"].items()} == \
        {k: {f: v for f, v in p.items() if f != "source"} for k, p in row["deepspeed_presets"].items()}


def test_hf_parser_reads_dataclass_fields_and_the_scripts_parsers():
    from rlhf_lint.schemas.build import hf_parser

    tf = hf_parser.release_classes(tree("transformers_tree", "transformers", "4.99.0"), "transformers")
    # an attribute without annotation, a field(init=False) and a ClassVar are no flags
    assert tf["TrainingArguments"]["fields"] == ["output_dir", "per_device_train_batch_size", "evaluation_strategy"]
    release = tree("trl_tree", "trl", "9.9.0")
    classes = hf_parser.release_classes(release, "trl")
    assert classes["SFTConfig"]["bases"] == ["_SharedConfig"] and classes["_SharedConfig"]["bases"] == \
        ["TrainingArguments"]
    # scripts/utils.py holds the parser and the shared ScriptArguments; trainer/ comes first for a name defined twice
    assert classes["ScriptArguments"]["path"] == "trl/trainer/grpo_config.py"
    assert "SFTScriptArguments" not in classes  # a script's own dataclass belongs to that script
    import ast

    from rlhf_lint.schemas.build.dataclass_parsers import script_parser

    spec = script_parser(ast.parse(release.read("trl/scripts/sft.py")))
    assert spec["dataclasses"] == ["SFTScriptArguments", "SFTConfig", "ModelConfig"]
    assert spec["local"] == {"SFTScriptArguments": {"fields": ["dataset_name", "packing_hint"], "bases": []}}
    assert spec["parse"] == {"method": "parse_args_and_config", "fail_with_unknown_args": False,
                             "parser": "TrlParser"}
    assert script_parser(ast.parse(release.read("trl/scripts/utils.py"))) is None  # no parse call: no parser
    assert hf_parser._ranges([0, 1, 2, 5, 7, 8]) == [[0, 2], [5, 5], [7, 8]]


def test_verl_recipes_are_read_from_git_with_their_config_and_validation(tmp_path):
    # a tiny verl-shaped git repository written for this test: read with `git show`, nothing imported or run
    import subprocess

    from rlhf_lint.schemas.build import verl_recipes

    repo = tmp_path / "verl"
    files = {
        "verl/trainer/ppo/ray_trainer.py": "class RayPPOTrainer:\n    def __init__(self):\n        pass\n",
        "recipe/dapo/main_dapo.py": "import hydra\n@hydra.main(config_path='config', config_name='dapo_trainer')\n"
                                    "def main(config):\n    pass\n",
        "recipe/dapo/dapo_ray_trainer.py": "from verl.trainer.ppo.ray_trainer import RayPPOTrainer\n",
        "recipe/dapo/config/dapo_trainer.yaml": "hydra:\n  searchpath: [file://verl/trainer/config]\n"
                                                "defaults:\n  - ppo_trainer\n  - _self_\n"
                                                "algorithm:\n  filter_groups:\n    enable: false\n",
        "recipe/split/main_ppo.py": "from verl.utils.config import validate_config\nimport hydra\n"
                                    "@hydra.main(config_path='config', config_name='split_trainer')\n"
                                    "def main(config):\n    validate_config(config)\n",
        "recipe/split/config/split_trainer.yaml": "defaults:\n  - ppo_megatron_trainer\n  - _self_\n"
                                                  "rollout:\n  nnodes: 1\n  n_gpus_per_node: 8\n",
        "recipe/r1/main_eval.py": "import hydra\n@hydra.main(config_path='config', config_name='evaluation')\n"
                                  "def main(config):\n    pass\n",
        "recipe/r1/config/evaluation.yaml": "data:\n  path: x\n",
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
    rows = verl_recipes.recipes_at(str(repo / ".git"), "HEAD", "recipe/", lambda p: p, trainer_validates=False)
    assert sorted(rows) == ["recipe.dapo.main_dapo", "recipe.split.main_ppo"]  # evaluation composes no trainer
    dapo = rows["recipe.dapo.main_dapo"]
    assert dapo["config_name"] == "dapo_trainer" and dapo["validates"] is False  # 0.6+: main_ppo validates
    conf = dapo["configs"]["dapo_trainer"]
    assert conf["base"] == "ppo_trainer" and conf["keys"]["algorithm.filter_groups.enable"] is False
    assert "hydra.searchpath" not in conf["keys"] and not conf["rollout_pool"]
    split = rows["recipe.split.main_ppo"]
    assert split["validates"] is True and split["configs"]["split_trainer"]["base"] == "ppo_megatron_trainer"
    assert split["configs"]["split_trainer"]["rollout_pool"] is True
    # up to 0.5 RayPPOTrainer.__init__ validated: a recipe subclassing it ran the checks
    older = verl_recipes.recipes_at(str(repo / ".git"), "HEAD", "recipe/", lambda p: p, trainer_validates=True)
    assert older["recipe.dapo.main_dapo"]["validates"] is True


def test_hf_parser_reads_llamafactory_train_arguments_with_transformers_bases():
    from rlhf_lint.schemas.build import hf_parser

    release = tree("llamafactory_tree", "llamafactory", "9.9.0")
    classes = hf_parser.release_classes(release, "llamafactory")
    # BaseTrainingArguments is a module-level alias of transformers' class: the base names transformers
    assert classes["TrainingArguments"]["bases"] == ["RayArguments", "transformers:Seq2SeqTrainingArguments"]
    assert classes["ModelArguments"] == {"fields": ["image_max_pixels"], "bases": ["BaseModelArguments"],
                                         "path": "llamafactory/hparams/model_args.py"}
    assert hf_parser.train_parser(release) == ["ModelArguments", "TrainingArguments"]
