"""`rlhf-lint estimate --model`: the job runs on exactly the GPUs asked for. GPUs that do not fill whole nodes and
parallel groups that do not divide the GPUs are refused (exit 2), never rounded silently."""
import json

import pytest

from lintutil import ROOT, run_cli
from rlhf_lint.cli.estimate import _check_parallel_sizes, _node_size


@pytest.mark.parametrize("gpus,option,configured,size", [
    (8, None, None, 8), (4, None, None, 8), (16, None, None, 8), (12, 6, None, 6), (12, 12, None, 12),
    (8, None, 4, 4), (8, 4, 8, 4), (3, 8, None, 8)])
def test_whole_nodes(gpus, option, configured, size):
    assert _node_size(gpus, option, configured) == size


@pytest.mark.parametrize("gpus,option,configured,says", [
    (12, None, None, "--gpus 12 does not fill whole nodes of 8 GPUs (assumed: give --gpus-per-node)"),
    (8, 3, None, "give --gpus 6 or 9, or --gpus-per-node 2"),
    (6, None, 4, "gpus-per-node = 4 (the configuration)")])
def test_gpus_that_do_not_fill_whole_nodes_are_refused(capsys, gpus, option, configured, says):
    with pytest.raises(SystemExit) as stop:
        _node_size(gpus, option, configured)
    assert stop.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.parametrize("gpus,ring,sequence,expert,says", [
    (2, None, 16, None, "--sequence-parallel-size 16 does not divide --gpus 2"),
    (8, 4, 4, None, "--ring-attn-size 4 x --sequence-parallel-size 4 does not divide --gpus 8"),
    (8, None, None, 3, "--expert-parallel-size 3 does not divide --gpus 8")])
def test_parallel_groups_that_do_not_divide_the_gpus_are_refused(capsys, gpus, ring, sequence, expert, says):
    with pytest.raises(SystemExit) as stop:
        _check_parallel_sizes(gpus, ring, sequence, expert)
    assert stop.value.code == 2 and says in capsys.readouterr().err


def test_parallel_groups_that_divide_the_gpus_pass():
    _check_parallel_sizes(8, 2, 4, 8)
    _check_parallel_sizes(1, None, None, None)


def test_the_estimate_shards_over_the_gpus_asked_for():
    common = ("estimate", "--model", "70B", "--gpu", "A100-80GB", "--zero", "3", "--format", "json")
    refused = run_cli(*common, "--gpus", "12", cwd=ROOT)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout  # was: 16 GPUs, silently
    twelve = run_cli(*common, "--gpus", "12", "--gpus-per-node", "6", cwd=ROOT)
    assert twelve.returncode == 0, twelve.stderr
    (policy,) = json.loads(twelve.stdout)["roles"]
    assert policy["gpus"] == 12


def test_a_megatron_layout_from_options_shards_as_megatron_does():
    # 16 GPUs, TP 8 x PP 2: data parallel 1, so each rank holds 6 + 12 bytes for its 1/16 of the layers
    common = ("estimate", "--model", "Qwen/Qwen2.5-72B-Instruct", "--gpus", "16", "--gpu", "H100", "--strategy",
              "megatron", "--format", "json", "--seq-len", "8192", "--packing")
    run = run_cli(*common, "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", "--recompute", "full",
                  cwd=ROOT)
    assert run.returncode == 0, run.stderr
    (policy,) = json.loads(run.stdout)["roles"]
    per_gpu = policy["per_gpu"]
    assert per_gpu["gradients"] == 2 * per_gpu["weights"] and per_gpu["optimizer_states"] == 6 * per_gpu["weights"]
    assert per_gpu["weights"] < 2 * 72.8e9 / 16 * 1.1
    # refused before any figure: a layout Megatron-Core does not start, or Megatron options without it
    for extra, says in ((("--tensor-parallel-size", "3"), "16 (--gpus) are not divisible by TP 3 x PP 1 x CP 1"),
                        (("--expert-parallel-size", "8", "--pipeline-parallel-size", "4"),
                         "ETP 1 x EP 8 x PP 4 = 32"),
                        (("--offload-param", "cpu"), "offloads the optimizer only"),
                        (("--gradient-checkpointing",), "--recompute full")):
        refused = run_cli(*common, *extra, cwd=ROOT)
        assert refused.returncode == 2 and says in refused.stderr, refused.stderr
    plain = run_cli("estimate", "--model", "7B", "--gpus", "8", "--tensor-parallel-size", "2", cwd=ROOT)
    assert plain.returncode == 2 and "give --strategy megatron" in plain.stderr


def test_megatron_dpo_from_options_keeps_a_reference_for_full_tuning_only():
    common = ("estimate", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpus", "8", "--gpu", "A100-80GB", "--strategy",
              "megatron", "--tensor-parallel-size", "2", "--job-type", "dpo", "--format", "json")
    full = json.loads(run_cli(*common, cwd=ROOT).stdout)
    lora = json.loads(run_cli(*common, "--lora-rank", "16", cwd=ROOT).stdout)
    assert {r["role"] for r in full["roles"]} == {"policy", "ref"}
    assert {r["role"] for r in lora["roles"]} == {"policy"}
