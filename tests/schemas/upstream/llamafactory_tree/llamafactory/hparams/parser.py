from transformers import HfArgumentParser

from .model_args import ModelArguments
from .training_args import TrainingArguments

_TRAIN_ARGS = [ModelArguments, TrainingArguments]
_INFER_ARGS = [ModelArguments]
