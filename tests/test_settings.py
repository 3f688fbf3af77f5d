"""The settings vocabulary (rlhf_lint.settings): every key the package writes or reads is declared there.

A static scan of every module of the package (lint/, rules/, fixers/) finds the string literals and f-strings used as
settings keys and fails naming file:line for an undeclared one; Settings refuses an undeclared key at run time; the
declarations themselves are complete (a type and a one-line meaning each) and free of duplicates.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest

from lintutil import ROOT
from rlhf_lint.frameworks.jobs import Job
from rlhf_lint.memory.estimate import with_settings
from rlhf_lint.model import Setting, Settings
from rlhf_lint.settings import DECLARED, ROLE, ROLES, VOCABULARY, UndeclaredSetting, check_key, is_declared

PACKAGE_DIRS = ("lint", "rules", "fixers")

# -- the static scan -------------------------------------------------------------------------------------------------
# Receivers whose .value/.get/.all (and _Inputs' .flag/.number) take a settings key: a Settings (``settings``,
# ``job.settings``, ``self.settings``), a Job (``job``, ``ctx.job``) and rlhf_lint.memory.estimate's _Inputs (``inp``).
RECEIVER = re.compile(r"(^|\.)(settings|job|inp)$")
ACCESSORS = frozenset({"value", "get", "all", "flag", "number"})
# Helpers that read ``<family>.<role>.<rest>`` before the key they are given: the role variant must be declared too.
ROLE_VARIANT_HELPERS = {"_per_role": 2}
# Setting also carries located values that are not settings of a job: the pins reader's ``pin.<package>``.
NOT_SETTINGS = ("pin.",)
UNRESOLVED = object()


class _Scope:
    """Which constant values a local name can take: from assignments and from for loops over literal sequences."""

    def __init__(self, module: ast.Module, func: ast.AST | None, parent: "_Scope | None"):
        self.parent = parent
        self.module = module
        self.bindings: dict[str, list] = {}
        body = func if func is not None else module
        for node in _walk_own(body):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                self._bind(node.targets[0], node.value)
            elif isinstance(node, (ast.For, ast.comprehension)):
                for element in self._elements(node.iter):
                    self._bind(node.target, element)

    def _elements(self, node) -> list:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
            base = self._literal(node.func.value)
            if isinstance(base, ast.Dict):
                if node.func.attr == "items":
                    return [ast.Tuple([k, v]) for k, v in zip(base.keys, base.values)]
                return list(base.keys if node.func.attr == "keys" else base.values)
            return []
        literal = self._literal(node)
        if isinstance(literal, (ast.Tuple, ast.List, ast.Set)):
            return list(literal.elts)
        return []

    def _literal(self, node):
        """A literal, or the literal a module-level name is bound to (``_MAPPING = [...]``)."""
        if isinstance(node, ast.Name):
            for stmt in self.module.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] \
                    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
                if any(isinstance(t, ast.Name) and t.id == node.id for t in targets):
                    return stmt.value
        return node

    def _bind(self, target, value) -> None:
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = [value] if not isinstance(value, ast.IfExp) else [value.body, value.orelse]
            for v in values:
                if isinstance(v, (ast.Tuple, ast.List)) and len(v.elts) == len(target.elts):
                    for t, e in zip(target.elts, v.elts):
                        self._bind(t, e)
                else:
                    for t in target.elts:
                        self._bind(t, UNRESOLVED)

    def lookup(self, name: str) -> list | None:
        scope = self
        while scope is not None:
            if name in scope.bindings:
                return scope.bindings[name]
            scope = scope.parent
        return None

    def keys(self, node, depth: int = 0) -> list[tuple[str, int]] | None:
        """(key, line of its literal) for each key an expression can be, else None (a computed key: Settings checks
        it at run time). One part of an f-string the scan cannot resolve stands for a role (``<role>``); a name
        bound to literals and to computed values gives its literals."""
        if depth > 5:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [(node.value, node.lineno)]
        if isinstance(node, (ast.IfExp, ast.Name)):
            values = [node.body, node.orelse] if isinstance(node, ast.IfExp) else self.lookup(node.id) or []
            out: list[tuple[str, int]] = []
            for v in values:
                out.extend((v is not UNRESOLVED and self.keys(v, depth + 1)) or ())
            return out or None
        if isinstance(node, ast.JoinedStr):
            out, unresolved = [""], 0
            for part in node.values:
                if isinstance(part, ast.Constant):
                    pieces = [str(part.value)]
                else:
                    pieces = [k for k, _ in self.keys(part.value, depth + 1) or ()]
                    if not pieces:
                        pieces, unresolved = [ROLE], unresolved + 1
                out = [o + p for o in out for p in pieces]
            return None if unresolved > 1 else [(key, node.lineno) for key in out]
        return None


def _walk_own(node):
    """The nodes of a function (or module) body, not those of the functions defined in it."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(child))


