import contextlib
import os
import subprocess
import sys

import pytest

from rlhf_lint.engine.config import Config
from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity, Span
from rlhf_lint.engine.registry import REGISTRY, Rule
from rlhf_lint.engine.runner import Options, lint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_lint(paths, config=None, **options):
    return lint([str(p) for p in paths], config or Config(), Options(**options))


def codes(result):
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


def run_cli(*args, cwd=None, env=None):
    full_env = dict(os.environ, NO_COLOR="1")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "rlhf_lint", *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=120)


def _shout_rule(ctx):
    """Test rule: every `shout` token in a JSON string value should be `quiet`.

    ## What it does
    Used by the engine tests only.
    """
    from rlhf_lint.readers.json import JValue

    for path, member in ctx.tree.walk():
        node = member.value
        if isinstance(node, JValue) and node.value == "shout":
            yield Finding(node.span, f"{path} shouts", fix=Fix("quieten", (Edit.replace(node.span, '"quiet"'),)))
        if isinstance(node, JValue) and node.value == "break":
            yield Finding(node.span, "would break", fix=Fix("break it", (Edit.replace(node.span, '"x'),)))
        if isinstance(node, JValue) and node.value == "risky":
            yield Finding(node.span, "risky", fix=Fix("make safe", (Edit.replace(node.span, '"safe"'),),
                                                        Applicability.UNSAFE))


@contextlib.contextmanager
def temporary_rule(code, name, severity, func, **kwargs):
    """Register a test-only rule on JSON files for the duration of a test, then remove it from the registry."""
    REGISTRY.load()
    rule = Rule(code=code, name=name, severity=severity, func=func, kinds=frozenset({"json", "ds_config"}),
                docstring=func.__doc__, **kwargs)
    REGISTRY.add(rule)
    try:
        yield rule
    finally:
        del REGISTRY.rules[rule.code]
        del REGISTRY.by_name[rule.name]


@pytest.fixture
def shout_rule():
    with temporary_rule("F900", "test-shout", Severity.WARNING, _shout_rule, fixable=True,
                        default_enabled=False) as rule:
        yield rule


def span_of(text: str, needle: str) -> Span:
    i = text.index(needle)
    return Span(i, i + len(needle))
