"""HF Trainer / TRL / LLaMA-Factory launches read as jobs (rlhf_lint.frameworks.hf)."""
from __future__ import annotations

import os

from lintutil import build_written


def _jobs(tmp_path, files: dict):
    return build_written(tmp_path, files).jobs


def test_module_launch_with_deepspeed_file_is_an_hf_trainer_job(tmp_path):
    (job,) = _jobs(tmp_path, {"train.sh": "torchrun --nproc_per_node 4 -m pkg.train --deepspeed ds.json "
                                          "--per-device-train-batch-size 4 --gradient_accumulation_steps 2 --bf16 "
                                          "--model_name_or_path Qwen/Qwen2.5-7B --gradient_checkpointing false\n"})
    assert job.framework == "hf"
    assert job.value("batch.micro_train") == 4 and job.value("batch.grad_accum") == 2
    assert job.value("precision.param_dtype") == "bf16" and job.value("model.policy.path") == "Qwen/Qwen2.5-7B"
    assert job.value("train.gradient_checkpointing") is False and job.value("hf.certain") is False
    assert job.value("topology.world_size") == 4


def test_trl_cli_reads_the_recipe_and_flags_win(tmp_path):
    jobs = _jobs(tmp_path, {
        "run.sh": "trl grpo --config recipes/grpo.yaml --num_generations 4 --fp16 false\n",
        "recipes/grpo.yaml": "model_name_or_path: Qwen/Qwen2.5-1.5B\nper_device_train_batch_size: 2\n"
                             "num_generations: 16\nbf16: true\nuse_vllm: true\nvllm_mode: colocate\n"
                             "use_peft: true\nload_in_4bit: true\nuse_liger_loss: true\nmax_completion_length: 512\n",
    })
    (job,) = jobs  # the recipe named by a launch is no job of its own
    assert job.framework == "trl" and job.value("job.type") == "grpo" and job.value("hf.certain") is True
    assert job.value("trl.num_generations") == 4 and job.settings.get("trl.num_generations").path.endswith("run.sh")
    assert job.value("precision.param_dtype") == "bf16"  # fp16 false leaves bf16 on
    assert job.value("trl.use_vllm") is True and job.value("trl.vllm_mode") == "colocate"
    assert job.value("train.lora_rank") == 16 and job.value("train.quantization") == "4bit"
    assert job.value("train.fused_loss") is True and job.value("seq.generate_max_len") == 512
    recipe_span = job.settings.get("batch.micro_train")
    text = (tmp_path / "recipes/grpo.yaml").read_text()
    assert text[recipe_span.span.start:recipe_span.span.end] == "2"


def test_llamafactory_cli_yaml_and_overrides(tmp_path):
    jobs = _jobs(tmp_path, {
        "run.sh": "llamafactory-cli train lf.yaml cutoff_len=4096\n",
        "lf.yaml": "model_name_or_path: Qwen/Qwen3-4B\nstage: dpo\nfinetuning_type: full\nquantization_bit: 4\n"
                   "per_device_train_batch_size: 1\ngradient_accumulation_steps: 8\ncutoff_len: 2048\n"
                   "enable_liger_kernel: true\noptim: paged_adamw_8bit\n",
    })
    (job,) = jobs
    assert job.framework == "llamafactory" and job.value("job.type") == "dpo"
    assert job.value("seq.max_len") == 4096 and job.value("train.lora_rank") == 0
    assert job.value("train.quantization") == "4bit" and job.value("train.optimizer") == "paged_adamw_8bit"
    assert job.value("hf.config_path") == "lf.yaml"


def test_llamafactory_default_is_lora_rank_8(tmp_path):
    (job,) = _jobs(tmp_path, {"lf.yaml": "model_name_or_path: m\nstage: sft\nper_device_train_batch_size: 2\n"})
    assert job.framework == "llamafactory" and job.value("train.lora_rank") == 8


def test_unread_recipe_makes_the_job_uncertain(tmp_path):
    (job,) = _jobs(tmp_path, {"run.sh": "trl sft --config missing.yaml --deepspeed ds.json\n"})
    assert job.framework == "trl" and job.value("hf.certain") is False


