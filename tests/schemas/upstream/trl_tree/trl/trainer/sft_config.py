from dataclasses import dataclass, field

from .base_config import _SharedConfig


@dataclass
class SFTConfig(_SharedConfig):
    max_length: int | None = field(default=1024)
    packing: bool = False
    dataset_text_field: str = "text"
    model_init_kwargs: dict | None = field(default_factory=dict)
