"""ZeRO bucket sizes written "auto" are filled by accelerate (so by the HF Trainer) from the model's hidden size h:
h x h for reduce_bucket_size, 0.9 h x h for stage3_prefetch_bucket_size; not DeepSpeed's 5e8 / 5e7 defaults."""
import json

from lintutil import project_of_texts

from rlhf_lint.frameworks.deepspeed import settings_from_ds_config
from rlhf_lint.memory.catalog import resolve_model
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.readers.json import parse_json

QWEN7 = "Qwen/Qwen2.5-7B"
H = resolve_model(QWEN7).arch.hidden_size  # 3584


def _policy(files):
    project = project_of_texts(files)
    [job] = project.jobs
    return job, estimate(job, project.config.hardware_for(job.hardware)).role("policy")


def _zero3(**sizes):
    return json.dumps({"train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": "auto"},
                       "zero_optimization": {"stage": 3, **sizes}})


LAUNCH = ("#!/bin/bash\n# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8\n"
          f"deepspeed --num_gpus 8 train.py --deepspeed ds.json --model_name_or_path {QWEN7} "
          "--per_device_train_batch_size 1 --max_seq_length 2048 --bf16 --gradient_checkpointing\n")


def test_the_reader_marks_auto_sizes():
    doc = parse_json(_zero3(reduce_bucket_size="auto", stage3_prefetch_bucket_size="auto", sub_group_size="auto"))
    settings = settings_from_ds_config(doc, "ds.json")
    setting = settings.get("deepspeed.auto_sizes")
    assert setting.value == ("reduce_bucket_size", "stage3_prefetch_bucket_size") and setting.span is not None
    assert settings.get("deepspeed.reduce_bucket_size") is None


def test_auto_buckets_are_sized_from_the_hidden_size():
    _, auto = _policy({"train.sh": LAUNCH, "ds.json": _zero3(reduce_bucket_size="auto",
                                                             stage3_prefetch_bucket_size="auto")})
    _, unset = _policy({"train.sh": LAUNCH, "ds.json": _zero3()})
    _, number = _policy({"train.sh": LAUNCH, "ds.json": _zero3(reduce_bucket_size=H * H,
                                                               stage3_prefetch_bucket_size=int(0.9 * H * H))})
    assert auto.term("deepspeed_buffers") == number.term("deepspeed_buffers")
    assert auto.term("gathered_params") == number.term("gathered_params")
    # DeepSpeed's own defaults when the key is absent: 5e8 x 2 B more than h x h x 2 B
    assert unset.term("deepspeed_buffers") - auto.term("deepspeed_buffers") == 2 * (5 * 10**8 - H * H)
    formula = next(t.formula for t in auto.terms if t.name == "deepspeed_buffers")
    assert '"auto"' in formula and f"{H * H / 1e7:.2f}e7" in formula


def test_deepspeed_alone_keeps_its_defaults_for_auto():
    # a launch that hands the file to deepspeed.initialize itself: DeepSpeedConfigModel drops "auto"
    from rlhf_lint.cli.estimate import _job_from_options
    from rlhf_lint.engine.config import Hardware

    def buffers(framework):
        job = _job_from_options(QWEN7, 8, None, 3, None, None, "bf16", None, 1, 2048, True, True, "sft",
                                {"deepspeed.auto_sizes": ("reduce_bucket_size",)}, framework)
        role = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8)).role("policy")
        return role.term("deepspeed_buffers"), next(t.formula for t in role.terms if t.name == "deepspeed_buffers")

    plain, plain_formula = buffers("deepspeed")
    hf, hf_formula = buffers("hf")
    assert plain - hf == 2 * (5 * 10**8 - H * H)
    assert "DeepSpeed keeps its default" in plain_formula and "filled by accelerate" in hf_formula


def test_swift_presets_carry_their_sizes():
    launch = ("# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=4\nNPROC_PER_NODE=4 swift sft --model "
              f"{QWEN7} --train_type full --deepspeed zero3 --max_length 2048 --torch_dtype bfloat16\n")
    job, role = _policy({"sft.sh": launch})
    # ms-swift's zero3.json: reduce and prefetch "auto", sub_group_size and stage3_max_live_parameters 1e9
    assert job.settings.value("deepspeed.auto_sizes") == ("reduce_bucket_size", "stage3_prefetch_bucket_size")
    assert job.settings.value("deepspeed.sub_group_size") == 10**9
    assert '"auto"' in next(t.formula for t in role.terms if t.name == "deepspeed_buffers")
