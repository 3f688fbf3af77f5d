"""Properties: any mix of real, renamed, misspelt and abbreviated flags, values and releases never crashes the O
rules, and safe fixes converge to a script that still parses and on which they no longer fire."""
from __future__ import annotations

import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlhf_lint.frameworks.openrlhf import knowledge

from openrlhf_harness import codes, findings, fix_all

K = knowledge()
RELEASES = ["0.2.0", "0.5.0", "0.8.5", "0.9.5", "0.10.1.post2", "0.11.0"]
FLAGS = sorted({s.flag for s in K.specs["train_ppo_ray"]})
VALUES = ["1", "0", "-1", "-0.5", "8", "0.5", "bf16", "fp32", "true", "gae", "group_norm", "$X", '"$Y"', "a b",
          "$(nproc)", "=2"]

token = st.one_of(
    st.sampled_from(FLAGS),
    st.sampled_from(FLAGS).map(lambda f: f[: max(4, len(f) - 3)]),  # abbreviations, some ambiguous
    st.sampled_from(FLAGS).map(lambda f: f + "x"),  # misspelt
    st.sampled_from(VALUES),
)


def _script(release, module, words):
    head = f"# openrlhf-version: {release}\n" if release else ""
    body = " \\\n  ".join(w if w != "=2" else "--ds.zero_stage=2" for w in words)
    return f"{head}X=3\npython3 -m {module} \\\n  {body}\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(release=st.sampled_from(RELEASES + [None]),
       module=st.sampled_from(["openrlhf.cli.train_ppo_ray", "openrlhf.cli.train_sft", "openrlhf.cli.train_ppo",
                               "openrlhf.cli.nope"]),
       words=st.lists(token, min_size=0, max_size=12))
def test_rules_never_crash_and_fixes_converge(release, module, words):
    text = _script(release, module, words)
    got = findings("t.sh", text)
    for _, line, col, f in got:
        assert f.message and line >= 1 and col >= 1
    fixed = fix_all("t.sh", text)
    assert fix_all("t.sh", fixed) == fixed
    assert not [f for *_, f in findings("t.sh", fixed) if f.fix is not None and f.fix.applicability.value == "safe"]
    if fixed != text:
        assert subprocess.run(["bash", "-n"], input=fixed, text=True).returncode == 0
        untouched = [ln for ln in text.splitlines() if not ln.strip().startswith("--")]
        assert untouched == [ln for ln in fixed.splitlines() if not ln.strip().startswith("--")]


def test_every_release_reads_its_own_flags_cleanly():
    """A command that gives every non-switch flag of a release its default passes O001/O003/O005 at that release."""
    for tag in ("v0.5.0", "v0.9.5", "v0.10.2", "v0.11.0"):
        flags = K.flags_at("train_ppo_ray", K.index(tag))
        words = []
        for spec in flags.values():
            if spec.is_switch:
                words.append(spec.flag)
            elif spec.nargs == 2 and isinstance(spec.default, list):
                words += [spec.flag, *(str(v) for v in spec.default)]
            elif spec.default not in (None, "") and spec.nargs in (None,) and " " not in str(spec.default) \
                    and "\n" not in str(spec.default) and "<" not in str(spec.default):
                # argparse does not pass a non-string default through type=: 1e8 is the default of an int flag
                value = spec.default
                if spec.type == "int" and isinstance(value, float) and value == int(value):
                    value = int(value)
                words += [spec.flag, str(value)]
        text = _script(tag.lstrip("v"), "openrlhf.cli.train_ppo_ray", words)
        assert not {c for c, *_ in codes("t.sh", text)} & {"O001", "O003", "O004", "O005", "O007"}, tag
