from dataclasses import dataclass, field

from transformers import TrainingArguments


@dataclass
class _SharedConfig(TrainingArguments):
    gradient_checkpointing: bool = field(default=True, metadata={"help": "on by default here"})
    bf16: bool | None = field(default=None, metadata={"help": "None: on unless fp16"})