def _functions(node, scope: _Scope, module: ast.Module):
    """(function node, its scope) for every function, nested ones included, with their enclosing scopes."""
    for child in _walk_own(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = _Scope(module, child, scope)
            yield child, inner
            yield from _functions(child, inner, module)
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, scope, module)


def _params(func) -> list[str]:
    a = func.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def _arg(call: ast.Call, index: int, name: str):
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return call.args[index]
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _dict_keys(node, scope: _Scope, depth: int = 0) -> list:
    """The key expressions of a dict given as settings changes: a literal, a comprehension, ``a | b``, a name."""
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if k is not None]
    if isinstance(node, ast.DictComp):
        return [node.key]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _dict_keys(node.left, scope, depth) + _dict_keys(node.right, scope, depth)
    if isinstance(node, ast.Name) and depth < 5:
        return [k for v in scope.lookup(node.id) or () if v is not UNRESOLVED for k in _dict_keys(v, scope, depth + 1)]
    return []


def _module_path(module: str) -> str:
    """The file of a module of the package: rlhf_lint.rules.memory._common -> rules/memory/_common.py."""
    parts = module.split(".")
    if parts[:2] in (["rlhf_lint", "rules"], ["rlhf_lint", "fixers"]):
        return "/".join(parts[1:]) + ".py"
    return "/".join(["lint"] + parts[1:]) + ".py"


def _modules(root: str = ROOT):
    for d in PACKAGE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8") as fh:
                        yield os.path.relpath(path, root), fh.read()


