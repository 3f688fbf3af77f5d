from dataclasses import dataclass
from typing import Optional


@dataclass
class BaseConfig:
    seed: Optional[int] = None
