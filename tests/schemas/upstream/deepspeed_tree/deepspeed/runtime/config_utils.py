from pydantic import BaseModel


class DeepSpeedConfigModel(BaseModel):
    pass