def key_uses(modules) -> list[tuple[str, int, str, str]]:
    """(file, line, expression, key) for every settings key the modules use in a key position: the first argument
    of an accessor of a Settings, Job or _Inputs (aliases such as ``value = job.value`` included), of Setting(...),
    and of every helper that passes one of its parameters on to a key position (``add(key, ...)``,
    ``_span_of(ctx, key)``, ``_per_role(inp, role, key)``), and the keys of a dict literal given to a helper that
    reads a parameter's keys as settings (``setting_fix(..., {"zero.stage": 3}, ...)``, ``_what_if``)."""
    parsed = [(path, ast.parse(text, path)) for path, text in modules]
    # (module path or None for any, function name) -> {param index: param name} of key params / key-dict params
    key_params: dict[tuple, dict[int, str]] = {}
    dict_params: dict[tuple, dict[int, str]] = {}
    functions = []
    for path, tree in parsed:
        top = _Scope(tree, None, None)
        functions.append((path, tree, None, top))
        for func, scope in _functions(tree, top, tree):
            functions.append((path, tree, func, scope))
    names: dict[str, set[str]] = {}  # function name -> the modules defining one
    for path, _, func, _ in functions:
        if func is not None:
            names.setdefault(func.name, set()).add(path)
    imported = {path: {a.asname or a.name: (_module_path(n.module or ""), a.name)
                       for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
                for path, tree in parsed}

    def helper(path, call, table):
        if not isinstance(call.func, ast.Name):
            return None
        found = table.get((path, call.func.id))
        if found is None and call.func.id in imported[path]:  # a helper imported from another module
            found = table.get(imported[path][call.func.id])
        return found

    def positions(path, tree, func, scope):
        """(call, key expression) in this function's own body, and the call's aliases."""
        aliases = {n for n, vs in scope.bindings.items() if all(  # value = job.value
            isinstance(v, ast.Attribute) and v.attr in ACCESSORS and RECEIVER.search(ast.unparse(v.value))
            for v in vs)}
        for node in _walk_own(func if func is not None else tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ACCESSORS and RECEIVER.search(ast.unparse(f.value)) \
                    or isinstance(f, ast.Name) and f.id in aliases:
                if node.args:
                    yield node, node.args[0], "key"
                continue
            if isinstance(f, ast.Name) and f.id == "Setting":
                arg = _arg(node, 0, "key")
                if arg is not None:
                    yield node, arg, "key"
                continue
            for table, kind in ((key_params, "key"), (dict_params, "dict")):
                for index, name in (helper(path, node, table) or {}).items():
                    arg = _arg(node, index, name)
                    if arg is not None:
                        yield node, arg, kind

    # which helper parameters reach a key position (fixpoint: helpers calling helpers)
    changed = True
    while changed:
        changed = False
        for path, tree, func, scope in functions:
            if func is None:
                continue
            params = _params(func)
            loop_keys = {}  # loop variable -> the parameter it iterates (for key, v in changes.items())
            for node in _walk_own(func):
                if isinstance(node, ast.For):
                    it = node.iter
                    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in (
                            "items", "keys"):
                        it = it.func.value
                    target = node.target.elts[0] if isinstance(node.target, ast.Tuple) else node.target
                    if isinstance(it, ast.Name) and it.id in params and isinstance(target, ast.Name):
                        loop_keys[target.id] = it.id
            for _, expr, kind in positions(path, tree, func, scope):
                if not isinstance(expr, ast.Name):
                    continue
                if kind == "dict" and expr.id in params:  # _what_if(ctx, changes) -> with_settings(job, changes)
                    entry = dict_params.setdefault((path, func.name), {})
                    index = params.index(expr.id)
                    if index not in entry:
                        entry[index] = expr.id
                        changed = True
                elif kind != "key":
                    continue
                elif expr.id in params:
                    entry = key_params.setdefault((path, func.name), {})
                    index = params.index(expr.id)
                    if index not in entry:
                        entry[index] = expr.id
                        changed = True
                elif expr.id in loop_keys:
                    entry = dict_params.setdefault((path, func.name), {})
                    index = params.index(loop_keys[expr.id])
                    if index not in entry:
                        entry[index] = loop_keys[expr.id]
                        changed = True

    uses = []
    for path, tree, func, scope in functions:
        for call, expr, kind in positions(path, tree, func, scope):
            if kind == "dict":
                exprs = _dict_keys(expr, scope)
            else:
                exprs = [expr]
            for e in exprs:
                keys = scope.keys(e) if e is not None else None
                for key, line in keys or ():
                    if isinstance(call.func, ast.Name) and call.func.id == "Setting" and key.startswith(NOT_SETTINGS):
                        continue
                    uses.append((path, line, ast.unparse(e), key))
                    helper_name = call.func.id if isinstance(call.func, ast.Name) else None
                    if helper_name in ROLE_VARIANT_HELPERS and kind == "key" and "." in key:
                        family, _, rest = key.partition(".")
                        uses.append((path, line, f"{helper_name}: {ast.unparse(e)}", f"{family}.{ROLE}.{rest}"))
    return uses


def _undeclared(uses) -> list[str]:
    bad = []
    for path, line, expr, key in uses:
        expanded = [key.replace(ROLE, role) for role in ROLES] if ROLE in key else [key]
        missing = [k for k in expanded if not is_declared(k)]
        if missing:
            bad.append(f"{path}:{line}: {expr} -> {key!r} is not declared in rlhf_lint.settings"
                       + (f" (for {', '.join(missing)})" if ROLE in key else ""))
    return bad


@pytest.fixture(scope="module")
def uses():
    return key_uses(list(_modules()))


def test_every_key_the_package_uses_is_declared(uses):
    assert not _undeclared(uses), "\n".join(_undeclared(uses))


def test_scan_finds_the_keys_of_every_kind_of_use(uses):
    """The scan sees what it must: a scan finding nothing would pass the test above for nothing."""
    found = {(path, key) for path, _, _, key in uses}
    expected = {
        ("rules/memory/m004_zero_stage_too_low.py", "zero.stage"),  # ctx.job.value("zero.stage")
        ("rules/memory/m001_gpu_out_of_memory.py", "offload.optimizer"),  # value = job.value; value("...")
        ("rules/memory/m004_zero_stage_too_low.py", "zero.stage"),  # _what_if(ctx, {...}) -> with_settings
        ("rules/memory/m009_gpu_oom_at_length_bound.py", "batch.critic.forward_dynamic"),  # {k: True for k in ...}
        ("rules/memory/m005_vllm_gpu_memory_utilization.py", "vllm.gpu_memory_utilization"),  # _span_of(ctx, key)
        ("lint/frameworks/deepspeed.py", "offload.param"),  # add(f"offload.{what}") in a loop over literals
        ("lint/frameworks/orz.py", "topology.critic.gpus_per_node"),  # add(f"topology.{role}...") over roles
        ("lint/frameworks/orz.py", "offload.reward"),  # settings.value(f"offload.{role}")
        ("lint/frameworks/openrlhf.py", "topology.<role>.nodes"),  # a role the scan cannot resolve
        ("lint/memory/estimate.py", "batch.forward_max_tokens_per_gpu"),  # tuple assigned, then inp.get(budget)
        ("lint/memory/estimate.py", "precision.<role>.master_dtype"),  # _per_role's role variant
        ("lint/cli/estimate.py", "model.policy.params"),  # put(key, value) -> Setting(key, ...)
        ("rules/memory/_common.py", "train.gradient_checkpointing"),  # own if ... else "..." then job.value(key)
    }
    assert expected <= found, sorted(expected - found)
    assert len(uses) > 250


def _scan_source(text: str, path: str = "lint/frameworks/example.py") -> list[str]:
    return _undeclared(key_uses([(path, text)]))


@pytest.mark.parametrize("text, line, expected", [
    ('def f(job):\n    return job.value("zero.stge")\n', 2, "'zero.stge'"),
    ('def f(ctx):\n    return ctx.job.settings.get(f"model.{ctx.role}.paht")\n', 2, "'model.<role>.paht'"),
    ('def f(s):\n    s.add(Setting("offload.optimiser", "cpu"))\n', 2, "'offload.optimiser'"),
    ('def f(settings):\n    def add(key, v):\n        settings.add(Setting(key, v))\n    add("seq.max_length", 1)\n',
     4, "'seq.max_length'"),
    ('def f(inp):\n    for what in ("param", "optimizer", "grads"):\n        inp.get(f"offload.{what}")\n',
     3, "'offload.grads'"),
    ('M = [("batch.micro_train", "x"), ("batch.micro_trian", "y")]\n'
     'def f(settings):\n    for key, _ in M:\n        settings.value(key)\n', 1, "'batch.micro_trian'"),
    ('def fix(project, job, changes):\n    for key, value in changes.items():\n        job.settings.get(key)\n'
     'def rule(project, job):\n    return fix(project, job, {"zero.stage": 3, "zero.stag": 2})\n', 5, "'zero.stag'"),
    ('def f(inp, role):\n    return _per_role(inp, role, "train.packing")\n'
     'def _per_role(inp, role, key):\n    return inp.get(key)\n', 2, "'train.<role>.packing'"),
    ('def f(job):\n    value = job.value\n    return value("seq.prompt_max_length")\n', 3,
     "'seq.prompt_max_length'"),
])
def test_scan_names_the_file_and_line_of_an_undeclared_key(text, line, expected):
    bad = _scan_source(text)
    assert len(bad) == 1 and expected in bad[0], bad
    assert bad[0].startswith(f"lint/frameworks/example.py:{line}:"), bad


def test_scan_passes_declared_keys_and_leaves_other_dicts_alone():
    text = ('def f(job, inv, cfg):\n    job.value("zero.stage")\n    inv.get("algo.advantage.estimator")\n'
            '    cfg.get("actor_rollout_ref.rollout.name")\n    return {"train.batch_size": 1}\n'
            'def g(name):\n    return Setting(f"pin.{name}", "1.0")\n')
    assert _scan_source(text) == []


# -- data tables that map onto settings keys ---------------------------------------------------------------------
def _schema(name):
    with open(os.path.join(ROOT, "schemas", name), encoding="utf-8") as fh:
        return json.load(fh)


def test_keys_in_the_framework_tables_are_declared():
    keys = []
    openrlhf = _schema("openrlhf/openrlhf.json")
    for table in openrlhf["vocabulary"].values():
        if isinstance(table, dict):
            keys += [("openrlhf.json vocabulary", flag, entry[0]) for flag, entry in table.items()]
    keys += [("openrlhf.json version_defaults", "", row["key"]) for row in openrlhf.get("version_defaults", ())]
    keys += [("openrlhf/sleep.json", "", row["key"]) for row in _schema("openrlhf/sleep.json")["rows"]]
    keys += [("memory_fix_flags.json", "", key) for key in _schema("memory_fix_flags.json").get("openrlhf", {})]
    keys += [("verl/settings_map.json", row["key"], row["setting"])
             for row in _schema("verl/settings_map.json")["rows"]]
    keys += [("launchers.json accelerate", flag, row["key"])
             for flag, row in _schema("launchers.json")["accelerate"]["settings"].items()]
    keys += [("accelerate/deepspeed_keys.json", name, row["key"])
             for name, row in _schema("accelerate/deepspeed_keys.json")["settings"].items()]
    assert len(keys) > 40
    bad = [f"{table} {where}: {key!r}" for table, where, key in keys if not is_declared(key)]
    assert not bad, bad


# -- behaviour ---------------------------------------------------------------------------------------------------
TYPO = "zero.stge"


def test_a_typo_raises_instead_of_reading_none():
    settings = Settings()
    settings.add(Setting("zero.stage", 3))
    assert settings.value("zero.stage") == 3 and settings.get("zero.stage").value == 3
    assert settings.value("topology.critic.nodes", "absent") == "absent"
    for read in (settings.get, settings.value, settings.all):
        with pytest.raises(UndeclaredSetting, match=re.escape(repr(TYPO))):
            read(TYPO)
    with pytest.raises(UndeclaredSetting):
        settings.add(Setting(TYPO, 3))
    with pytest.raises(UndeclaredSetting):
        Settings([Setting("zero.stage", 3), Setting(TYPO, 3)])
    assert [s.key for s in settings] == ["zero.stage"]  # the refused write left nothing behind


def test_a_typo_raises_through_jobs_and_what_ifs():
    job = Job("j", "train.sh", None, "deepspeed", Settings([Setting("zero.stage", 2)]))
    assert job.value("zero.stage") == 2
    with pytest.raises(UndeclaredSetting):
        job.value("model.actor.pth")
    assert with_settings(job, {"zero.stage": 3}).value("zero.stage") == 3
    assert job.value("zero.stage") == 2  # the what-if copy leaves the job alone
    with pytest.raises(UndeclaredSetting):
        with_settings(job, {TYPO: 3})


def test_is_declared_expands_roles():
    for role in ROLES:
        assert is_declared(f"model.{role}.path") and is_declared(f"batch.{role}.micro_train")
    assert not is_declared("model.<role>.path")  # the placeholder itself is no key
    assert not is_declared("model.judge.path")  # not a role
    assert not is_declared("offload.critic")  # offload.ref / offload.reward only
    assert not is_declared(TYPO) and not is_declared("") and not is_declared(None)
    assert check_key("zero.stage") == "zero.stage"
    with pytest.raises(UndeclaredSetting):
        check_key(TYPO)


# -- the declarations ----------------------------------------------------------------------------------------------
def test_declarations_are_unique_typed_and_explained():
    names = [name for name, _, _ in VOCABULARY]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    expanded = [key for name in names for key in ([name.replace(ROLE, r) for r in ROLES] if ROLE in name else [name])]
    assert len(expanded) == len(set(expanded)) == len(DECLARED), "a <role> entry and a concrete entry overlap"
    for name, kind, meaning in VOCABULARY:
        assert re.fullmatch(r"[a-z_]+(\.([a-z_]+|<role>))*", name), name
        kinds = kind if isinstance(kind, tuple) else (kind,)
        assert kinds and all(isinstance(k, type) for k in kinds), name
        assert isinstance(meaning, str) and meaning.strip() and "\n" not in meaning, name


def test_roles_live_in_settings():
    assert set(ROLES) >= {"actor", "critic", "ref", "reward", "vllm", "policy"}


def test_settings_module_imports_nothing():
    """Start-up: every run imports rlhf_lint.settings through rlhf_lint.model."""
    with open(os.path.join(ROOT, "lint", "settings.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == ["from __future__ import annotations"]
    code = "import sys; before = set(sys.modules); import rlhf_lint.settings; print(sorted(set(sys.modules) - before))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "['rlhf_lint', 'rlhf_lint.settings']"


def test_builders_write_values_of_the_declared_types(monkeypatch):
    """Every known value the job builders write for examples/ and tests/fixtures has its key's declared type."""
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import Options, lint
    from rlhf_lint.model import UNKNOWN

    types = {}
    for name, kind, _ in VOCABULARY:
        for key in ([name.replace(ROLE, role) for role in ROLES] if ROLE in name else [name]):
            types[key] = kind if isinstance(kind, tuple) else (kind,)
    seen, wrong = [], []
    add = Settings.add

    def checked_add(self, setting):
        value = setting.value
        if value is not None and value is not UNKNOWN:
            kinds = types[setting.key]
            if float in kinds and type(value) is int:
                kinds = kinds + (int,)  # 1 for 1.0
            if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
                wrong.append(f"{setting.key} = {value!r} ({setting.path}, {setting.origin})")
            seen.append(setting.key)
        return add(self, setting)

    monkeypatch.setattr(Settings, "add", checked_add)
    for top in ("examples", os.path.join("tests", "fixtures")):
        for entry in sorted(os.listdir(os.path.join(ROOT, top))):
            path = os.path.join(ROOT, top, entry)
            lint([path], Config(root=path if os.path.isdir(path) else os.path.dirname(path)), Options(jobs=1))
    assert not wrong, wrong
    assert len(seen) > 500 and len(set(seen)) > 60, (len(seen), len(set(seen)))
