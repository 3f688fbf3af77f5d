"""Forks and unreleased code: flags and keys read statically from a checkout named in the configuration
(``openrlhf-source``, ``verl-source``), used instead of a release table.

Nothing is imported or run: OpenRLHF's CLIs are parsed with ``ast`` (each ``add_argument`` call with literal
arguments), verl's trainer config is loaded with ``yaml.safe_load``. What is read is cached per process, keyed by the
files' paths, sizes and modification times, so a run over many scripts reads a checkout once.

A small reader of its own; schemas/build's extractors read the same artifacts for the release tables, and a later
merge can make both one function.
"""
from __future__ import annotations

import functools
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

MAX_FILE_BYTES = 4 * 1024 * 1024  # a CLI module or a YAML config larger than this is not a config


def _signature(paths: list[str]) -> tuple:
    out = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append((path, st.st_size, st.st_mtime_ns))
    return tuple(out)


def _read(path: str) -> str | None:
    from rlhf_lint.readers.source import read_regular

    try:  # a checkout comes with the repository: a FIFO or a device in it is refused, not opened
        raw, _ = read_regular(path, MAX_FILE_BYTES)
    except OSError:
        return None
    return raw.decode("utf-8", "replace")


def checkout_text(root: str, relative: str) -> str | None:
    """The text of one file of a checkout (``relative`` with '/'), None when absent, unreadable or too large."""
    return _read(os.path.join(root, *relative.split("/")))


# -- OpenRLHF: argparse flags per CLI -----------------------------------------------------------------------------
def openrlhf_cli_files(root: str) -> list[str]:
    folder = os.path.join(root, "openrlhf", "cli")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".py") and not n.startswith("_"))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names]


def openrlhf_flags(root: str) -> dict[str, list[list]]:
    """{cli: [[flag, dest, action, type, default, choices, nargs], ...]} of a checkout (cached by file stats)."""
    return _openrlhf_flags(_signature(openrlhf_cli_files(root)))


@functools.lru_cache(maxsize=8)
def _openrlhf_flags(signature: tuple) -> dict[str, list[list]]:
    out: dict[str, list[list]] = {}
    for path, _, _ in signature:
        text = _read(path)
        if text is None:
            continue
        rows = argparse_rows(text)
        if rows:
            out[os.path.basename(path)[:-3]] = rows
    return out


_SWITCHES = {"store_true": ("bool", False), "store_false": ("bool", True)}


def argparse_rows(text: str) -> list[list]:
    """Every ``add_argument("--flag", ...)`` call of a module whose arguments are literals, as flag rows."""
    import ast

    from rlhf_lint.readers.python import quiet_ast_parse

    try:
        tree = quiet_ast_parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    rows: dict[str, list] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        long = [f for f in flags if f.startswith("--")]
        if not long:
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = _literal(kw.get("action"), "store")
        if not isinstance(action, str):
            action = "store"
        kind, default = _SWITCHES.get(action, (None, None))
        if kind is None:
            type_node = kw.get("type")
            kind = type_node.id if isinstance(type_node, ast.Name) and type_node.id in ("int", "float", "str") \
                else "str"
            default = _literal(kw.get("default"), None)
        elif "default" in kw:
            default = _literal(kw["default"], default)
        nargs = 0 if action in _SWITCHES else _literal(kw.get("nargs"), None)
        if kind == "str" and nargs in ("+", "*") and "type" not in kw:
            kind = "str"
        choices = _literal(kw.get("choices"), None)
        choices = list(choices) if isinstance(choices, (list, tuple)) else None
        dest = _literal(kw.get("dest"), None)
        for flag in long:
            name = dest if isinstance(dest, str) else long[0][2:].replace("-", "_")
            rows[flag] = [flag, name, action, kind, default, choices, nargs]
    return list(rows.values())


def _literal(node, fallback: Any) -> Any:
    import ast

    if node is None:
        return fallback
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return fallback