def test_plain_python_program_is_not_an_hf_job(tmp_path):
    (job,) = _jobs(tmp_path, {"run.sh": "deepspeed train.py --deepspeed --deepspeed_config ds.json\n"})
    assert job.framework == "deepspeed"


def test_trainer_like_flags_alone_do_not_make_an_hf_trainer_job(tmp_path):
    # HF's *_no_trainer.py examples parse the TrainingArguments names with argparse and accelerate
    (job,) = _jobs(tmp_path, {"run.sh": "torchrun --nproc_per_node 2 run_glue_no_trainer.py "
                                        "--model_name_or_path bert-base-uncased --per_device_train_batch_size 32\n"})
    assert job.framework == "torchrun" and job.value("batch.micro_train") is None


def test_memory_models_lora_and_plain_data_parallel_jobs(tmp_path):
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    recipe = "model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\nper_device_train_batch_size: 4\n"
    jobs = _jobs(tmp_path, {
        "lora.yaml": recipe + "finetuning_type: lora\ndeepspeed: ds.json\n",
        "full.yaml": recipe + "finetuning_type: full\ndeepspeed: ds.json\n",
        "ddp.yaml": recipe + "finetuning_type: full\n",
        "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 0}}\n',
    })
    by_name = {j.path.rsplit("/", 1)[1]: j for j in jobs}
    lora, full, ddp = by_name["lora.yaml"], by_name["full.yaml"], by_name["ddp.yaml"]
    assert lora.value("train.lora_rank") == 8 and lora.value("train.gradient_checkpointing") is True
    assert ddp.value("train.strategy") == "ddp" and ddp.value("train.flash_attn") is True
    hw = Hardware(gpu="A100-80GB")
    estimates = {name: estimate(job, hw) for name, job in (("lora", lora), ("full", full), ("ddp", ddp))}
    assert all(e.unmodelled is None and e.groups for e in estimates.values())
    # a frozen base has no gradients or optimizer states: far below full fine-tuning of the same model
    assert estimates["lora"].groups[0].peak < 0.5 * estimates["full"].groups[0].peak


def test_trl_script_from_a_checkout_is_a_trl_job(tmp_path):
    (job,) = _jobs(tmp_path, {"run.sh": "accelerate launch --num_processes 2 trl/scripts/dpo.py "
                                        "--model_name_or_path Qwen/Qwen2-0.5B --per_device_train_batch_size 2\n"})
    assert job.framework == "trl" and job.value("job.type") == "dpo" and job.value("batch.micro_train") == 2


def test_grpo_check_needs_trl_not_a_script_name(tmp_path):
    from lintutil import run

    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node 3 my_grpo.py --deepspeed ds.json "
                                     "--per_device_train_batch_size 4\n")
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}\n')
    result = run([tmp_path], ["A010"])
    assert [d.code for d in result.diagnostics] == []
    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node 3 -m trl.scripts.grpo --deepspeed ds.json "
                                     "--per_device_train_batch_size 4\n")
    result = run([tmp_path], ["A010"])
    assert [(d.code, d.severity.name) for d in result.diagnostics] == [("A010", "WARNING")]  # trl not pinned


def test_grpo_check_takes_a_plain_python_launch_as_one_process(tmp_path):
    from lintutil import run

    (tmp_path / "requirements.txt").write_text("trl==0.19.1\n")
    (tmp_path / "run.sh").write_text("python -m trl.scripts.grpo --per_device_train_batch_size 2 "
                                     "--num_generations 8\n")
    (d,) = run([tmp_path], ["A010"]).diagnostics
    # 2 per device x 1 process x 1 step: TRL refuses 8 generations; a warning, as the script may start others
    assert d.severity.name == "WARNING" and "one process assumed" in d.message and "GRPO batch 2" in d.message
    (tmp_path / "run.sh").write_text("python -m trl.scripts.grpo --per_device_train_batch_size 8 "
                                     "--num_generations 8\n")
    assert run([tmp_path], ["A010"]).diagnostics == []


