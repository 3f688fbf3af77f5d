"""startup.load_cached: a module read from its current bytecode cache is the module importlib would give, and
anything it cannot vouch for (no cache, a stale or foreign one, an error while executing) is left to importlib."""
from __future__ import annotations

import os
import py_compile
import sys

import pytest

from rlhf_lint.startup import import_module, load_cached


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package `fastpkg` on sys.path with a module `mod` compiled to its cache, as pip's install compiles it."""
    root = tmp_path / "fastpkg"
    root.mkdir()
    (root / "__init__.py").write_text("", encoding="utf-8")
    source = root / "mod.py"
    source.write_text("VALUE = 41 + 1\n\ndef answer():\n    return VALUE\n", encoding="utf-8")
    py_compile.compile(str(source), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("fastpkg", "fastpkg.mod"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    __import__("fastpkg")
    yield root
    for name in ("fastpkg", "fastpkg.mod"):
        sys.modules.pop(name, None)


def test_a_current_cache_gives_the_module_importlib_would(package):
    module = load_cached("fastpkg.mod")
    assert module is not None and sys.modules["fastpkg.mod"] is module and sys.modules["fastpkg"].mod is module
    assert module.answer() == 42 and module.answer.__module__ == "fastpkg.mod"
    assert module.__file__ == os.path.join(str(package), "mod.py")
    assert module.__cached__.endswith(f"mod.{sys.implementation.cache_tag}.pyc")
    assert module.__spec__.name == "fastpkg.mod" and module.__spec__.origin == module.__file__
    assert module.__spec__.has_location and module.__package__ == "fastpkg"
    assert module.__loader__.get_source("fastpkg.mod").startswith("VALUE")  # inspect and tracebacks find the text


def test_a_changed_source_is_left_to_importlib(package):
    (package / "mod.py").write_text("VALUE = 7\n\ndef answer():\n    return VALUE\n", encoding="utf-8")
    assert load_cached("fastpkg.mod") is None
    assert import_module("fastpkg.mod").answer() == 7  # the slow path reads the new source


def test_a_missing_or_foreign_cache_is_left_to_importlib(package):
    cached = package / "__pycache__" / f"mod.{sys.implementation.cache_tag}.pyc"
    data = cached.read_bytes()
    cached.write_bytes(b"\0\0\0\0" + data[4:])  # another interpreter's magic number
    assert load_cached("fastpkg.mod") is None
    cached.write_bytes(data[:16] + b"\xff\xff")  # a truncated code object
    assert load_cached("fastpkg.mod") is None
    cached.unlink()
    assert load_cached("fastpkg.mod") is None
    assert load_cached("not_imported_parent.mod") is None


def test_an_error_while_executing_leaves_no_half_module(package):
    source = package / "mod.py"
    source.write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    py_compile.compile(str(source), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    with pytest.raises(RuntimeError, match="boom"):
        load_cached("fastpkg.mod")
    assert "fastpkg.mod" not in sys.modules


def test_rule_modules_of_a_run_come_from_their_cache(tmp_path):
    """In a fresh process, the rule modules the registry imports by name never reach importlib's source loader."""
    import subprocess

    code = ("import sys, _frozen_importlib_external as ext\n"
            "read = []\nget_code = ext.SourceFileLoader.get_code\n"
            "ext.SourceFileLoader.get_code = lambda self, name: read.append(name) or get_code(self, name)\n"
            "from rlhf_lint.engine.registry import REGISTRY\n"
            "rules = [REGISTRY.get(code)._defined() for code in ('S002', 'S003', 'O001')]\n"
            "print(all(r.func is not None for r in rules), [n for n in read if '.rules.' in n and '._' not in n])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)  # caches
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    # the family packages and their _common modules are imported by importlib; the rule modules are not
    assert out.stdout.strip() == "True ['rlhf_lint.rules.shell', 'rlhf_lint.rules.openrlhf']"
