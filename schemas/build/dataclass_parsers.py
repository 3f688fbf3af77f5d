"""Dataclasses and HfArgumentParser calls read from Python source with ``ast`` (never imported or run): shared by the
table builder (schemas/build/hf_parser.py, on release wheels) and the linter (rlhf_lint.frameworks.hf_parser, on a
project's scripts)."""
from __future__ import annotations

import ast

PARSERS = ("TrlParser", "HfArgumentParser")
PARSE_METHODS = ("parse_args_and_config", "parse_args_into_dataclasses")


def is_dataclass(node: ast.ClassDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if getattr(target, "id", getattr(target, "attr", "")) == "dataclass":
            return True
    return False


def dataclass_fields(node: ast.ClassDef) -> list[str]:
    """The fields HfArgumentParser makes flags of: annotated names, less ClassVar and ``field(init=False)``."""
    out = []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        annotation = ast.unparse(stmt.annotation)
        if "ClassVar" in annotation or "InitVar" in annotation:
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "field" \
                and any(kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False
                        for kw in value.keywords):
            continue
        out.append(stmt.target.id)
    return out


def class_bases(node: ast.ClassDef) -> list[str]:
    return [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]


def script_parser(tree: ast.Module) -> dict | None:
    """{"dataclasses": [names as written], "local": {name: {"fields", "bases" as written}}, "parse": {"method",
    literal keywords}} of a script's one TrlParser / HfArgumentParser and its parse call; None when it has no such pair, or
    names its dataclasses in a way not read here (a call, a starred list)."""
    local = {n.name: {"fields": dataclass_fields(n), "bases": [ast.unparse(b) for b in n.bases]} for n in tree.body
             if isinstance(n, ast.ClassDef) and is_dataclass(n)}
    tuples = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, (ast.Tuple, ast.List)):
            tuples[node.targets[0].id] = node.value
    names = parse = parser_class = None
    unread = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = getattr(node.func, "id", getattr(node.func, "attr", ""))
        if callee in PARSERS:
            if names is not None:
                return None  # two parsers: which one reads the command line is not known here
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dataclass_types"),
                                                      None)
            if isinstance(arg, ast.Name):
                arg = tuples.get(arg.id, arg)
            elts = [arg] if isinstance(arg, (ast.Name, ast.Attribute)) else \
                arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else None
            if elts is None or not all(isinstance(e, (ast.Name, ast.Attribute)) for e in elts):
                return None
            names = [ast.unparse(e) for e in elts]  # "SFTConfig", or "transformers.TrainingArguments"
            parser_class = callee
            if any(k.arg in ("ignore_extra_args", None) for k in node.keywords):
                unread = True  # TrlParser(ignore_extra_args=...) (TRL 0.13) decides what unknown words do
        elif callee in PARSE_METHODS and isinstance(node.func, ast.Attribute):
            if parse is not None:
                return None
            parse = {"method": callee, **{k.arg: k.value.value for k in node.keywords
                                          if k.arg and isinstance(k.value, ast.Constant)}}
            if any(k.arg is None or (k.arg in ("return_remaining_strings", "fail_with_unknown_args", "args")
                                     and not isinstance(k.value, ast.Constant)) for k in node.keywords):
                parse["unread"] = True  # **kwargs or a computed switch: what it asks for is not known
            if node.args:
                parse["unread"] = True  # parses a list the script builds, not (only) the command line
    if names is None or parse is None:
        return None
    if unread:
        parse["unread"] = True
    parse["parser"] = parser_class  # TrlParser's handling of unknown words follows the TRL release
    if parse.get("return_remaining_strings"):
        for node in ast.walk(tree):  # `a, b, _ = parser.parse_args_and_config(return_remaining_strings=True)`
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and getattr(node.value.func, "attr", "") == parse["method"] \
                    and isinstance(node.targets[0], ast.Tuple) and node.targets[0].elts \
                    and getattr(node.targets[0].elts[-1], "id", "") == "_":
                parse["discards_rest"] = True
    return {"dataclasses": names, "local": {n: local[n] for n in names if n in local}, "parse": parse}
