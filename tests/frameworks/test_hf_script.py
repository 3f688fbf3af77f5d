"""Training scripts that build their HF / TRL arguments in Python (rlhf_lint.frameworks.hf_script), and the TRL
config defaults per release (rlhf_lint.frameworks.trl_defaults)."""
from __future__ import annotations

import os

from lintutil import build_written

DPO_SCRIPT = '''\
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig
from trl import DPOConfig, DPOTrainer
from peft import LoraConfig

MODEL_ID = "Qwen/Qwen2.5-1.5B-Instruct"
quant = BitsAndBytesConfig(load_in_4bit=True)
model = AutoModelForCausalLM.from_pretrained(MODEL_ID, torch_dtype=torch.bfloat16, quantization_config=quant,
                                             attn_implementation="eager")
tokenizer = AutoTokenizer.from_pretrained(MODEL_ID)
args = DPOConfig(output_dir="out", per_device_train_batch_size=4, max_length=2048, bf16=True, beta=0.2)
lora = LoraConfig(r=32, target_modules=["q_proj", "v_proj"])
DPOTrainer(model=model, args=args, processing_class=tokenizer, peft_config=lora).train()
'''


def _jobs(tmp_path, files: dict):
    return build_written(tmp_path, files).jobs


def _span_text(tmp_path, setting) -> str:
    text = (tmp_path / os.path.basename(setting.path)).read_text()
    return text[setting.span.start:setting.span.end]


def test_a_script_building_its_config_in_python_is_a_job(tmp_path):
    (job,) = _jobs(tmp_path, {"train.py": DPO_SCRIPT})
    assert (job.framework, job.value("job.type")) == ("trl", "dpo")
    assert job.value("model.policy.path") == "Qwen/Qwen2.5-1.5B-Instruct"
    assert job.value("batch.micro_train") == 4 and job.value("seq.max_len") == 2048
    assert job.value("hf.torch_dtype") == "bf16" and job.value("train.quantization") == "4bit"
    assert job.value("train.flash_attn") is False  # eager attention
    assert job.value("train.lora_rank") == 32 and tuple(job.value("train.lora_targets")) == ("q_proj", "v_proj")
    assert job.value("trl.beta") == 0.2
    # positions point at the literal tokens, the model id at the constant the call uses
    assert _span_text(tmp_path, job.settings.get("batch.micro_train")) == "4"
    assert _span_text(tmp_path, job.settings.get("model.policy.path")) == "MODEL_ID"
    assert _span_text(tmp_path, job.settings.get("train.lora_rank")) == "32"


def test_unresolved_values_stay_unknown_and_a_rebound_name_is_not_trusted(tmp_path):
    script = ('from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n'
              'import sys\nMODEL = "Qwen/Qwen2.5-0.5B"\nBATCH = 2\nBATCH = 4\n'
              'model = AutoModelForCausalLM.from_pretrained(MODEL)\n'
              'args = TrainingArguments(output_dir="o", per_device_train_batch_size=BATCH, '
              'gradient_accumulation_steps=int(sys.argv[1]), **{"bf16": True})\n'
              'Trainer(model=model, args=args).train()\n')
    (job,) = _jobs(tmp_path, {"train.py": script})
    from rlhf_lint.model import UNKNOWN

    assert job.framework == "hf" and job.value("model.policy.path") == "Qwen/Qwen2.5-0.5B"
    assert job.value("batch.micro_train") is UNKNOWN  # BATCH is bound twice
    assert job.value("batch.grad_accum") is UNKNOWN
    assert any("**" in a for a in job.assumptions)


