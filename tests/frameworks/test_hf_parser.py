"""What HfArgumentParser / TrlParser accept (rlhf_lint.frameworks.hf_parser): a script's parser read statically,
the fields of its dataclasses at a release (schemas/hf/parser_fields.json), and the flags argparse takes."""
from __future__ import annotations

import ast

from lintutil import build_written
from rlhf_lint.frameworks import hf_parser as hp
from rlhf_lint.schemas.build.dataclass_parsers import script_parser


class _Script:
    def __init__(self, text: str, path: str = "train.py"):
        self.tree, self.path = ast.parse(text), path


def _index(package: str, version: str) -> int:
    return hp.table()[package]["releases"].index(version)


def test_accepts_dash_aliases_negated_booleans_and_abbreviations():
    names = {"learning_rate", "gradient_checkpointing", "bf16"}
    assert hp.accepts(names, "--learning_rate") and hp.accepts(names, "--learning-rate")
    assert hp.accepts(names, "--no_gradient_checkpointing") and hp.accepts(names, "--no-gradient-checkpointing")
    assert hp.accepts(names, "--learn")  # argparse expands an abbreviation
    assert not hp.accepts(names, "--learnig_rate") and not hp.accepts(names, "--fp16")


def test_script_parser_reads_the_tuple_through_a_name_and_marks_what_it_cannot_read():
    spec = script_parser(ast.parse(
        "from trl import TrlParser, SFTConfig\nimport transformers\ntypes = (SFTConfig, transformers.TrainingArguments)\n"
        "p = TrlParser(types)\na, b = p.parse_args_and_config(return_remaining_strings=True)\n"))
    assert spec["dataclasses"] == ["SFTConfig", "transformers.TrainingArguments"]
    assert spec["parse"] == {"method": "parse_args_and_config", "return_remaining_strings": True,
                             "parser": "TrlParser"}
    computed = script_parser(ast.parse(
        "from transformers import HfArgumentParser, TrainingArguments\np = HfArgumentParser(TrainingArguments)\n"
        "a, = p.parse_args_into_dataclasses(args=argv[1:])\n"))
    assert computed["parse"]["unread"] is True  # parses a list the script builds
    two = "from transformers import HfArgumentParser as H, TrainingArguments as T\nH(T).parse_args_into_dataclasses()\n" \
          "H(T).parse_args_into_dataclasses()\n"
    assert script_parser(ast.parse(two)) is None  # which of two parsers reads the command line is not known
    assert script_parser(ast.parse("from trl import TrlParser\nTrlParser(make_types()).parse_args_and_config()\n")) \
        is None


def test_project_parser_resolves_aliases_module_attributes_and_a_subclass_of_the_same_name():
    fastchat = hp.project_parser(_Script(
        "from dataclasses import dataclass, field\nimport transformers\n@dataclass\nclass DataArguments:\n"
        "    data_path: str = None\n@dataclass\nclass TrainingArguments(transformers.TrainingArguments):\n"
        "    model_max_length: int = 512\n"
        "p = transformers.HfArgumentParser((DataArguments, TrainingArguments))\np.parse_args_into_dataclasses()\n"))
    assert fastchat.classes == [("local", "DataArguments"), ("local", "TrainingArguments")]
    assert fastchat.local["TrainingArguments"]["bases"] == [("transformers", "TrainingArguments")]
    assert not fastchat.uses_trl
    names = hp.fields(fastchat, None, _index("transformers", "4.44.2"))
    assert {"data_path", "model_max_length", "learning_rate", "evaluation_strategy"} <= names
    aliased = hp.project_parser(_Script("from trl import SFTConfig as Cfg, TrlParser\n"
                                        "TrlParser((Cfg,)).parse_args_and_config()\n"))
    assert aliased.classes == [("trl", "SFTConfig")] and aliased.uses_trl
    # a dataclass from another module (open-r1's configs): its fields are unknown, so the parser is
    assert hp.project_parser(_Script("from open_r1.configs import SFTConfig\nfrom trl import TrlParser\n"
                                     "TrlParser((SFTConfig,)).parse_args_and_config()\n")) is None


