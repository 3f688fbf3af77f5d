from dataclasses import dataclass, field

from transformers import TrainingArguments


@dataclass
class GRPOConfig(TrainingArguments):
    per_device_train_batch_size: int = field(default=1)
    num_generations: int = 8
    max_completion_length: int | None = field(default=256)
    learning_rate: float = 1e-6


@dataclass
class ScriptArguments:
    max_length: int = 99