def test_a_script_a_launch_runs_is_read_by_that_launch(tmp_path):
    run = "accelerate launch --num_processes 2 train.py --per_device_train_batch_size 1\n"
    (job,) = _jobs(tmp_path / "a", {"train.py": DPO_SCRIPT, "run.sh": run})  # the script is no job of its own
    assert job.path.endswith("run.sh") and job.framework == "trl" and job.value("job.type") == "dpo"
    assert job.value("model.policy.path") == "Qwen/Qwen2.5-1.5B-Instruct" and job.value("train.lora_rank") == 32
    assert job.value("topology.world_size") == 2
    # the script parses no command line: the flag is ignored when it runs, and so here
    assert job.value("batch.micro_train") == 4 and any("flags are ignored" in a for a in job.assumptions)
    # a script that also parses its arguments takes the flag
    parsed = DPO_SCRIPT.replace("from trl import DPOConfig, DPOTrainer\n",
                                "from trl import DPOConfig, DPOTrainer, TrlParser\nTrlParser((DPOConfig,))\n")
    (job,) = _jobs(tmp_path / "b", {"train.py": parsed, "run.sh": run})
    assert job.value("batch.micro_train") == 1


def test_scripts_without_a_literal_model_or_config_make_no_job(tmp_path):
    jobs = _jobs(tmp_path, {
        # TRL's own CLI-style script: everything comes from its parser
        "sft.py": "from trl import SFTConfig, SFTTrainer, TrlParser, ModelConfig\n"
                  "parser = TrlParser((SFTConfig, ModelConfig))\nargs, model_args = parser.parse_args_and_config()\n"
                  "SFTTrainer(model=model_args.model_name_or_path, args=args).train()\n",
        "notes.py": "# not a training script\nprint('SFTConfig(')\n",
        "broken.py": "from trl import SFTConfig\nSFTConfig(model='x'\n",
    })
    assert jobs == []


def test_lora_config_applied_by_get_peft_model_with_its_default_rank_and_kbit_checkpointing(tmp_path):
    script = ('from transformers import AutoModelForCausalLM, TrainingArguments, Trainer\n'
              'from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training\n'
              'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", load_in_8bit=True)\n'
              'model = prepare_model_for_kbit_training(model)\n'
              'model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM"))\n'
              'Trainer(model=model, args=TrainingArguments("out", fp16=True)).train()\n')
    (job,) = _jobs(tmp_path, {"train.py": script})
    assert job.value("train.lora_rank") == 8  # PEFT's LoraConfig default r
    assert job.value("train.quantization") == "8bit"
    assert job.value("train.gradient_checkpointing") is True  # prepare_model_for_kbit_training's default
    assert job.value("hf.mixed_precision") == "fp16"


def test_trl_defaults_follow_the_pinned_release(tmp_path):
    base = "trl grpo --model_name_or_path Qwen/Qwen2.5-0.5B\n"
    old = _jobs(tmp_path / "old", {"run.sh": base, "requirements.txt": "trl==0.16.0\n"})[0]
    new = _jobs(tmp_path / "new", {"run.sh": base, "requirements.txt": "trl==0.23.1\n"})[0]
    # TrainingArguments' per-device batch 8; GRPOConfig's generation defaults
    assert old.value("batch.micro_train") == 8 and new.value("batch.micro_train") == 8
    assert old.value("trl.num_generations") == 8
    assert old.value("seq.generate_max_len") == 256 and old.value("seq.prompt_max_len") == 512
    # gradient checkpointing became TRL's default in 0.23; bf16 "unless fp16" in 0.20
    assert old.value("train.gradient_checkpointing") is False and new.value("train.gradient_checkpointing") is True
    assert old.value("hf.mixed_precision") != "bf16" and new.value("hf.mixed_precision") == "bf16"
    assert not any("TRL release" in a for a in old.assumptions)
    # what the launch gives wins over the defaults
    given = _jobs(tmp_path / "given", {"run.sh": "trl grpo --model_name_or_path Qwen/Qwen2.5-0.5B "
                                                 "--per_device_train_batch_size 2 --gradient_checkpointing false\n",
                                       "requirements.txt": "trl==0.23.1\n"})[0]
    assert given.value("batch.micro_train") == 2 and given.value("train.gradient_checkpointing") is False


def test_trl_defaults_without_a_pin_are_the_newest_known_and_say_so(tmp_path):
    (job,) = _jobs(tmp_path, {"run.sh": "trl sft --model_name_or_path Qwen/Qwen2.5-0.5B\n"})
    assert job.value("batch.micro_train") == 8 and job.value("seq.max_len") == 1024
    assert any(a.startswith("TRL release not pinned") for a in job.assumptions)


