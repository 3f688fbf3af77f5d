"""LoRA with modules trained in full beside the adapters (PEFT modules_to_save, LLaMA-Factory additional_target,
TRL lora_modules_to_save, ms-swift modules_to_save): a trainable copy of each module with its gradient and optimizer
states; and torch 2.0's foreach AdamW, which holds two copies of v in its step (issue 15, change 45).

Meta-Llama-3-8B: embedding and LM head 525,336,576 parameters each (vocabulary 128256 x hidden 4096, untied)."""
import pytest

from lintutil import build_written, run_cli
from rlhf_lint.engine.config import Hardware
from rlhf_lint.frameworks.jobs import Job
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.model import Setting, Settings

EMBED = 525_336_576


def job(framework="trl", **values):
    settings = Settings()
    base = {"model.policy.path": "meta-llama/Meta-Llama-3-8B", "topology.policy.nodes": 1,
            "topology.policy.gpus_per_node": 1, "train.strategy": "ddp", "precision.param_dtype": "bf16",
            "precision.master_dtype": "bf16", "train.lora_rank": 16, "batch.micro_train": 1, "seq.max_len": 512,
            "train.gradient_checkpointing": True, "train.optimizer": "adamw_torch"}
    for key, value in {**base, **values}.items():
        settings.add(Setting(key, value))
    return Job("test", "test.yaml", None, framework, settings, roles=("policy",))


def policy(j, versions=None):
    est = estimate(j, Hardware(gpu="A100-80GB"), versions=versions or {"peft": "0.6.2"})
    return est, est.role("policy")


def test_saved_modules_add_a_trained_copy_with_its_gradient_and_states():
    _, plain = policy(job())
    est, saved = policy(job(**{"train.lora_modules_to_save": ("embed_tokens", "lm_head")}))
    assert saved.trained_params - plain.trained_params == 2 * EMBED
    # PEFT 0.6.2 keeps everything in the base's bf16: 2 B copy, 2 B gradient, 2 x 2 B AdamW moments
    assert saved.term("weights") - plain.term("weights") == 2 * 2 * EMBED
    assert saved.term("optimizer_states") - plain.term("optimizer_states") == 4 * 2 * EMBED
    assert any("modules_to_save trains copies of embed_tokens and lm_head" in a for a in est.assumptions)


def test_llamafactory_upcasts_the_copies_with_the_adapters():
    _, saved = policy(job("llamafactory", **{"train.lora_modules_to_save": ("lm_head",)}))
    _, plain = policy(job("llamafactory"))
    assert saved.term("weights") - plain.term("weights") == 4 * EMBED  # fp32 copy
    assert saved.term("optimizer_states") - plain.term("optimizer_states") == 8 * EMBED


def test_a_module_the_table_does_not_size_is_said_and_small_ones_are_silent():
    est, role = policy(job(**{"train.lora_modules_to_save": ("score", "mm_projector")}))
    _, plain = policy(job())
    assert role.trained_params == plain.trained_params
    assert any("modules_to_save mm_projector: not sized" in a for a in est.assumptions)
    assert not any("score" in a for a in est.assumptions)


def test_torch_2_0_foreach_adamw_holds_sqrt_and_denom():
    """Full fine-tuning of bf16 weights without a master copy: v is 2 B per parameter; torch 2.0 keeps two copies of
    it in step(), torch 2.1 reuses one in place (pytorch#104780)."""
    values = {"train.lora_rank": 0}
    _, old = policy(job(**values), {"torch": "2.0.1", "transformers": "4.32.0"})
    _, new = policy(job(**values), {"torch": "2.1.0", "transformers": "4.32.0"})
    P = old.params
    assert old.term("optimizer_step") == 2 * 2 * P and new.term("optimizer_step") == 2 * P


def test_the_largest_dtype_group_sets_the_step_copy():
    """PEFT 0.5 builds fp32 adapters; the saved copies stay bf16: foreach AdamW copies v one dtype group at a time."""
    _, role = policy(job(**{"train.lora_modules_to_save": ("embed_tokens", "lm_head")}), {"peft": "0.5.0"})
    assert role.term("optimizer_step") == 2 * 2 * EMBED


@pytest.mark.parametrize("files, expected", [
    ({"run.sh": "llamafactory-cli train lf.yaml\n",
      "lf.yaml": "model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\nfinetuning_type: lora\n"
                 "additional_target: embed_tokens,lm_head\n"}, ("embed_tokens", "lm_head")),
    ({"run.sh": "CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type lora "
                "--modules_to_save embed_tokens lm_head\n"}, ("embed_tokens", "lm_head")),
    ({"train.py": "from peft import LoraConfig\nfrom trl import SFTConfig, SFTTrainer\n"
                  "args = SFTConfig(output_dir='o', bf16=True)\n"
                  "lora = LoraConfig(r=16, modules_to_save=['lm_head'])\n"
                  "SFTTrainer(model='Qwen/Qwen2.5-0.5B', args=args, peft_config=lora).train()\n"}, ("lm_head",)),
])
def test_launch_files_give_the_saved_modules(tmp_path, files, expected):
    (j,) = build_written(tmp_path, files).jobs
    assert tuple(j.value("train.lora_modules_to_save")) == expected


def test_estimate_option_and_its_refusal():
    ok = run_cli("estimate", "--model", "meta-llama/Meta-Llama-3-8B", "--gpus", "1", "--gpu", "A100-80GB",
                 "--lora-rank", "16", "--lora-modules-to-save", "embed_tokens,lm_head")
    assert ok.returncode == 0 and "trained copies of embed_tokens and lm_head" in " ".join(ok.stdout.split())
    refused = run_cli("estimate", "--model", "meta-llama/Meta-Llama-3-8B", "--gpus", "1",
                      "--lora-modules-to-save", "lm_head")
    assert refused.returncode == 2 and "give --lora-rank too" in refused.stderr
