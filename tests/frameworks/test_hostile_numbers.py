"""Numbers no real launch holds (Infinity, NaN, 400-digit floats, 4,300-digit integers) in verl overrides,
ds_configs, ORZ configs and YAML: the value is unknown, never an internal error (F010)."""
import json

import pytest

from lintutil import run_cli
from rlhf_lint.model import UNKNOWN, Setting, Settings

BIG_INT = "9" * 4300
LONG_FLOAT = "1." + "1" * 400

FILES = {
    "ds_config.json": '{"train_batch_size": Infinity, "gradient_accumulation_steps": NaN, "gradient_clipping": '
                      + LONG_FLOAT + ', "train_micro_batch_size_per_gpu": ' + BIG_INT + "}\n",
    "run_verl.sh": "python3 -m verl.trainer.main_ppo trainer.nnodes=" + BIG_INT + " trainer.n_gpus_per_node=Infinity"
                   " actor_rollout_ref.actor.optim.lr=" + LONG_FLOAT + " data.train_batch_size=NaN\n",
    "verl.yaml": "trainer:\n  nnodes: " + BIG_INT + "\n  n_gpus_per_node: .inf\ndata:\n  train_batch_size: .nan\n",
    "orz_config.py": "from dataclasses import dataclass\nfrom orz.ppo import PPOExpConfig\n@dataclass\n"
                     "class Cfg(PPOExpConfig):\n    total_num_nodes: int = " + BIG_INT + "\n"
                     "    actor_learning_rate: float = " + LONG_FLOAT + "\n    vllm_num_engines: int = float('inf')\n",
    "run.sh": "deepspeed --num_nodes " + BIG_INT + " --num_gpus 8 train.py --deepspeed ds_config.json\n",
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_huge_and_non_finite_numbers_are_no_internal_error(tmp_path, name):
    (tmp_path / name).write_text(FILES[name])
    proc = run_cli("--no-cache", "--format", "json", name, cwd=tmp_path)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    found = {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}
    assert "F010" not in found, proc.stdout


def test_all_files_together_are_no_internal_error(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    proc = run_cli("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "F010" not in {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 10 ** 4000, -(10 ** 30), 1e300])
def test_settings_hold_out_of_range_numbers_as_unknown(value):
    settings = Settings()
    settings.add(Setting("topology.nodes", value))
    got = settings.get("topology.nodes")
    assert got.value is UNKNOWN and "out of range" in got.origin
    assert Settings([Setting("topology.nodes", value)]).value("topology.nodes") is UNKNOWN


@pytest.mark.parametrize("value", [0, 8, 2 ** 32, 1e-5, -3.5, "inf", True])
def test_settings_keep_ordinary_values(value):
    settings = Settings()
    settings.add(Setting("topology.nodes", value))
    assert settings.value("topology.nodes") == value


def test_verl_config_numbers_out_of_range_are_unknown_where_rules_read_them(tmp_path):
    # found by test_mutated_files_never_crash: V008 added a 4,300-digit max_response_length (int() accepts exactly
    # 4,300 digits) to the prompt length and formatted the 4,301-digit sum, which str() refuses; the verl config
    # values the rules read (not only Settings) are now UNKNOWN past MAX_SETTING_NUMBER
    from rlhf_lint.frameworks.verl import parse_value

    assert parse_value(BIG_INT) is UNKNOWN and parse_value("inf") is UNKNOWN and parse_value("1e400") is UNKNOWN
    assert parse_value("[1, " + BIG_INT + "]") == [1, UNKNOWN] and parse_value("4096") == 4096
    (tmp_path / "run_verl.sh").write_text(
        "python3 -m verl.trainer.main_ppo data.max_prompt_length=1024 data.max_response_length=" + BIG_INT
        + " actor_rollout_ref.rollout.enable_chunked_prefill=True actor_rollout_ref.rollout.max_num_batched_tokens=8\n")
    (tmp_path / "verl.yaml").write_text("data:\n  max_response_length: " + BIG_INT + "\n  items: [1, .inf]\n")
    proc = run_cli("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "F010" not in {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}, proc.stdout


@pytest.mark.parametrize("flag", ["--train_batch_size", "--micro_train_batch_size", "--actor_num_gpus_per_node"])
def test_openrlhf_flag_numbers_out_of_range_are_unknown(tmp_path, flag):
    # O012/O018 multiplied such a flag's value and formatted the product (str() refuses > 4,300 digits): F010
    args = {"--train_batch_size": "128", "--micro_train_batch_size": "2", "--actor_num_gpus_per_node": "8"}
    args[flag] = BIG_INT
    (tmp_path / "train_ppo.sh").write_text(
        "python3 -m openrlhf.cli.train_ppo_ray --actor_num_nodes 1 --pretrain meta-llama/Llama-3-8b "
        "--rollout_batch_size 1024 --micro_rollout_batch_size 16 --zero_stage 3 --bf16 "
        + " ".join(f"{k} {v}" for k, v in args.items()) + "\n")
    proc = run_cli("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "F010" not in {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}, proc.stdout