def test_trl_release_table_lookup():
    from rlhf_lint.frameworks.trl_defaults import defaults_for, release_of

    assert release_of("0.16.0") == ("0.16.1", True)  # the same minor series
    _label, exact = release_of(None)
    assert not exact
    assert release_of("0.1.0")[1] is False  # older than the table: the newest, not exact
    defaults, what, _label, _exact = defaults_for("trl", "grpo", "0.14.0")
    assert defaults["per_device_train_batch_size"] == 1 and "GRPOConfig" in what  # GRPOConfig 0.14's own default
    plain, what, _label, _exact = defaults_for("hf", None, None)
    assert plain["per_device_train_batch_size"] == 8 and what == "TrainingArguments default"


def test_without_mixed_precision_the_model_computes_in_its_loaded_dtype(tmp_path):
    script = ('import torch\nfrom transformers import AutoModelForCausalLM\nfrom trl import DPOConfig, DPOTrainer\n'
              'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct"{dtype})\n'
              'DPOTrainer(model=model, args=DPOConfig(output_dir="o")).train()\n')
    fp32 = _jobs(tmp_path / "a", {"train.py": script.format(dtype=""), "requirements.txt": "trl==0.16.0\n"})[0]
    half = _jobs(tmp_path / "b", {"train.py": script.format(dtype=", torch_dtype=torch.bfloat16"),
                                  "requirements.txt": "trl==0.16.0\n"})[0]
    # TRL 0.16: bf16 off by default, so nothing autocasts
    assert fp32.value("precision.param_dtype") == "fp32" and half.value("precision.param_dtype") == "bf16"
    assert half.value("precision.master_dtype") == "bf16"
    # TRL 0.20 and later turn bf16 on unless fp16: autocast over the fp32 weights
    new = _jobs(tmp_path / "c", {"train.py": script.format(dtype=""), "requirements.txt": "trl==0.20.0\n"})[0]
    assert new.value("precision.param_dtype") == "bf16"
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import estimate

    a100 = Hardware(gpu="A100-80GB", gpus_per_node=1)
    policies = [estimate(j, a100).role("policy") for j in (fp32, new)]
    weights = [{t.name: t.bytes for t in r.terms}["weights"] for r in policies]
    assert weights == [4 * policies[0].params] * 2  # fp32 weights in both


def test_test_modules_and_an_empty_model_name_make_no_job(tmp_path):
    body = ('from transformers import AutoModelForCausalLM\nfrom trl import SFTConfig, SFTTrainer\n'
            'model = AutoModelForCausalLM.from_pretrained({name})\n'
            'SFTTrainer(model=model, args=SFTConfig(output_dir="o")).train()\n')
    jobs = _jobs(tmp_path, {"tests/test_sft.py": body.format(name='"Qwen/Qwen2.5-0.5B"'),
                            "conftest.py": body.format(name='"Qwen/Qwen2.5-0.5B"'),
                            "bench.py": body.format(name='""'),
                            "train.py": body.format(name='"Qwen/Qwen2.5-0.5B"')})
    assert [os.path.basename(j.path) for j in jobs] == ["train.py"]


def test_only_classes_imported_from_transformers_or_trl_count(tmp_path):
    body = ('from transformers import AutoModelForCausalLM\n{imports}\n'
            'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")\n{call}\n')
    jobs = _jobs(tmp_path, {
        # Lightning's Trainer beside a transformers model: no HF Trainer job
        "lightning_train.py": body.format(imports="from lightning import Trainer",
                                          call="Trainer(max_epochs=1).fit(model)"),
        # an aliased TRL config and the module form both count
        "aliased.py": body.format(imports="from trl import SFTConfig as Cfg, SFTTrainer",
                                  call='SFTTrainer(model=model, args=Cfg("o", per_device_train_batch_size=2))'),
        "module_form.py": body.format(imports="import transformers",
                                      call='transformers.Trainer(model=model, args=transformers.TrainingArguments('
                                           '"o", per_device_train_batch_size=3))'),
    })
    by_file = {os.path.basename(j.path): j for j in jobs}
    assert set(by_file) == {"aliased.py", "module_form.py"}
    aliased = by_file["aliased.py"]
    assert aliased.value("batch.micro_train") == 2 and aliased.value("job.type") == "sft"
    assert by_file["module_form.py"].value("batch.micro_train") == 3