def test_a_recipe_or_accelerate_config_not_checked_is_named_in_the_assumptions(tmp_path):
    # only the files checked are read: `rlhf-lint estimate run.sh` alone must say what it left unread
    run = "accelerate launch --config_file fsdp.yaml sft.py --config recipe.yaml --deepspeed ds.json\n"
    (job,) = _jobs(tmp_path, {"run.sh": run})
    unread = [a for a in job.assumptions if "is not among the files checked" in a]
    assert any("recipe.yaml" in a for a in unread) and any("fsdp.yaml" in a for a in unread)
    assert any("ds.json" in a for a in unread) and job.value("deepspeed.config_unread") == "ds.json"
    (tmp_path / "recipe.yaml").write_text("model_name_or_path: Qwen/Qwen2.5-7B\nbf16: true\noutput_dir: out\n")
    (tmp_path / "fsdp.yaml").write_text("distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 8\n")
    jobs = _jobs(tmp_path, {"run.sh": run, "recipe.yaml": (tmp_path / "recipe.yaml").read_text(),
                            "fsdp.yaml": (tmp_path / "fsdp.yaml").read_text(),
                            "ds.json": '{"zero_optimization": {"stage": 3}}\n'})
    launch = next(j for j in jobs if j.path.endswith("run.sh"))
    assert not [a for a in launch.assumptions if "is not among the files checked" in a]
    assert launch.value("deepspeed.config_unread") is None and launch.value("zero.stage") == 3


def test_llamafactory_pure_bf16_keeps_lora_adapters_half(tmp_path):
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    recipe = ("model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\nfinetuning_type: lora\nbf16: true\n"
              "per_device_train_batch_size: 1\n")
    jobs = _jobs(tmp_path, {"up.yaml": recipe, "pure.yaml": recipe + "pure_bf16: true\n"})
    by_name = {j.path.rsplit("/", 1)[1]: j for j in jobs}
    assert by_name["pure.yaml"].value("precision.half_trainable") is True
    states = {name: {t.name: t.bytes for t in estimate(job, Hardware(gpu="A100-80GB"), versions={"peft": "0.12.0"})
                     .role("policy").terms}["optimizer_states"] for name, job in by_name.items()}
    # LLaMA-Factory upcasts the adapters to fp32 (AdamW m + v 8 B each) unless pure_bf16 (2 + 2 B)
    assert states["up.yaml"] == 2 * states["pure.yaml"] > 0


def test_public_trl_scripts_and_imported_trainers_make_hf_launches(tmp_path):
    # TRL's examples/scripts/sft.py and open-r1's grpo.py with flags only: no --config, the scripts not in the project;
    # scripts the project holds: their imports decide (read as text, never imported)
    jobs = _jobs(tmp_path, {
        "run.sh": "accelerate launch examples/scripts/sft.py --model_name_or_path Qwen/Qwen2.5-0.5B"
                  " --per_device_train_batch_size 4 --gradient_checkpointing\n"
                  "accelerate launch src/open_r1/grpo.py --model_name_or_path Qwen/Qwen2.5-0.5B\n",
        "train.py": "import torch\nfrom trl import (\n    DPOConfig,\n    DPOTrainer,\n)\n",
        "loop.py": "from transformers import AutoModelForCausalLM\n",
        "other.sh": "python train.py --per_device_train_batch_size 2\npython loop.py --per_device_train_batch_size 2\n",
    })
    by_entry = {j.value("job.entry"): j for j in jobs}
    sft = by_entry["examples/scripts/sft.py"]
    assert (sft.framework, sft.value("job.type"), sft.value("batch.micro_train")) == ("trl", "sft", 4)
    assert sft.value("train.gradient_checkpointing") is True
    assert by_entry["src/open_r1/grpo.py"].value("job.type") == "grpo"
    dpo = by_entry["train.py"]
    assert (dpo.framework, dpo.value("job.type"), dpo.value("batch.micro_train")) == ("trl", "dpo", 2)
    # a script that imports no trainer stays a plain launch: its flags are not taken for TrainingArguments
    assert by_entry["loop.py"].framework not in ("hf", "trl")


