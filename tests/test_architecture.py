"""The layout holds: no import cycles (imports inside functions included), each layer imports only layers below it,
one rule per module named after its rule, and every package folder is installed (docs/architecture.md)."""
from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = {"rlhf_lint": "lint", "rlhf_lint.rules": "rules", "rlhf_lint.fixers": "fixers",
           "rlhf_lint.schemas": "schemas"}

# lowest first; a module may import its own layer and the layers before it, never a later one
LAYERS = [
    ("startup", ("rlhf_lint.startup",)),
    ("values", ("rlhf_lint", "rlhf_lint.model", "rlhf_lint.settings", "rlhf_lint.cachedir")),
    ("knowledge", ("rlhf_lint.schemas",)),
    ("readers", ("rlhf_lint.readers",)),
    ("fixers", ("rlhf_lint.fixers",)),
    ("frameworks", ("rlhf_lint.frameworks",)),
    ("memory", ("rlhf_lint.memory",)),
    ("rule api", ("rlhf_lint.engine.registry", "rlhf_lint.engine.rule_index")),
    ("rules", ("rlhf_lint.rules",)),
    ("engine", ("rlhf_lint.engine",)),
    ("reporters", ("rlhf_lint.reporters",)),
    ("cli", ("rlhf_lint.cli", "rlhf_lint.__main__", "rlhf_lint.api")),
]


def package_modules() -> dict[str, str]:
    """module name -> file, for every module of the package as installed (package-dir mapping of pyproject)."""
    modules = {}
    for package, folder in FOLDERS.items():
        base = os.path.join(ROOT, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if os.path.isfile(os.path.join(dirpath, d, "__init__.py")))
            rel = os.path.relpath(dirpath, base)
            prefix = package if rel == "." else f"{package}.{rel.replace(os.sep, '.')}"
            if prefix.split(".")[1:2] in (["rules"], ["fixers"], ["schemas"]) and folder == "lint":
                continue  # lint/ holds none of these; the mapping would name them twice
            for name in filenames:
                if name.endswith(".py"):
                    modules[prefix if name == "__init__.py" else f"{prefix}.{name[:-3]}"] = os.path.join(dirpath, name)
    return modules


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports anywhere in its body, relative imports resolved."""
    modules = package_modules()
    graph = {}
    for name, path in modules.items():
        is_package = path.endswith("__init__.py")
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = name.split(".")[: len(name.split(".")) - (0 if is_package else 1)]
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for alias in node.names:
                    child = f"{base}.{alias.name}"
                    found.add(child if child in modules else base)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best is not None, f"{module} is in no layer of tests/test_architecture.py"
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycle_counting_imports_inside_functions():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_each_layer_imports_only_the_layers_below_it():
    upward = [f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
              for a, deps in sorted(import_graph().items()) for b in sorted(deps) if layer_of(b) > layer_of(a)]
    assert upward == []


def test_readers_never_import_fixers_frameworks_or_the_engine():
    graph = import_graph()
    bad = [(a, b) for a, deps in graph.items() if a.startswith("rlhf_lint.readers")
           for b in deps if b.startswith(("rlhf_lint.fixers", "rlhf_lint.frameworks", "rlhf_lint.engine"))]
    assert bad == []


RULE_DECORATOR = re.compile(r'^@rule\(\s*"([A-Z][0-9]{3})",\s*"([a-z0-9-]+)"', re.MULTILINE)


def rule_modules() -> list[tuple[str, str]]:
    out = []
    base = os.path.join(ROOT, "rules")
    for family in sorted(os.listdir(base)):
        folder = os.path.join(base, family)
        if os.path.isdir(folder) and not family.startswith(("_", ".")):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py") and not name.startswith("_"):
                    out.append((family, os.path.join(folder, name)))
    return out


def test_one_rule_per_module_named_after_its_rule():
    assert len(rule_modules()) > 50
    for family, path in rule_modules():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        found = RULE_DECORATOR.findall(text)
        assert len(found) == 1, f"{path}: {len(found)} rules"
        code, name = found[0]
        function = name.replace("-", "_")
        assert os.path.basename(path) == f"{code.lower()}_{function}.py"
        assert re.search(rf"^def {function}\(", text, re.MULTILINE), f"{path}: the rule function is not {function}"


def test_a_family_folder_holds_only_its_own_codes():
    letters = {}
    for family, path in rule_modules():
        letters.setdefault(family, set()).add(os.path.basename(path)[0].upper())
    assert all(len(found) == 1 for found in letters.values()), letters
    assert len({next(iter(found)) for found in letters.values()}) == len(letters)


def test_every_package_folder_is_installed():
    """A folder missing from pyproject's package list works in an editable install and is absent from a wheel."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        declared = set(tomllib.load(fh)["tool"]["setuptools"]["packages"])
    folders = {name for name, path in package_modules().items() if path.endswith("__init__.py")}
    assert declared == folders
