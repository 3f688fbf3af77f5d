"""`rlhf-lint knowledge`: per framework the releases the tables cover, the newest, and where each came from."""
from __future__ import annotations

import json

from click.testing import CliRunner

from rlhf_lint.cli.app import main


def test_json_lists_every_framework_with_its_newest_release():
    result = CliRunner().invoke(main, ["knowledge", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["refresh"] == "python -m rlhf_lint.schemas.build --all"
    by = {}
    for row in data["tables"]:
        by.setdefault(row["framework"], []).append(row)
        assert row["releases"] and row["newest"] == row["releases"][-1], row["table"]
        assert row["source"] and row["builder"]
    assert {"openrlhf", "deepspeed", "verl", "accelerate", "orz", "trl", "vllm"} <= set(by)
    flags = next(r for r in by["openrlhf"] if "CLI flags" in r["table"])
    assert flags["newest"] == "v0.11.2" and "pypi.org/project/openrlhf/0.11.2" in flags["source"]
    assert by["deepspeed"][0]["newest"] == "0.19.8" and by["deepspeed"][0]["releases"][0] == "0.10.3"
    assert "0.19.6" in by["deepspeed"][0]["releases"]  # the hand-read base among the releases read
    assert all(r["newest"] == "0.9.1" for r in by["verl"] if "trainer config" in r["table"])
    swift = by["ms-swift"][0]
    assert swift["newest"] == "4.6.0" and "pypi.org/project/ms-swift/4.6.0" in swift["source"]
    assert next(r for r in by["transformers"] if "causal_lm_loss" in r["table"])["releases"][0] == "4.30.2"


def test_text_names_the_refresh_command():
    result = CliRunner().invoke(main, ["knowledge"])
    assert result.exit_code == 0, result.output
    assert "deepspeed: newest 0.19.8" in result.output
    assert result.output.rstrip().endswith("refresh every table: python -m rlhf_lint.schemas.build --all")
