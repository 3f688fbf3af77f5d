"""A TRL script sharding a 4-bit model with the Trainer's FSDP (issue 15): the recipe it reads with --config is read
even when its keys are the script's own, FSDP_CPU_RAM_EFFICIENT_LOADING reaches the estimate, and host RAM counts
the quantized checkpoint, not a full fp32 copy."""
from lintutil import build_written

from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import estimate

SCRIPT = """import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments
from peft import LoraConfig
from trl import SFTTrainer, TrlParser

args = TrlParser((TrainingArguments,)).parse_args_and_config()
quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-70B", quantization_config=quant,
                                             torch_dtype=torch.bfloat16)
SFTTrainer(model=model, args=args, peft_config=LoraConfig(r=16, target_modules="all-linear")).train()
"""
# a recipe whose first key is the script's own field: nothing in it marks it as a training config by its keys
RECIPE = ("model_id: meta-llama/Meta-Llama-3-70B\nper_device_train_batch_size: 1\nbf16: true\n"
          "gradient_checkpointing: true\nfsdp: full_shard auto_wrap offload\n")


def job(tmp_path, env=""):
    (j,) = build_written(tmp_path, {
        "run.sh": f"{env}torchrun --nproc_per_node=4 train.py --config recipe.yaml\n",
        "train.py": SCRIPT, "recipe.yaml": RECIPE, "requirements.txt": "trl==0.8.6\n"}).jobs
    return j


def host(j):
    node = estimate(j, Hardware(gpu="A10G", gpus_per_node=4, host_memory=192 * 2**30)).nodes[0]
    return {t.name: t for t in node.persistent + node.transient}, node


def test_a_recipe_named_by_the_launch_is_read_whatever_its_keys(tmp_path):
    j = job(tmp_path)
    assert j.value("hf.config_path") == "recipe.yaml" and j.value("batch.micro_train") == 1
    assert j.value("train.strategy") == "fsdp" and j.value("offload.param") == "cpu"
    assert j.value("train.gradient_checkpointing") is True


def test_efficient_loading_from_the_environment_loads_the_quantized_model_on_rank_0(tmp_path):
    j = job(tmp_path, "ACCELERATE_USE_FSDP=1 FSDP_CPU_RAM_EFFICIENT_LOADING=1 ")
    assert j.value("train.fsdp_cpu_ram_efficient_loading") is True
    terms, node = host(j)
    # the 4-bit model (about 40 GiB for 70B), once; not rank 0's fp32 copy (263 GiB) that verl's loading holds
    assert 30 * 2**30 < terms["loading:policy"].bytes < 45 * 2**30 and "rank 0" in terms["loading:policy"].formula
    assert node.fits is True


def test_without_it_each_rank_streams_its_shards_onto_its_gpu(tmp_path):
    j = job(tmp_path)
    assert j.value("train.fsdp_cpu_ram_efficient_loading") is None
    terms, node = host(j)
    assert terms["loading:policy"].bytes == 4 * 5_000_000_000 and node.fits is True


def test_a_named_recipe_over_the_bounds_is_left_unread_and_the_file_stays_as_it_was(tmp_path):
    # an alias bomb given with --config: read within the YAML bounds, so it expands nothing; the job keeps the
    # Trainer's defaults, and the file's own tree and notes are those it had before the launch named it
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 8)}]\n" for i in range(1, 25))
    project = build_written(tmp_path, {"run.sh": "torchrun --nproc_per_node=4 train.py --config recipe.yaml\n",
                                       "train.py": SCRIPT, "recipe.yaml": bomb})
    (j,) = project.jobs
    assert j.value("hf.config_path") is None and j.value("train.strategy") == "ddp"
    recipe = next(s for s in project.sources.values() if s.path.endswith("recipe.yaml"))
    assert recipe.tree is None and recipe.skipped == [] and recipe.named_docs == []


def test_fsdp1_offload_pins_a_gradient_shard_as_large_as_the_parameter_shard(tmp_path):
    # FSDP1 allocates each offloaded unit's _cpu_grad like its whole local shard, frozen 4-bit base included: the
    # published run of this setup took 127 GB of CPU RAM (118 GiB; ours 121.9 with the rank-0 load)
    terms, node = host(job(tmp_path, "ACCELERATE_USE_FSDP=1 FSDP_CPU_RAM_EFFICIENT_LOADING=1 "))
    parked = terms["params:policy"].bytes
    four_bit_base = 0.5 * resolve_model("meta-llama/Meta-Llama-3-70B").param_count
    assert parked > 2 * 0.9 * four_bit_base  # the shards and their gradient buffers, over the 4 ranks
    assert 110 * 2**30 < node.total < 130 * 2**30
