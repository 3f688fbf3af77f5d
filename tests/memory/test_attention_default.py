"""The attention a launch runs when it names none: transformers' default of the release in use
(schemas/hf/attention_default.json): eager before 4.36, SDPA after it for a model whose code supports it."""
import pytest

from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.engine.runner import build_project
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.schemas.build.causal_lm_loss import parse_module, supports_sdpa


def run(tmp_path, transformers, model="meta-llama/Llama-2-7b-hf", extra=""):
    (tmp_path / "requirements.txt").write_text(f"transformers=={transformers}\n")
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 3}, "bf16": {"enabled": true}}\n')
    (tmp_path / "run.sh").write_text(
        f"torchrun --nproc_per_node 8 -m trl.scripts.sft --model_name_or_path {model} --per_device_train_batch_size "
        f"1 --max_length 4096 --gradient_checkpointing --bf16 --deepspeed ds.json {extra}\n")
    project, _ = build_project([str(tmp_path)], Config())
    (job,) = [j for j in project.jobs if j.value("framework") in ("trl", "hf")]
    est = estimate(job, Hardware(gpu="A100-80GB", gpus_per_node=8), versions={"transformers": transformers})
    return est.role("policy").term("activations"), est.assumptions


@pytest.mark.parametrize("release, eager", [("4.35.2", True), ("4.36.2", False)])
def test_the_release_decides_the_default_attention(tmp_path, release, eager):
    activations, assumptions = run(tmp_path, release)
    sdpa, _ = run(tmp_path, "4.36.2")
    # the recomputed layer holds its scores, heads x s^2 x 6 B (3 GiB at 4096 tokens; counted beyond the loss's)
    assert (activations - sdpa > 2**31) is eager and (activations == sdpa) is not eager
    assert any("runs eager attention by default" in a for a in assumptions) is eager


def test_a_model_without_an_sdpa_path_runs_eager(tmp_path):
    """gemma-2's code sets _supports_sdpa = False from transformers 5.21 (softcapping)."""
    _, before = run(tmp_path, "5.20.2", "google/gemma-2-9b")
    _, after = run(tmp_path, "5.21.1", "google/gemma-2-9b")
    assert not any("no SDPA path" in a for a in before)
    assert any("gemma2 has no SDPA path in transformers 5.21.1" in a for a in after)


def test_the_launch_naming_its_attention_wins(tmp_path):
    activations, assumptions = run(tmp_path, "4.35.2", extra="--attn_implementation sdpa")
    assert activations == run(tmp_path, "4.36.2")[0] and not any("eager" in a for a in assumptions)


def test_supports_sdpa_reads_the_class_attribute():
    assert supports_sdpa(parse_module("class P(PreTrainedModel):\n    _supports_sdpa = True\n")) == "P"
    assert supports_sdpa(parse_module("class P(PreTrainedModel):\n    _supports_sdpa = False\n")) is None
    assert supports_sdpa(parse_module("def f(:\n")) is None


def test_remote_code_chooses_its_own_attention(tmp_path):
    """Qwen-1's modeling_qwen.py uses flash-attn when installed, whatever transformers' default."""
    _, assumptions = run(tmp_path, "4.32.1", "Qwen/Qwen-7B")
    assert not any("eager" in a for a in assumptions)
