"""D001/D002 helpers for keys of other DeepSpeed releases: what a target outside the releases read is told."""
from __future__ import annotations

from types import SimpleNamespace

from rlhf_lint.model import Severity, Span
from rlhf_lint.rules.deepspeed._common import _other_release_finding


def _ctx(version: str):
    return SimpleNamespace(config=SimpleNamespace(versions={"deepspeed": version}, sources={}), project=None)


MEMBER = SimpleNamespace(key="old_knob", key_span=Span(3, 13))


def test_a_key_removed_inside_the_table_is_an_error_for_a_release_the_table_covers():
    f = _other_release_finding(_ctx("0.19.8"), MEMBER, "zero_optimization", True, "no",
                               "removed in DeepSpeed 0.19.7")
    assert f.severity is None  # the rule's own: error
    assert "is not a key of DeepSpeed 0.19.8 (removed in DeepSpeed 0.19.7)" in f.message


def test_past_the_edge_a_removed_key_is_a_warning_that_names_the_edge():
    f = _other_release_finding(_ctx("0.20.0"), MEMBER, "zero_optimization", True, "no",
                               "removed in DeepSpeed 0.19.7")
    assert f.severity is Severity.WARNING and f.fix is None
    assert "was removed in 0.19.7, but DeepSpeed 0.20.0 (set by deepspeed-version) is newer than the newest " \
           "release rlhf-lint knows, 0.19.8" in f.message


def test_between_two_releases_read_a_changed_key_is_a_warning():
    f = _other_release_finding(_ctx("0.14.0"), MEMBER, "", False, "maybe", "added after 0.13.5, by 0.14.5")
    assert f.severity is Severity.WARNING
    assert "at the top level was added after 0.13.5, by 0.14.5; rlhf-lint has no key table of DeepSpeed 0.14.0" \
        in f.message
