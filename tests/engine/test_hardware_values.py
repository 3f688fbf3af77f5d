"""Hardware values are checked alike in the configuration, on the command line and in a script's
`# rlhf-lint: hardware` comment: a wrong one never turns into a silent "no verdict" or a false memory error."""
import json

import pytest

from lintutil import ROOT, run_cli, run_lint
from rlhf_lint.engine.config import Config, ConfigError, config_from_mapping

REFUSED = [  # (value, what the message says)
    ({"gpu": "RTX-4O90"}, "unknown GPU (close: RTX-4090"),
    ({"gpu": ""}, "name a GPU"),
    ({"host-memory": "512"}, "has no unit"),
    ({"host-memory": 512}, "has no unit"),
    ({"container-memory": "lots"}, "not a size"),
    ({"host-memory": "0GB"}, "must be positive"),
    ({"gpus-per-node": -1}, "at least 1"),
    ({"gpus-per-node": 0}, "at least 1"),
    ({"nodes": "eight"}, "whole number"),
    ({"gpus-per-node": True}, "whole number"),
    ({"gpus-per-node": 10**26}, "out of range"),
]


@pytest.mark.parametrize("table,says", REFUSED)
def test_the_configuration_refuses_a_wrong_hardware_value(table, says):
    with pytest.raises(ConfigError, match=r"rlhf-lint\.toml: .*" + says.replace("(", r"\(")):
        config_from_mapping(table, "/repo/rlhf-lint.toml")


def test_right_values_pass_and_any_gpu_name_goes_with_its_memory():
    hw = config_from_mapping({"gpu": "MyCard", "gpu-memory": "24GiB", "gpus-per-node": 8, "nodes": "2",
                              "host-memory": "1TB", "container-memory": "500GiB"}).hardware
    assert (hw.gpu, hw.gpu_memory, hw.gpus_per_node, hw.nodes) == ("MyCard", 24 << 30, 8, 2)


def test_a_hardware_comment_keeps_its_valid_words():
    config = Config()
    declared = {"gpu": "RTX-4O90", "gpus-per-node": "8", "host-memory": "512"}
    hw = config.hardware_for(declared)
    assert (hw.gpu, hw.gpus_per_node, hw.host_memory) == (None, 8, None)
    errors = config.hardware_errors(declared)
    assert sorted(errors) == ["gpu", "host-memory"] and "RTX-4090" in errors["gpu"]


def test_a_bad_value_in_the_configuration_file_is_exit_2_with_one_line(tmp_path):
    (tmp_path / "rlhf-lint.toml").write_text('[tool.rlhf-lint]\ngpu = "RTX-4090"\nhost-memory = "512"\n')
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}\n')
    proc = run_cli("--no-cache", ".", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
    assert proc.stderr.strip().splitlines() == [
        f"rlhf-lint: error: {tmp_path / 'rlhf-lint.toml'}: host-memory '512' has no unit: write it as 512GiB or 512GB"]


COMMENTS = [  # (the comment's words, the word reported, a code that must not follow from the bad word)
    ("gpu=RTX-4090 gpus-per-node=8 host-memory=512", "host-memory=512", "M002"),  # was 512 bytes: a false M002
    ("gpu=RTX-4090 gpus-per-node=-1 host-memory=256GB", "gpus-per-node=-1", "M001"),  # was a false M001
    ("gpu=RTX-4090 gpus-per-node=eight host-memory=256GB", "gpus-per-node=eight", None),  # dropped the whole comment
    ("gpu=RTX-4O90 gpus-per-node=8 host-memory=256GB", "gpu=RTX-4O90", None),  # no verdict, silently
]


@pytest.mark.parametrize("words,reported,absent", COMMENTS)
def test_a_bad_word_of_the_hardware_comment_is_reported_where_it_is(tmp_path, words, reported, absent):
    with open(f"{ROOT}/examples/case5_7b_4090/train_ppo_7b_4090.sh", encoding="utf-8") as fh:
        lines = [line for line in fh.read().splitlines() if "rlhf-lint: hardware" not in line]
    lines.insert(1, f"# rlhf-lint: hardware {words}")
    (tmp_path / "train.sh").write_text("\n".join(lines) + "\n")
    result = run_lint([tmp_path], cache=False)
    warnings = [d for d in result.diagnostics if d.code == "M008" and d.severity.name == "WARNING"]
    assert [(d.start.line, lines[1][d.start.column - 1:d.end.column - 1]) for d in warnings] == [(2, reported)]
    assert absent not in {d.code for d in result.diagnostics}
    if "RTX-4O90" not in words:  # the GPU of the same comment still counts
        assert not [d for d in result.diagnostics if "no GPU in the hardware profile" in d.message]
    else:
        assert "RTX-4090" in warnings[0].message


def test_estimate_and_check_refuse_the_same_values_on_their_command_lines(tmp_path):
    for command in (["estimate", "--model", "7B", "--gpus", "8"], ["--no-cache", "."]):
        proc = run_cli(*command, "--gpu", "RTX-4O90", cwd=tmp_path)
        assert proc.returncode == 2 and "--gpu 'RTX-4O90': unknown GPU (close: RTX-4090" in proc.stderr, proc.stderr


def test_estimate_warns_of_a_bad_word_of_a_launch_s_comment_and_keeps_the_others(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("# rlhf-lint: hardware gpu=RTX-4090 gpus-per-node=eight\n"
                      "deepspeed --num_gpus 8 train.py --model_name_or_path Qwen/Qwen2.5-7B --bf16\n")
    proc = run_cli("estimate", "--format", "json", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "hardware comment: gpus-per-node must be a whole number, got 'eight'" in proc.stderr
    assert json.loads(proc.stdout)["gpu"] == "RTX-4090"