# -- verl: the trainer config's keys ------------------------------------------------------------------------------
def verl_config_files(root: str, config_name: str) -> list[str]:
    folder = os.path.join(root, "verl", "trainer", "config")
    generated = os.path.join(folder, f"_generated_{config_name}.yaml")
    if os.path.isfile(generated):  # verl writes the composed config beside its Hydra sources (0.5 and later)
        return [generated]
    plain = os.path.join(folder, f"{config_name}.yaml")
    return [plain] if os.path.isfile(plain) else []


def verl_keys(root: str, config_name: str = "ppo_trainer") -> dict | None:
    """{dotted key: default, section: {}} of a checkout's trainer config, None when it has none."""
    files = verl_config_files(root, config_name)
    if not files:
        return None
    return _verl_keys(_signature(files), os.path.join(root, "verl", "trainer", "config"))


@functools.lru_cache(maxsize=8)
def _verl_keys(signature: tuple, folder: str) -> dict | None:
    if not signature:
        return None
    data = _yaml_mapping(signature[0][0])
    if data is None:
        return None
    out: dict = {}
    for group in _defaults_list(data):  # a Hydra source config: mount each group's file where it says
        package, option = group
        sub = _load_group(folder, package, option)
        if sub is not None:
            _flatten(sub, package, out)
    data = {k: v for k, v in data.items() if k != "defaults"}
    _flatten(data, "", out)
    return out


def _yaml_mapping(path: str) -> dict | None:
    """The mapping a YAML file of the checkout holds, read safely; None when unreadable or not a mapping."""
    import yaml

    text = _read(path)
    if text is None:
        return None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def _defaults_list(data: dict) -> list[tuple[str, str]]:
    """(package, "group/option") of ``- group@package: option`` entries of a Hydra defaults list."""
    out = []
    for entry in data.get("defaults") or ():
        if not isinstance(entry, dict) or len(entry) != 1:
            continue
        (key, option), = entry.items()
        if not isinstance(key, str) or not isinstance(option, str) or key.startswith("override "):
            continue
        group, _, package = key.partition("@")
        out.append((package or group, f"{group}/{option}"))
    return out


def _load_group(folder: str, package: str, option: str, depth: int = 0) -> dict | None:
    if depth > 4:
        return None
    data = _yaml_mapping(os.path.join(folder, option + ".yaml"))
    if data is None:
        return None
    merged: dict = {}
    group = option.split("/", 1)[0]
    for entry in data.get("defaults") or ():  # ``- base_name`` inside a group file: the same group's base
        if isinstance(entry, str) and entry != "_self_":
            base = _load_group(folder, package, f"{group}/{entry}", depth + 1)
            if base:
                merged.update(base)
    merged.update({k: v for k, v in data.items() if k != "defaults"})
    return merged


def _flatten(data: dict, prefix: str, out: dict) -> None:
    parts = prefix.split(".") if prefix else []
    for i in range(1, len(parts) + 1):  # every enclosing section is a key too
        out.setdefault(".".join(parts[:i]), {})
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            _flatten(value, dotted, out)
        else:
            out[dotted] = value


# -- DeepSpeed: the fields and aliases a config module declares ----------------------------------------------------
def deepspeed_fields(root: str, relpath: str) -> frozenset[str]:
    """Names a DeepSpeed config module of a checkout declares: annotated class fields (pydantic models) and
    ``alias="..."`` strings; empty when the file is missing."""
    path = os.path.normpath(os.path.join(root, relpath))
    if not path.startswith(os.path.normpath(root) + os.sep):
        return frozenset()
    return _deepspeed_fields(_signature([path]))


@functools.lru_cache(maxsize=64)
def _deepspeed_fields(signature: tuple) -> frozenset[str]:
    import ast

    if not signature:
        return frozenset()
    from rlhf_lint.readers.python import quiet_ast_parse

    text = _read(signature[0][0])
    try:
        tree = quiet_ast_parse(text or "")
    except (SyntaxError, ValueError, RecursionError):
        return frozenset()
    names: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                names.add(stmt.target.id)
        for node in ast.walk(cls):
            if isinstance(node, ast.keyword) and node.arg == "alias" and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                names.add(node.value.value)
    return frozenset(names)
