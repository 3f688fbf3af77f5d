"""Helpers shared by tests, importable as `lintutil` from any folder under tests/ (pyproject's pytest settings put
tests/ on sys.path): run the linter or the CLI, register test-only rules, apply fixes to copies, check generated files."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys

from rlhf_lint.engine.config import Config
from rlhf_lint.engine.registry import REGISTRY, Rule
from rlhf_lint.engine.runner import Options, lint
from rlhf_lint.model import Applicability, Edit, Finding, Fix, Span

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_bench(name: str):
    """A script of bench/ (not a package) loaded as a module: bench/NAME.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "bench", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_lint(paths, config=None, **options):
    return lint([str(p) for p in paths], config or Config(), Options(**options))


def codes(result):
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


def run_cli(*args, cwd=None, env=None, timeout=120, stdin=None, max_memory=None):
    """The CLI in a process of its own: a bug that blocks (a FIFO) ends in TimeoutExpired after ``timeout`` seconds,
    one that reads without bound in MemoryError past ``max_memory`` bytes of address space."""
    full_env = dict(os.environ, NO_COLOR="1")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "rlhf_lint", *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout, stdin=stdin,
                          preexec_fn=None if max_memory is None else lambda: _limit_memory(max_memory))


def _limit_memory(size: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (size, size))


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




def build_written(tmp_path, files: dict):
    """Write {relative path: text} under tmp_path and build their project as a run would (jobs included)."""
    from rlhf_lint.engine.runner import build_project

    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    project, _ = build_project([str(tmp_path / n) for n in files], Config(root=str(tmp_path)))
    return project


def project_of_texts(files: dict, versions=None):
    """The project of {path: text} read in memory (no files): shell for .sh, ds_config for .json, else YAML."""
    from rlhf_lint.engine.project import Project, parse_source
    from rlhf_lint.readers.source import Source

    sources = []
    for path, text in files.items():
        kind = "shell" if path.endswith(".sh") else "ds_config" if path.endswith(".json") else "yaml"
        source = Source.from_text(path, text, kind=kind)
        parse_source(source)
        sources.append(source)
    return Project(sources, Config(versions=versions or {}))


def span_of(text: str, needle: str) -> Span:
    i = text.index(needle)
    return Span(i, i + len(needle))


def run(paths, select, config=None, fix=False):
    config = config or Config()
    result = lint([str(p) for p in paths], config, Options(select=select, fix=fix, unsafe_fixes=fix))
    return result


def triples(result):
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


def fix_copy(fixture, tmp_path, select, config=None):
    """Copy a fixture, apply every fix (unsafe included), return (new text, diagnostics left)."""
    target = tmp_path / fixture.name
    shutil.copyfile(fixture, target)
    result = run([target], select, config, fix=True)
    return target.read_bytes().decode("utf-8"), result


def assert_generated_file_current(generator: str, filename: str, write_flag: str) -> None:
    """``python -m <generator>`` prints what ``rlhf_lint/<filename>`` must contain (the rule index, the record
    inits): a stale file fails with the command that rewrites it."""
    import os
    import subprocess
    import sys

    import rlhf_lint

    out = subprocess.run([sys.executable, "-m", generator], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    with open(os.path.join(os.path.dirname(rlhf_lint.__file__), filename), encoding="utf-8") as fh:
        assert fh.read() == out.stdout, f"stale: run `python -m {generator} {write_flag}`"
