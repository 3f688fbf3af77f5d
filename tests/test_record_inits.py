"""rlhf_lint/record_inits.py holds the __init__ of the package's hot record classes, compiled ahead of time; a stale
file would leave a changed class with the slower __init__ from closures (still correct), so it must be current."""
from __future__ import annotations

import os
import subprocess
import sys

from lintutil import assert_generated_file_current


def test_generated_module_is_current_and_serves_the_hot_record_classes():
    assert_generated_file_current("rlhf_lint.records", "record_inits.py", "--write-inits")
    code = ("import rlhf_lint.model as m, rlhf_lint.commands as c, rlhf_lint.registry as r, rlhf_lint.config as g\n"
            "print(*(k.__init__.__code__.co_filename for k in (m.Span, m.Diagnostic, c.Word, r.Rule, g.Config)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # hot classes (made per word, value or finding) get the generated __init__; the run's Config, one from closures
    assert [os.path.basename(f) for f in out.stdout.split()] == ["record_inits.py"] * 4 + ["records.py"]
