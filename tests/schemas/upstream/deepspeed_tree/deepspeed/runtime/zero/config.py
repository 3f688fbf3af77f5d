from typing import Optional

from pydantic import Field

from deepspeed.runtime.config_utils import DeepSpeedConfigModel


class DeepSpeedZeroOffloadOptimizerConfig(DeepSpeedConfigModel):
    device: str = "none"
    pin_memory: bool = True


class DeepSpeedZeroBase(DeepSpeedConfigModel):
    stage: int = 0


class DeepSpeedZeroConfig(DeepSpeedZeroBase):
    overlap_comm: Optional[bool] = None
    prefetch_bucket_size: int = Field(50000000, alias="stage3_prefetch_bucket_size")
    cpu_offload: Optional[bool] = Field(None, json_schema_extra={"deprecated": True, "new_param": "offload_optimizer"})
    offload_optimizer: Optional[DeepSpeedZeroOffloadOptimizerConfig] = None
    compute_grad_norm: bool = True
    legacy_knob = 5  # pydantic v1: an un-annotated attribute with a default is a field

    class Config:
        extra = "forbid"