# -- the dtype a model loads in when nothing names one (schemas/hf/load_dtype.json) ---------------------------------
PLAIN_SCRIPT = ('from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n'
                'model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-7B")\n'
                'Trainer(model=model, args=TrainingArguments("out", bf16=False)).train()\n')


def test_an_unset_dtype_follows_the_transformers_major_the_repository_admits(tmp_path):
    def job(name, requirements):
        files = {"train.py": PLAIN_SCRIPT, **({"requirements.txt": requirements} if requirements else {})}
        return _jobs(tmp_path / name, files)[0]

    v4, v5, open_, unpinned = (job("v4", "transformers==4.49.0\n"), job("v5", "transformers>=5.2\n"),
                               job("open", "trl==0.16.0\n"), job("none", ""))
    # transformers 4 loads fp32: certain, no band to the 16-bit reading
    assert v4.value("hf.torch_dtype") is None and v4.value("precision.param_dtype") == "fp32"
    assert v4.value("precision.loaded_dtype_open") is None
    # 5 loads the checkpoint's dtype; trl 0.16 admits 4 and 5 (transformers>=4.46.0); nothing pinned admits both
    for j in (v5, open_, unpinned):
        assert j.value("hf.torch_dtype") == "auto" and j.value("precision.loaded_dtype_open") == "bf16", j.path
    assert "transformers 5 loads" in v5.settings.get("hf.torch_dtype").origin
    assert "not held below 5" in unpinned.settings.get("hf.torch_dtype").origin
    # a configured release wins over what the pins admit
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import build_project

    project, _ = build_project([str(tmp_path / "none" / "train.py")],
                               Config(root=str(tmp_path / "none"), versions={"transformers": "4.57.6"}))
    (configured,) = project.jobs
    assert configured.value("hf.torch_dtype") is None and configured.value("precision.param_dtype") == "fp32"


def test_trl_loading_the_model_gives_its_own_release_default(tmp_path):
    # TRL 0.27 made float32 explicit (ModelConfig.dtype, create_model_from_path): certain whatever transformers is
    run = "trl sft --model_name_or_path Qwen/Qwen2.5-0.5B\n"
    new = _jobs(tmp_path / "new", {"run.sh": run, "requirements.txt": "trl==1.9.0\ntransformers==5.2.0\n"})[0]
    assert new.value("hf.torch_dtype") == "fp32" and new.value("precision.loaded_dtype_open") is None
    # 0.26 loaded a model id with dtype "auto"
    mid = _jobs(tmp_path / "mid", {"run.sh": run, "requirements.txt": "trl==0.26.2\n"})[0]
    assert mid.value("hf.torch_dtype") == "auto"
    # a script's own from_pretrained is transformers' default, not TRL's
    script = PLAIN_SCRIPT.replace("TrainingArguments", "SFTConfig").replace("Trainer,", "").replace(
        "from transformers import AutoModelForCausalLM, ", "from transformers import AutoModelForCausalLM\n"
        "from trl import SFTTrainer, ").replace("Trainer(model", "SFTTrainer(model")
    own = _jobs(tmp_path / "own", {"train.py": script, "requirements.txt": "trl==1.9.0\ntransformers==5.2.0\n"})[0]
    assert own.framework == "trl" and own.value("hf.torch_dtype") == "auto"


def test_trl_0_28_does_not_cap_transformers_below_5(tmp_path):
    # the <5.0.0 in trl 0.28's pyproject belongs to its judges extra only
    from rlhf_lint.frameworks.versions import admitted_majors

    project = build_written(tmp_path, {"requirements.txt": "trl==0.28.0\n"})
    assert admitted_majors(project, "transformers") == frozenset({4, 5})
    capped = build_written(tmp_path / "c", {"requirements.txt": "trl[judges]==0.28.0\n"})
    assert admitted_majors(capped, "transformers") == frozenset({4})
