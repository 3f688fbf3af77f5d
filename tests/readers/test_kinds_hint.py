"""The ORZ hint's literal pre-check (issue 17 throughput) answers as the regular expression alone does."""
from __future__ import annotations

import random

from rlhf_lint.readers.kinds import _ORZ_HINT, looks_like_orz


def test_orz_hint_precheck_agrees_with_the_pattern():
    rng = random.Random(4)
    parts = ["from orz.ppo import x\n", "import orz\n", "  import orzo\n", "xPPOExpConfig", "class PPOExpConfig:",
             "BasePPOExpConfig)", "orz", "PPOExp", "\n", " ", "import os\n", "\tfrom\torz.a import b\n", "# orz\n"]
    hits = 0
    for _ in range(3000):
        text = "".join(rng.choice(parts) for _ in range(rng.randrange(6)))
        assert looks_like_orz(text) == bool(_ORZ_HINT.search(text)), text
        hits += looks_like_orz(text)
    assert 300 < hits < 2700
