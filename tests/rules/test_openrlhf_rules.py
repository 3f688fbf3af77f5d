"""O rules beyond the fixture snapshots (tests/rules/test_rule_snapshots.py): safe versus unsafe fixes, idempotence,
messages, and edge cases written inline."""
from __future__ import annotations

import pytest

from openrlhf_harness import codes, findings, fix_all, fixture

SAFE_FIXED = {"O001_old_release_bad.sh": "O001_old_release_bad.fixed.sh",
              "O001_new_release_bad.sh": "O001_new_release_bad.fixed.sh",
              "O001_heredoc_bad.sh": "O001_heredoc_bad.fixed.sh"}
UNSAFE_FIXED = {"O010_hybrid_bad.sh": "O010_hybrid_bad.fixed.sh"}


@pytest.mark.parametrize("bad,fixed", sorted(SAFE_FIXED.items()))
def test_safe_fixes(bad, fixed):
    text = fixture(bad)
    result = fix_all(bad, text)
    assert result == fixture(fixed)
    assert fix_all(bad, result) == result  # idempotent
    fixed_codes = {c for c, *_ in codes(bad, result)}
    assert "O008" not in fixed_codes


@pytest.mark.parametrize("bad,fixed", sorted(UNSAFE_FIXED.items()))
def test_unsafe_fixes(bad, fixed):
    text = fixture(bad)
    assert fix_all(bad, text) == text  # nothing safe to do
    result = fix_all(bad, text, unsafe=True)
    assert result == fixture(fixed)
    assert {c for c, *_ in codes(bad, result)} & {"O011", "O018"} == set()


def test_messages_name_the_release_and_why():
    got = findings("x.sh", fixture("O001_old_release_bad.sh"))
    first = got[0][3].message
    assert "OpenRLHF v0.9.5 (set by openrlhf-version)" in first
    assert "releases up to v0.10.1.post2 call it `--zero_stage`" in first
    typo = [f for c, line, _, f in got if line == 7][0]
    assert "did you mean `--zero_stage`?" in typo.message and typo.fix is None


def test_rename_row_with_two_successors_keeps_both():
    got = findings("x.sh", fixture("O001_new_release_bad.sh"))
    split = [f for c, line, _, f in got if line == 6][0]
    assert split.fix.edits[0].content == "--ref.offload --reward.offload"


def test_switch_false_is_removed_only_as_an_unsafe_fix():
    text = ("# openrlhf-version: 0.11.0\npython3 -m openrlhf.cli.train_sft \\\n  --ds.packing_samples false \\\n"
            "  --data.max_len 4096\n")
    (code, line, col, f), = findings("x.sh", text)
    assert (code, line, col) == ("O004", 3, 24)
    assert "leave the switch out" in f.message
    assert fix_all("x.sh", text) == text
    assert fix_all("x.sh", text, unsafe=True) == ("# openrlhf-version: 0.11.0\npython3 -m openrlhf.cli.train_sft \\\n"
                                                  "  --data.max_len 4096\n")


def test_explicit_value_on_switch_is_removed():
    text = "# openrlhf-version: 0.11.0\npython3 -m openrlhf.cli.train_sft --ds.packing_samples=true\n"
    assert fix_all("x.sh", text) == "# openrlhf-version: 0.11.0\npython3 -m openrlhf.cli.train_sft --ds.packing_samples\n"


CROSS_FLAG_BAD = ["O010_hybrid_bad.sh", "O013_gae_bad.sh", "O014_misc_bad.sh", "O021_legacy_bad.sh",
                  "O022_sft_bad.sh"]


@pytest.mark.parametrize("name", CROSS_FLAG_BAD)
def test_cross_flag_checks_are_warnings_past_the_table(name):
    """A start-up check read off the newest table may have changed in a newer release: the same launch that gets
    an error on a known release gets a warning without a fix when its pin is newer than every table."""
    from rlhf_lint.engine.config import Config
    from rlhf_lint.frameworks.edge import newest_known

    text = fixture(name)
    known = [f for c, *_, f in findings(name, text) if "O010" <= c <= "O022" and f.severity is None]
    assert known, "the fixture should hold an error at its own release"
    major, minor, *_ = newest_known("openrlhf").lstrip("v").split(".")
    newer = Config(versions={"openrlhf": f"{major}.{int(minor) + 1}.0"})
    past = [(c, f) for c, *_, f in findings(name, text, newer) if "O010" <= c <= "O022"]
    assert past and all(f.severity is not None and f.severity.label == "warning" for _, f in past)
    assert all(f.fix is None and "that release may differ" in f.message for _, f in past)
