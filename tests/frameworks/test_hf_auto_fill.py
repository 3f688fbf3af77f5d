"""A015: the value transformers writes for stage3_prefetch_bucket_size "auto" (0.9 x hidden_size^2, a float before
4.45) against DeepSpeed's integer key (refused from 0.15.0): an error only with both releases known in the window."""
from lintutil import build_written, run
from rlhf_lint.engine.config import Config
from rlhf_lint.model import Severity

DS = '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3, ' \
     '"stage3_prefetch_bucket_size": "auto", "stage3_gather_16bit_weights_on_model_save": true}}\n'
RUN = "trl sft --model_name_or_path {model} --deepspeed ds.json --dataset_name d --output_dir out\n"


def _a015(tmp_path, pins: str, model="Qwen/Qwen2.5-7B"):
    folder = tmp_path / str(abs(hash((pins, model))))
    files = {"ds.json": DS, "run.sh": RUN.format(model=model)}
    if pins:
        files["requirements.txt"] = pins
    build_written(folder, files)
    return run([folder], ["A015"], Config(root=str(folder))).diagnostics


def test_both_releases_in_the_window_is_an_error_at_the_auto_token(tmp_path):
    (d,) = _a015(tmp_path, "transformers==4.44.2\ndeepspeed==0.15.4\n")
    assert d.severity == Severity.ERROR and d.path.endswith("ds.json")
    assert "= 11560550.4 for Qwen/Qwen2.5-7B (hidden size 3584)" in d.message


def test_one_release_unknown_is_a_warning_and_none_known_is_silent(tmp_path):
    (d,) = _a015(tmp_path, "deepspeed==0.15.0\n")
    assert d.severity == Severity.WARNING and "transformers release is not known" in d.message
    (d,) = _a015(tmp_path, "transformers==4.40.0\n")
    assert d.severity == Severity.WARNING and "DeepSpeed release is not known" in d.message
    assert _a015(tmp_path, "") == []


def test_releases_outside_the_window_are_silent(tmp_path):
    assert _a015(tmp_path, "transformers==4.45.2\ndeepspeed==0.15.4\n") == []  # transformers writes int()
    assert _a015(tmp_path, "transformers==4.44.2\ndeepspeed==0.14.5\n") == []  # DeepSpeed coerces the float
