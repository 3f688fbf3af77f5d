"""bench/swift_notes.py: which example scripts count as memory notes, and how a note meets its estimate."""
from lintutil import load_bench


def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / "examples" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(tmp_path)


def test_notes_parse_per_card_figures_and_skip_ambiguous_scripts(tmp_path):
    notes = load_bench("swift_notes").notes
    root = _tree(tmp_path, {
        "a/ddp.sh": "# 27.5GiB * 2\nswift sft --model m\n",
        "b/four.sh": "# 4 * 60GiB; 7.5s/it\nswift sft --model m\n",
        "c/two.sh": "# full: 2 * 70GiB\n# lora: 2 * 14GiB\nswift sft --model m\n",
        "d/none.sh": "# no figure here\nswift sft --model m\n",
        "e/readme.md": "# 10GiB\n",
    })
    got = {path.split("examples/")[1]: figure for path, figure, _ in notes(root)}
    assert got == {"a/ddp.sh": 27.5, "b/four.sh": 60.0}


def test_a_note_is_compared_with_the_highest_gpu_group(tmp_path):
    estimate = load_bench("swift_notes").estimate
    root = _tree(tmp_path, {
        "lora.sh": "# 20GiB\nCUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B-Instruct --tuner_type lora "
                   "--torch_dtype bfloat16 --max_length 2048\n",
        "unknown.sh": "# 9GiB\nCUDA_VISIBLE_DEVICES=0 swift sft --model someone/unnamed-model --tuner_type lora\n",
    })
    lora = estimate(f"{root}/examples/lora.sh", "A100-80GB")
    assert lora["band"][0] <= lora["peak"] <= lora["band"][1] and lora["fits"] is True
    assert 14 < lora["peak"] < 30 and 78 < lora["card"] < 80  # 7B bf16 base plus a 2048-token step, one card
    assert "not in the catalog" in estimate(f"{root}/examples/unknown.sh", "A100-80GB")["declined"]


def test_the_configs_a_script_names_are_checked_beside_it(tmp_path):
    swift_notes = load_bench("swift_notes")
    root = _tree(tmp_path, {
        "fsdp/train.sh": "# 14GiB * 2\naccelerate launch --config_file ./examples/fsdp/fsdp2.json swift/cli/sft.py "
                         "--model Qwen/Qwen2.5-7B-Instruct --tuner_type lora --torch_dtype bfloat16 "
                         "--gradient_checkpointing false --max_length 2048 --save_config missing.yaml\n",
        "fsdp/fsdp2.json": '{"compute_environment": "LOCAL_MACHINE", "distributed_type": "FSDP", "num_processes": 2, '
                           '"mixed_precision": "bf16", "fsdp_config": {"fsdp_version": 2, '
                           '"fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "fsdp_activation_checkpointing": true, '
                           '"fsdp_reshard_after_forward": true}}\n',
        "fsdp/other.json": "{}\n",
    })
    script = f"{root}/examples/fsdp/train.sh"
    # named from the repository root; a name that is no file, and a sibling the script does not name, are left out
    assert swift_notes.named_configs(script, root) == [f"{root}/examples/fsdp/fsdp2.json"]
    alone, beside = swift_notes.estimate(script, "A100-80GB"), swift_notes.estimate(script, "A100-80GB", root)
    # read with its accelerate config: FSDP2 shards the frozen base over the two processes and checkpoints
    assert beside["peak"] < alone["peak"] - 5
