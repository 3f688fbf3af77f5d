"""vLLM's max_model_len: verl 0.7.0 gives vLLM the model's max_position_embeddings, 0.7.1 on when
rollout.max_model_len is unset, earlier releases the prompt + response length. vLLM refuses to start when its KV cache
cannot hold one sequence of that length (M007): verl#7624's 131072 is Llama-3.2-1B's context length."""
import json

from lintutil import build_written, run
from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.memory.catalog import arch_from_config_json, model_by_id
from rlhf_lint.model import Severity

LAUNCH = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.max_prompt_length=1024 "
          "data.max_response_length=2048 actor_rollout_ref.model.path={model} "
          "actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.gpu_memory_utilization=0.5 "
          "actor_rollout_ref.rollout.tensor_model_parallel_size=1 trainer.n_gpus_per_node=8 trainer.nnodes=1{more}\n")


def _kv(tmp_path, version, model="meta-llama/Llama-3.1-8B", more=""):
    from rlhf_lint.memory.estimate import estimate

    folder = tmp_path / f"{version}{len(more)}{model.replace('/', '_')}"
    files = {"run.sh": LAUNCH.format(model=model, more=more)}
    if version:
        files["requirements.txt"] = f"verl=={version}\n"
    project = build_written(folder, files)
    job = next(j for j in project.jobs if j.framework == "verl")
    return estimate(job, Hardware(gpu="A100-40GB", gpus_per_node=8)).role("vllm").kv


def test_the_length_vllm_is_built_for_follows_the_verl_release(tmp_path):
    assert _kv(tmp_path, "0.6.1")["one_sequence"] == 3072  # prompt + response
    kv = _kv(tmp_path, "0.7.0", more=" actor_rollout_ref.rollout.max_model_len=3072")
    assert kv["one_sequence"] == 131072 and "whatever" in kv["one_sequence_why"]  # 0.7.0 overwrites it
    assert _kv(tmp_path, "0.9.1")["one_sequence"] == 131072
    assert _kv(tmp_path, "0.9.1", more=" actor_rollout_ref.rollout.max_model_len=4096")["one_sequence"] == 4096
    assert _kv(tmp_path, "0.9.1")["tokens_needed"] == 256 * 3072  # concurrency still counts real sequences


def test_another_models_shape_does_not_give_its_context_length(tmp_path):
    # Qwen2.5-14B-Instruct is read as the base's shape by name: the base's 131072 is not taken for it (the
    # Instruct model's config says 32768)
    kv = _kv(tmp_path, "0.9.1", model="Qwen/Qwen2.5-14B-Instruct")
    assert kv["one_sequence"] == 3072 and not kv["one_sequence_sure"]
    # an Instruct model the catalog lists as a variant of its base: its own context length
    kv = _kv(tmp_path, "0.9.1", model="Qwen/Qwen2.5-7B-Instruct")
    assert kv["one_sequence"] == 32768 and kv["one_sequence_sure"]


def test_m007_is_an_error_only_when_the_release_is_known(tmp_path):
    def m007(version):
        folder = tmp_path / f"m{version}"
        files = {"run.sh": "# rlhf-lint: hardware gpu=A100-40GB gpus-per-node=8 nodes=1\n"
                           + LAUNCH.format(model="meta-llama/Llama-3.1-8B", more="")}
        if version:
            files["requirements.txt"] = f"verl=={version}\n"
        build_written(folder, files)
        return [d for d in run([folder], ["M007"], Config(root=str(folder))).diagnostics]

    (known,) = m007("0.9.1")
    assert known.severity == Severity.ERROR and "131072-token sequence" in known.message
    assert "max_model_len unset" in known.message
    (unknown,) = m007(None)
    assert unknown.severity == Severity.WARNING and "release, which is not known" in unknown.message
    assert m007("0.6.1") == []  # 3072 tokens fit the 3.7 GiB of KV cache


def test_context_length_comes_from_config_json_and_the_catalog():
    text = json.dumps({"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32, "vocab_size": 128256,
                       "max_position_embeddings": 131072})
    assert arch_from_config_json(text, "local").max_position_embeddings == 131072
    assert model_by_id("Qwen/Qwen2.5-3B").max_position_embeddings == 32768
    assert model_by_id("Qwen/Qwen1.5-7B").max_position_embeddings == 0  # not read: not known


def test_catalog_context_lengths_name_their_source():
    from rlhf_lint.schemas import load

    for entry in load("models.json")["models"]:
        if "max_position_embeddings" in entry:
            assert entry["max_position_embeddings_source"].startswith("https://github.com/"), entry["id"]


TRL = ("# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 nodes=1\n"
       "accelerate launch --num_processes 8 -m trl.scripts.grpo --model_name_or_path meta-llama/Llama-3.1-8B "
       "--use_vllm --vllm_mode colocate --vllm_gpu_memory_utilization 0.3 --max_completion_length 1024 "
       "--per_device_train_batch_size 2 --gradient_checkpointing --bf16 --output_dir out --dataset_name x{more}\n")


def test_trl_colocate_leaves_the_length_to_vllm_from_0_26(tmp_path):
    def m007(trl, more=""):
        folder = tmp_path / f"t{trl}{len(more)}"
        build_written(folder, {"run.sh": TRL.format(more=more), "requirements.txt": f"trl=={trl}\n"})
        return [d for d in run([folder], ["M007"], Config(root=str(folder))).diagnostics]

    # 0.18-0.25 build the engine for max_prompt_length + max_completion_length
    assert m007("0.25.0") == []
    (d,) = m007("0.26.0")  # vllm_max_model_length unset: vLLM takes 131072, and 7.9 GiB of KV cache cannot
    assert d.severity == Severity.ERROR and "vllm_max_model_length unset" in d.message
    assert m007("0.26.0", " --vllm_max_model_length 4096") == []


def test_v026_a_set_length_above_the_context_by_release(tmp_path):
    launch = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
              "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct actor_rollout_ref.rollout.name=vllm "
              "actor_rollout_ref.rollout.max_model_len=40960 trainer.n_gpus_per_node=8 trainer.nnodes=1\n")

    def v026(version):
        folder = tmp_path / f"v{version}"
        files = {"run.sh": launch}
        if version:
            files["requirements.txt"] = f"verl=={version}\n"
        build_written(folder, files)
        return [(d.severity, d.message) for d in run([folder], ["V026"], Config(root=str(folder))).diagnostics]

    assert [s for s, _ in v026("0.7.1")] == [Severity.ERROR]
    assert v026("0.7.0") == []  # 0.7.0 overwrites the setting with the model's context
    ((severity, message),) = v026(None)
    assert severity == Severity.WARNING and "release is not known" in message
