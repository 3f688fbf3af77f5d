# A LLaMA-Factory-shaped hparams module written for tests/schemas (not copied): an aliased transformers base.
from dataclasses import dataclass, field

from transformers import Seq2SeqTrainingArguments

if False:
    from other import Seq2SeqTrainingArguments as OtherArguments

    BaseTrainingArguments = OtherArguments
else:
    BaseTrainingArguments = Seq2SeqTrainingArguments


@dataclass
class RayArguments:
    ray_num_workers: int = 1


@dataclass
class TrainingArguments(RayArguments, BaseTrainingArguments):
    use_fp8: bool = False