def test_a_scripts_positional_yaml_is_its_recipe(tmp_path):
    # alignment-handbook: `scripts/run_dpo.py recipe.yaml` (H4ArgumentParser reads a first positional YAML)
    jobs = _jobs(tmp_path, {
        "recipe.yaml": "model_name_or_path: Qwen/Qwen2.5-0.5B\nbeta: 0.1\nmax_length: 1024\n"
                       "per_device_train_batch_size: 2\ngradient_checkpointing: true\nlearning_rate: 5.0e-7\n"
                       "bf16: true\n",
        "run.sh": "accelerate launch scripts/run_dpo.py recipe.yaml --per_device_train_batch_size=1\n",
    })
    (job,) = jobs  # the recipe named by the launch is no job of its own
    assert (job.framework, job.value("job.type"), job.value("trl.beta"), job.value("seq.max_len")) == \
        ("trl", "dpo", 0.1, 1024)
    micro = job.settings.get("batch.micro_train")
    assert micro.value == 1 and micro.path.endswith("run.sh")  # the flag wins over the recipe
    assert job.value("hf.config_path") == "recipe.yaml"


def test_a_json_recipe_is_read_like_a_yaml_one(tmp_path):
    # HF's example scripts: parse_json_file for `train.py args.json`; TRL's --config: yaml.safe_load reads JSON too
    recipe = ('{"model_name_or_path": "Qwen/Qwen2.5-0.5B", "beta": 0.1, "max_length": 1024,\n'
              ' "per_device_train_batch_size": 2, "gradient_checkpointing": true, "bf16": true}\n')
    jobs = _jobs(tmp_path, {"recipe.json": recipe,
                            "run.sh": "accelerate launch scripts/run_dpo.py recipe.json --per_device_train_batch_size=1\n"})
    (job,) = jobs
    assert (job.framework, job.value("job.type"), job.value("trl.beta"), job.value("seq.max_len")) == \
        ("trl", "dpo", 0.1, 1024)
    assert job.value("batch.micro_train") == 1 and job.value("hf.config_path") == "recipe.json"
    length = job.settings.get("seq.max_len")
    assert length.path.endswith("recipe.json") and recipe[length.span.start:length.span.end] == "1024"
    (trl,) = _jobs(tmp_path / "trl", {"run.sh": "trl sft --config sft.json\n",
                                      "sft.json": '{"model_name_or_path": "Qwen/Qwen2.5-1.5B", '
                                                  '"per_device_train_batch_size": 4, "num_processes": 2}'})
    assert trl.value("model.policy.path") == "Qwen/Qwen2.5-1.5B" and trl.value("batch.micro_train") == 4
    assert trl.value("topology.world_size") == 2  # an accelerate key left over in the recipe, as in YAML


def test_trainer_fsdp_flag_makes_an_fsdp_hf_launch(tmp_path):
    # FastChat-style: a custom Trainer script (not in the project) with TrainingArguments' own --fsdp switch
    jobs = _jobs(tmp_path, {"train.sh": "torchrun --nproc_per_node=2 fastchat/train/train_mem.py "
                                        "--model_name_or_path Qwen/Qwen2.5-7B --bf16 True "
                                        "--per_device_train_batch_size 2 --fsdp \"full_shard auto_wrap offload\" "
                                        "--gradient_checkpointing True\n",
                            "other.sh": "torchrun --nproc_per_node=2 train.py --fsdp \"full_shard teleport\"\n"})
    by_path = {os.path.basename(j.path): j for j in jobs}
    job = by_path["train.sh"]
    assert job.framework == "hf" and job.value("train.strategy") == "fsdp"
    assert job.value("offload.param") == "cpu" and job.value("offload.optimizer") == "cpu"
    assert job.value("batch.micro_train") == 2 and job.value("topology.world_size") == 2
    # a value that is not TrainingArguments' FSDPOption list is no evidence of an HF Trainer
    assert by_path["other.sh"].framework != "hf"
    grad_op = _jobs(tmp_path / "b", {"t.sh": "torchrun --nproc_per_node=4 t.py --fsdp shard_grad_op "
                                             "--model_name_or_path Qwen/Qwen2.5-7B\n"})[0]
    assert grad_op.value("train.fsdp_reshard_after_forward") is False


