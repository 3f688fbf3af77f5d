"""`rlhf-lint estimate` fits the terminal: a term's formula goes under its bar instead of a 220-character line."""
import os
import re

from lintutil import ROOT, run_cli


def test_estimate_lines_fit_the_terminal_width():
    example = os.path.join(ROOT, "examples", "case2_13b_container")
    for columns in (100, 80):
        out = run_cli("estimate", example, env={"COLUMNS": str(columns)}).stdout
        lines = out.splitlines()
        assert len(lines) > 20 and all(len(line) <= columns for line in lines), max(lines, key=len)
        # nothing is cut: the formula of the activations term is all there, under its bar
        flat = " ".join(line.strip() for line in lines)
        per_unit = re.search(r"no checkpointing: L\*s\*b\*h\*([\d.]+) = 40\*2048\*4\*5120\*([\d.]+) B", flat)
        assert per_unit and per_unit.group(1) == per_unit.group(2), flat
        bar = next(i for i, line in enumerate(lines) if line.strip().startswith("activations"))
        assert lines[bar + 1].startswith(" " * 8 + "no checkpointing")
