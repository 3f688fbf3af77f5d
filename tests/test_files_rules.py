"""F003 on files met in real repositories: data and templates stay quiet, broken JSON is still reported."""
import os

import pytest

from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "files")


def _diags(name):
    result = lint([os.path.join(HERE, name)], Config(), Options(select=["F003"]))
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


@pytest.mark.parametrize("name", [
    "F003_jsonl_data.json",  # JSON Lines saved as .json (simpleRL-reason's eval demo data)
    "ds_config_TEMPLATE.json",  # holes filled by sed (DeepSpeedExamples compression/bert)
    "F003_python_constants.json",  # Infinity/NaN as Python's json writes them (axolotl spectrum tables)
])
def test_not_reported(name):
    assert _diags(name) == []


@pytest.mark.parametrize("name, expected", [
    ("F003_bad.json", [("F003", 2, 26)]),
    ("F003_bad_jsonl.json", [("F003", 2, 1)]),  # a second line that does not parse: no JSON Lines, a broken file
])
def test_still_reported(name, expected):
    assert _diags(name) == expected