def test_llamafactory_megatron_and_ktransformers_recipes_get_no_memory_verdict(tmp_path):
    # USE_MCA=1 recipes (examples/megatron) shard by tensor/pipeline/expert parallelism; use_kt puts the experts on
    # the CPU: neither is a replica per GPU, and the memory model describes neither
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    base = ("model_name_or_path: Qwen/Qwen3-30B-A3B\nstage: sft\nfinetuning_type: full\nbf16: true\n"
            "per_device_train_batch_size: 1\n")
    for i, (extra, strategy) in enumerate((("pipeline_model_parallel_size: 4\nexpert_model_parallel_size: 2\n",
                                             "megatron"),
                                            ("tensor_model_parallel_size: 1\n", "megatron"),
                                            ("use_kt: true\n", "ktransformers"))):
        (job,) = _jobs(tmp_path / str(i), {"lf.yaml": base + extra})
        assert job.value("train.strategy") == strategy
        est = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8))
        assert not est.groups and any(f"'{strategy}' is not modelled" in a for a in est.assumptions)
    (job,) = _jobs(tmp_path / "off", {"lf.yaml": base + "use_kt: false\n"})
    assert job.value("train.strategy") == "ddp"  # no DeepSpeed config: the replicated default


def test_an_unread_accelerate_config_leaves_the_sharding_open(tmp_path):
    # `accelerate launch --config_file zero3.yaml` linted without zero3.yaml: not DDP, which would call a sharded
    # 32B fine-tune an overflow of replicas; the band's low end is the sharded, offloaded reading
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    run = "accelerate launch --config_file zero3.yaml sft.py --config recipe.yaml\n"
    recipe = "model_name_or_path: Qwen/Qwen2.5-32B\nper_device_train_batch_size: 1\nbf16: true\noutput_dir: out\n"
    (job,) = _jobs(tmp_path, {"run.sh": run, "recipe.yaml": recipe})
    assert job.value("accelerate.config_unread") == "zero3.yaml" and job.value("train.strategy") is None
    (group,) = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8)).groups
    assert group.peak > group.gpu_memory > group.low_peak  # a warning ("tight"), never an error


def test_llamafactory_methods_are_read_with_their_defaults(tmp_path):
    base = "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: sft\nper_device_train_batch_size: 1\n"
    jobs = _jobs(tmp_path, {
        "run.sh": "llamafactory-cli train apollo.yaml use_apollo=true apollo_rank=4\n",
        "freeze.yaml": base + "finetuning_type: freeze\n",
        "galore.yaml": base + "finetuning_type: full\nuse_galore: true\ngalore_rank: 64\napollo_rank: 8\n",
        "apollo.yaml": base + "finetuning_type: full\napollo_layerwise: true\n",
        "badam.yaml": base + "finetuning_type: full\nuse_badam: true\n",
        "off.yaml": base + "finetuning_type: full\ngalore_rank: 64\nfreeze_trainable_layers: 4\n",
    })
    by_name = {j.path.rsplit("/", 1)[1]: j for j in jobs}
    freeze = by_name["freeze.yaml"]
    assert freeze.value("train.lora_rank") == 0 and freeze.value("train.freeze_layers") == 2
    assert freeze.value("train.freeze_modules") == ("all",) and freeze.value("train.freeze_extra_modules") == ()
    assert "default freeze_trainable_layers 2" in freeze.settings.get("train.freeze_layers").origin
    galore = by_name["galore.yaml"]
    assert galore.value("train.projected_optimizer") == "galore" and galore.value("train.projection_rank") == 64
    assert galore.value("train.projection_method") == "svd" and galore.value("train.optimizer_layerwise") is False
    apollo = by_name["run.sh"]  # the key=value overrides switch APOLLO on
    assert apollo.value("train.projected_optimizer") == "apollo" and apollo.value("train.projection_rank") == 4
    assert apollo.value("train.projection_method") == "random" and apollo.value("train.optimizer_layerwise") is True
    badam = by_name["badam.yaml"]
    assert badam.value("train.block_optimizer") == "layer" and badam.value("precision.half_trainable") is True
    assert badam.value("precision.master_dtype") == "bf16"  # no upcast, no DeepSpeed: the bf16 weights are updated
    off = by_name["off.yaml"]  # the fields of a method that is off say nothing
    assert off.value("train.projection_rank") is None and off.value("train.freeze_layers") is None


