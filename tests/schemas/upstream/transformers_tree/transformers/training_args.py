from dataclasses import dataclass, field
from typing import ClassVar


@dataclass
class TrainingArguments:
    framework = "pt"
    output_dir: str = field(default=None)
    per_device_train_batch_size: int = 8
    evaluation_strategy: str = "no"
    _n_gpu: int = field(init=False, repr=False, default=-1)
    default_optim: ClassVar[str] = "adamw_torch"
