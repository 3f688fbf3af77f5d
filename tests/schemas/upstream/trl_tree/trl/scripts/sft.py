import argparse
from dataclasses import dataclass

from trl import ModelConfig, SFTConfig, TrlParser


@dataclass
class SFTScriptArguments:
    dataset_name: str = "x"
    packing_hint: bool = False


def make_parser(subparsers: argparse._SubParsersAction | None = None):
    dataclass_types = (SFTScriptArguments, SFTConfig, ModelConfig)
    return TrlParser(dataclass_types)


if __name__ == "__main__":
    script_args, training_args, model_args = make_parser().parse_args_and_config(fail_with_unknown_args=False)
