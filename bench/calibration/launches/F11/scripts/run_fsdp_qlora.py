import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments
from peft import LoraConfig
from trl import SFTTrainer
from trl.commands.cli_utils import TrlParser

parser = TrlParser((TrainingArguments,))
training_args = parser.parse_args_and_config()
quantization_config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-70b", quantization_config=quantization_config,
                                             attn_implementation="sdpa", torch_dtype=torch.bfloat16)
peft_config = LoraConfig(r=16, target_modules="all-linear")
trainer = SFTTrainer(model=model, args=training_args, peft_config=peft_config, max_seq_length=3072, packing=True)
trainer.train()
