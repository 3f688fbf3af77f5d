"""Who reads a ds_config decides whether "auto" is legal: `--deepspeed FILE` is the Hugging Face Trainer's flag,
`--deepspeed --deepspeed_config FILE` DeepSpeed's own."""
from lintutil import run_lint

DS = '{\n  "train_batch_size": "auto",\n  "train_micro_batch_size_per_gpu": "auto",\n  "zero_optimization": {"stage": 2}\n}\n'


def _lint(tmp_path, launch):
    (tmp_path / "ds_config.json").write_text(DS)
    (tmp_path / "train.sh").write_text(launch)
    return [(d.code, d.start.line) for d in run_lint([tmp_path], select=["D020"]).diagnostics]


def test_hf_trainer_flag_fills_auto(tmp_path):
    assert _lint(tmp_path, "deepspeed --num_gpus 8 train.py \\\n  --deepspeed ds_config.json \\\n  --bf16\n") == []


def test_swift_hands_the_file_to_the_hf_trainer(tmp_path):
    # ms-swift's trainers subclass transformers' Trainer: `swift sft --deepspeed FILE` fills "auto" (no D020)
    assert _lint(tmp_path, "NPROC_PER_NODE=8 swift sft --model Qwen/Qwen2.5-7B --train_type full "
                           "--deepspeed ds_config.json\n") == []


def test_native_deepspeed_flag_never_fills_auto(tmp_path):
    launch = "deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds_config.json\n"
    assert _lint(tmp_path, launch) == [("D020", 2), ("D020", 3)]


def test_a_launch_reads_the_ds_config_it_names(tmp_path):
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import build_project

    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": true},\n'
                                      ' "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}\n')
    (tmp_path / "train.sh").write_text("deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds.json\n"
                                       "accelerate launch --zero_stage 2 --deepspeed_config_file ds.json t.py\n")
    project, _ = build_project([str(tmp_path)], Config())
    plain, acc = project.jobs
    assert (plain.value("zero.stage"), plain.value("offload.optimizer"), plain.value("batch.micro_train")) == (3, "cpu", 2)
    assert plain.settings.get("zero.stage").path == str(tmp_path / "ds.json")
    assert acc.value("zero.stage") == 2  # what the launch itself says is kept


def test_python_interpreter_names_are_recognised_by_their_shape():
    from rlhf_lint.frameworks.launchers import _is_python

    assert all(_is_python(n) for n in ("python", "python3", "python3.11", "python311"))
    assert not any(_is_python(n) for n in ("python3.", "python.", "python3.a", "pythonx", "py", "python3.11.2",
                                           "python٣", ""))
