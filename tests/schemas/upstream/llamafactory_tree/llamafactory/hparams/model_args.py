from dataclasses import dataclass


@dataclass
class BaseModelArguments:
    model_name_or_path: str = ""


@dataclass
class ModelArguments(BaseModelArguments):
    image_max_pixels: int = 0
