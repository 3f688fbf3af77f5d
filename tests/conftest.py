"""Fixtures shared by every test folder; plain helpers live in lintutil.py."""
import pytest

from lintutil import _shout_rule, temporary_rule
from rlhf_lint.model import Severity


@pytest.fixture
def shout_rule():
    with temporary_rule("F900", "test-shout", Severity.WARNING, _shout_rule, fixable=True,
                        default_enabled=False) as rule:
        yield rule
