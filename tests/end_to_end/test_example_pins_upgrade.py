"""Field case 4 (34B DPO, transformers 4.38.1) and the openrlhf[vllm]==0.9.5 upgrade, in examples/."""
from __future__ import annotations

import os
import shutil

from lintutil import ROOT
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint

EXAMPLE = os.path.join(ROOT, "examples", "case4_34b_dpo")


def test_case4_findings():
    result = lint([EXAMPLE], Config(root=EXAMPLE), Options(select=["P"]))
    found = [(d.code, os.path.relpath(d.path, EXAMPLE), d.start.line, d.start.column, d.severity.label)
             for d in result.diagnostics]
    assert found == [
        ("P002", "requirements.txt", 4, 1, "error"),
        ("P002", "requirements.txt", 4, 1, "warning"),
        ("P001", os.path.join("upgrade", "requirements.txt"), 2, 1, "error"),
    ]
    rope, memory, upgrade = result.diagnostics
    assert "its own requirements contradict each other" in upgrade.message
    assert "transformers==5.3.0" in upgrade.message and "vllm==0.17.0" in upgrade.message
    assert "transformers 4.38.1 is known-bad" in rope.message
    assert "4.38.2 with DeepSpeed 0.13.2" in rope.message and "position_ids" in rope.message


def test_case4_unsafe_fix(tmp_path):
    work = tmp_path / "case4"
    shutil.copytree(EXAMPLE, work)
    result = lint([str(work)], Config(root=str(work)), Options(fix=True, unsafe_fixes=True, select=["P"]))
    text = (work / "requirements.txt").read_text()
    # ZeRO-3 is used (ds_config_zero3.json): 4.37.x is hit too, so the nearest clean release is 4.40.0
    assert "transformers==4.40.0\n" in text and "transformers==4.38.1" not in text
    assert [d.code for d in result.diagnostics] == ["P001"]