def test_fields_follow_the_release():
    parser = hp.Parser([("trl", "SFTConfig")])
    tf = _index("transformers", "4.56.2")
    assert "max_seq_length" in hp.fields(parser, _index("trl", "0.19.1"), tf)
    assert "max_seq_length" not in hp.fields(parser, _index("trl", "0.21.0"), tf)  # renamed max_length in 0.20
    assert "max_length" in hp.fields(parser, _index("trl", "0.21.0"), tf)
    assert hp.fields(hp.Parser([("trl", "NoSuchConfig")]), _index("trl", "0.21.0"), tf) is None
    assert hp.releases_having("trl", ["SFTConfig"], "max_seq_length")[-1] == "0.19.1"


def _unknown(tmp_path, pins: str):
    from rlhf_lint.frameworks.launchers import commands_of

    tmp_path = tmp_path / pins.split("\n")[0].replace("=", "")  # a folder per case: projects are cached by path
    project = build_written(tmp_path, {
        "requirements.txt": pins,
        "sft.py": "from trl import SFTConfig, ModelConfig, TrlParser\n"
                  "TrlParser((SFTConfig, ModelConfig)).parse_args_and_config()\n",
        "run.sh": "accelerate launch sft.py --max_seq_length 4096 --model_name_or_path x --lora-r 8 --eval_strat steps\n",
    })
    source = project.sources[str(tmp_path / "run.sh")]
    return hp.unknown_arguments(commands_of(source, project)[0], project)


def test_a_launch_is_checked_at_the_pinned_releases(tmp_path):
    assert _unknown(tmp_path, "trl==0.19.1\ntransformers==4.56.2\n") == []  # 0.19.1 still has max_seq_length
    found = _unknown(tmp_path, "trl==0.21.0\ntransformers==4.56.2\n")
    assert [(u.name, u.certain) for u in found] == [("--max_seq_length", True)]
    assert "HfArgumentParser raises" in found[0].message
    assert "TRL 0.9.6 .. 0.19.1 have it" in found[0].message
    # a release newer than the table may have it again: a warning that says so
    newer = _unknown(tmp_path, "trl==9.0.0\ntransformers==4.56.2\n")
    assert [(u.name, u.certain) for u in newer] == [("--max_seq_length", False)]
    assert "newer than the newest release rlhf-lint knows" in newer[0].message


def test_trl_parser_over_transformers_dataclasses_follows_the_trl_release(tmp_path):
    # TrlParser((ScriptArguments, TrainingArguments)) holds no TRL dataclass, yet what it does with a recipe key no
    # dataclass has is TRL's: TRL 0.8-0.10 drop it silently (a warning), TRL 0.19+ raise (an error)
    script = ("from dataclasses import dataclass\nfrom transformers import TrainingArguments\n"
              "from trl import TrlParser\n\n@dataclass\nclass ScriptArguments:\n    model_id: str = 'm'\n\n"
              "script_args, args = TrlParser((ScriptArguments, TrainingArguments)).parse_args_and_config()\n")

    def findings(trl):
        project = build_written(tmp_path / trl, {
            "run.sh": "torchrun --nproc_per_node=2 train.py --config recipe.yaml\n", "train.py": script,
            "recipe.yaml": "model_id: m\nmax_seq_len: 3072\nper_device_train_batch_size: 1\n",
            "requirements.txt": f"trl=={trl}\ntransformers==4.46.0\n"})
        (command,) = [c for s in project.sources.values() if s.path.endswith("run.sh")
                      for c in __import__("rlhf_lint.frameworks.launchers", fromlist=["x"]).commands_of(s, project)]
        return [(u.name, u.certain) for u in hp.unknown_arguments(command, project)]

    assert findings("0.9.6") == [("max_seq_len", False)]  # model_id is the script's own field
    assert findings("0.19.1") == [("max_seq_len", True)]

