from dataclasses import dataclass

from transformers import HfArgumentParser


@dataclass
class ScriptArguments:
    dataset_name: str = "x"


class TrlParser(HfArgumentParser):
    """Example: parser = TrlParser((ScriptArguments,)); parser.parse_args_and_config()"""
