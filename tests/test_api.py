"""The Python API: rlhf_lint.check / rlhf_lint.fix, documented in README, and a cheap ``import rlhf_lint``."""
import subprocess
import sys

import pytest

import rlhf_lint

DS = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "overlap_com": true},\n' \
     '  "fp16": {"enabled": true}, "bf16": {"enabled": true}\n}\n'


def test_check_returns_diagnostics(tmp_path):
    (tmp_path / "ds_config.json").write_text(DS)
    found = rlhf_lint.check([tmp_path])
    assert [(d.code, d.start.line, d.start.column) for d in found] == [("D001", 3, 37), ("D012", 4, 50)]
    assert found[0].path == str(tmp_path / "ds_config.json") and found[0].fix is not None
    assert [d.code for d in rlhf_lint.check(str(tmp_path / "ds_config.json"), select=["D012"])] == ["D012"]
    assert [d.code for d in rlhf_lint.check([tmp_path], ignore="D012")] == ["D001"]
    assert (tmp_path / "ds_config.json").read_text() == DS


def test_check_configuration_per_file_or_given(tmp_path):
    (tmp_path / "rlhf-lint.toml").write_text('ignore = ["D001"]\n')
    (tmp_path / "ds_config.json").write_text(DS)
    assert [d.code for d in rlhf_lint.check([tmp_path])] == ["D012"]  # found like the command line does
    assert [d.code for d in rlhf_lint.check([tmp_path], config={"ignore": ["D012"]})] == ["D001"]
    (tmp_path / "other.toml").write_text('select = ["D001"]\n')
    assert [d.code for d in rlhf_lint.check([tmp_path], config=tmp_path / "other.toml")] == ["D001"]


def test_bad_selection_or_configuration_raises(tmp_path):
    with pytest.raises(rlhf_lint.ConfigError):
        rlhf_lint.check([tmp_path], select=["ZZZ"])
    with pytest.raises(rlhf_lint.ConfigError):
        rlhf_lint.check([tmp_path], config={"selekt": ["D"]})


def test_fix_writes_or_only_computes(tmp_path):
    target = tmp_path / "ds_config.json"
    target.write_text(DS)
    dry = rlhf_lint.fix([tmp_path], write=False)
    assert dry.fixed == 1 and target.read_text() == DS
    assert dry.changed[str(target)][1] == DS.replace("overlap_com", "overlap_comm").encode()
    done = rlhf_lint.fix([tmp_path])
    assert target.read_text() == DS.replace("overlap_com", "overlap_comm")
    assert [d.code for d in done.diagnostics] == ["D012"]


def test_import_is_cheap():
    code = "import sys, rlhf_lint; print(sorted(m for m in sys.modules if m.startswith('rlhf_lint')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['rlhf_lint']"
    assert rlhf_lint.__all__ == ["check", "fix", "ConfigError", "__version__"]
    with pytest.raises(AttributeError):
        rlhf_lint.nothing_here
