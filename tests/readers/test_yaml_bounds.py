"""YAML merge keys (<<) doubling level after level: 25 levels in 1 KB took 51 s and 800 MB (PyYAML's flattening
copies every merged entry). The reader measures the expansion first and leaves such a file unread, with F004."""
import json
import time

import pytest
import yaml

from lintutil import run_cli
from rlhf_lint.readers.source import Source
from rlhf_lint.readers.yaml import MAX_EXPANDED, MAX_NODES, expanded_size, parse_yaml_source


def merge_bomb(levels: int, verl: bool = True) -> str:
    lines = ["actor_rollout_ref:" if verl else "trainer:", "  a0: &a0 {x: 1, y: 2}"]
    for i in range(1, levels):
        lines.append(f"  a{i}: &a{i}\n    <<: [*a{i - 1}, *a{i - 1}]\n    k{i}: 1")
    return "\n".join(lines) + "\n"


def test_a_25_level_merge_bomb_is_skipped_with_f004_in_a_second(tmp_path):
    text = merge_bomb(25)
    assert len(text) < 1100
    (tmp_path / "ppo_trainer.yaml").write_text(text + "data:\n  train_batch_size: 8\ntrainer:\n  nnodes: 1\n")
    started = time.monotonic()
    proc = run_cli("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert time.monotonic() - started < 20
    found = json.loads(proc.stdout)["diagnostics"]
    assert [d["code"] for d in found] == ["F004"], found
    assert "merge keys expand this YAML to 335,544,2" in found[0]["message"]


def test_expanded_size_counts_aliases_and_merges_once_per_node():
    assert expanded_size(yaml.compose("a: 1\nb: [1, 2]")) == 7
    assert expanded_size(yaml.compose("a: &x [1, 2]\nb: *x\nc: *x")) == 1 + 2 * 3 + 3 * 2  # x counted per use
    assert expanded_size(yaml.compose(merge_bomb(10))) > 2 ** 10


def test_a_self_referencing_anchor_expands_without_end():
    assert expanded_size(yaml.compose("a: &x [1, *x]")) == MAX_EXPANDED


@pytest.mark.parametrize("levels,over", [(8, False), (18, True)])
def test_the_bound_decides_whether_the_file_is_read(levels, over):
    source = Source.from_text("ppo.yaml", merge_bomb(levels), kind="yaml")
    docs = parse_yaml_source(source)
    assert (docs is None) == over and bool(source.skipped) == over
    if over:
        assert f"{MAX_NODES:,}" in source.skipped[0][1]


@pytest.mark.parametrize("depth", [300, 3000, 30000])
def test_deep_nesting_is_f004_not_a_crash(tmp_path, depth):
    (tmp_path / "ppo_trainer.yaml").write_text("trainer: " + "[" * depth + "]" * depth + "\n")
    proc = run_cli("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in proc.stderr and proc.returncode == 1
    found = json.loads(proc.stdout)["diagnostics"]
    assert [d["code"] for d in found] in (["F004"], ["F003"]), found  # F003: a composer that refuses it itself


def test_json_composed_as_yaml_is_bounded_and_keeps_exact_spans():
    from rlhf_lint.readers.yaml import JSON_AS_YAML_BYTES, json_as_yaml, mapping_get, node_span

    text = '{"model": "Qwen/Qwen2.5-7B", "max_length": 2048}'
    (doc,) = json_as_yaml(Source.from_bytes("a.json", text.encode(), kind="json"))
    span = node_span(mapping_get(doc, "max_length"))
    assert text[span.start:span.end] == "2048"
    # deep, large or broken JSON is left unread, never composed into a crash
    deep = "[" * 30000 + "]" * 30000
    large = '{"k": "' + "x" * JSON_AS_YAML_BYTES + '"}'
    # YAML in a .json file: merge keys doubling over 25 levels would expand to 2^25 entries when constructed
    bomb = "a0: &a0 {k: 1}\n" + "".join(f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}], k{i}: 1}}\n" for i in range(1, 26))
    for bad in (deep, large, '{"k": [1, 2}', bomb):
        assert json_as_yaml(Source.from_bytes("b.json", bad.encode(), kind="json")) == []
    # JSON indented with tabs (inside the braces, where YAML's flow context allows them) still reads
    (tabbed,) = json_as_yaml(Source.from_bytes("c.json", b'{\n\t"max_length": 2048\n}', kind="json"))
    assert mapping_get(tabbed, "max_length").value == "2048"
