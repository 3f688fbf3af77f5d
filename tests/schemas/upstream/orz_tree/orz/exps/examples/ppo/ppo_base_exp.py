from dataclasses import dataclass, field

from orz.exps.base_exp import BaseConfig


@dataclass
class BasePPOExpConfig(BaseConfig):
    actor_num_nodes: int = 1
    prompt_data: list = field(default_factory=list)
    seed: int = 42