def test_llamafactory_pure_bf16_full_tuning_keeps_weights_gradients_and_moments_in_bf16(tmp_path):
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    recipe = ("model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\nfinetuning_type: full\npure_bf16: true\n"
              "per_device_train_batch_size: 1\n")
    jobs = _jobs(tmp_path, {"ddp.yaml": recipe, "ds.yaml": recipe + "deepspeed: ds.json\n",
                            "ds.json": '{"zero_optimization": {"stage": 2}}\n'})
    by_name = {j.path.rsplit("/", 1)[1]: j for j in jobs}
    ddp, ds = by_name["ddp.yaml"], by_name["ds.yaml"]
    assert ddp.value("precision.param_dtype") == "bf16" and ddp.value("precision.master_dtype") == "bf16"
    assert ds.value("precision.master_dtype") is None  # DeepSpeed keeps its own fp32 partition
    hw = Hardware(gpu="A100-80GB")
    r = estimate(ddp, hw).role("policy")
    P = r.params
    assert (r.term("weights"), r.term("gradients"), r.term("optimizer_states")) == (2 * P, 2 * P, 4 * P)
    zero2 = estimate(ds, hw).role("policy")
    assert zero2.term("optimizer_states") == 12 * P // zero2.gpus  # fp32 master + Adam states, partitioned


def test_llamafactory_oft_predict_and_recipe_fsdp_are_read(tmp_path):
    # LLaMA-Factory's own examples: OFT adapters (adapter.py routes oft with lora), a predict-only recipe (the model
    # is loaded frozen without do_train), and TrainingArguments' fsdp written in the recipe itself
    base = "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: sft\nper_device_train_batch_size: 1\n"
    (oft,) = _jobs(tmp_path / "oft", {"lf.yaml": base + "do_train: true\nfinetuning_type: oft\n"})
    assert oft.value("train.lora_rank") == 8
    (predict,) = _jobs(tmp_path / "predict", {"lf.yaml": base + "finetuning_type: full\ndo_predict: true\n"})
    assert predict.value("train.strategy") == "inference"
    (trains,) = _jobs(tmp_path / "trains", {"lf.yaml": base + "finetuning_type: full\ndo_train: true\ndo_eval: true\n"})
    assert trains.value("train.strategy") == "ddp"
    fsdp_recipe = base + "do_train: true\nfinetuning_type: full\nfsdp:\n  - full_shard\n  - auto_wrap\n"
    (sharded,) = _jobs(tmp_path / "fsdp", {"lf.yaml": fsdp_recipe})
    assert sharded.value("train.strategy") == "fsdp"
    text = (tmp_path / "fsdp" / "lf.yaml").read_text()
    span = sharded.settings.get("train.strategy").span
    assert text[span.start:span.end].startswith("- full_shard")


def test_llamafactory_loads_shard_by_shard_onto_the_gpu(tmp_path):
    # LLaMA-Factory without ZeRO-3 passes device_map={"": device} with low_cpu_mem_usage (patcher.py): each rank
    # streams the checkpoint onto its GPU, not a full copy in host RAM
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    recipe = ("model_name_or_path: Qwen/Qwen2.5-32B-Instruct\nstage: sft\ndo_train: true\nfinetuning_type: lora\n"
              "per_device_train_batch_size: 1\nbf16: true\n")
    (job,) = _jobs(tmp_path, {"lf.yaml": recipe})
    (node,) = estimate(job, Hardware(gpu="H200", gpus_per_node=8)).nodes
    (loading,) = [t for t in node.transient if t.name.startswith("loading:")]
    assert "device_map onto the GPU" in loading.formula and loading.bytes <= 8 * 5_000_000_000
