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
