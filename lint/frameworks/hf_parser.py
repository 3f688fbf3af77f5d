"""What HfArgumentParser (and TRL's TrlParser on top of it) accepts for one launch.

A training script builds its parser from dataclasses: ``TrlParser((ScriptArguments, SFTConfig, ModelConfig))``.
Each dataclass field becomes a flag (``--max_length``, also ``--max-length``; ``--no_x`` for a boolean), and
``parse_args_and_config`` / ``parse_args_into_dataclasses`` raise on any other flag unless the script asks for the
remaining strings back. TrlParser also reads ``--config recipe.yaml``: a key no dataclass has raises "Unknown
arguments from config file" unless the script passes ``fail_with_unknown_args=False``, which ignores it silently.

The fields of transformers' TrainingArguments and of TRL's dataclasses per release, and the dataclasses TRL's own
scripts parse, are in schemas/hf/parser_fields.json (schemas/build/hf_parser.py). A project script is read with
``ast`` (never run): its parser is known only when every dataclass it names comes from trl or transformers or is a
dataclass the script itself defines on such bases.
"""
from __future__ import annotations

import ast
import functools

from rlhf_lint.schemas.build.dataclass_parsers import script_parser
from rlhf_lint.startup.records import field, record

TRAINING_ARGUMENTS = ("TrainingArguments", "Seq2SeqTrainingArguments")
HF_PACKAGES = ("trl", "transformers")


@functools.lru_cache(maxsize=1)
def table() -> dict:
    from rlhf_lint.schemas import load

    return load("hf/parser_fields.json")


# -- a project script's parser ---------------------------------------------------------------------------------------
def _imports(tree: ast.Module) -> tuple[dict, dict]:
    """({local name: (package, imported name)} of what a file imports from trl or transformers, {module alias:
    package} of ``import transformers`` and the like)."""
    names, modules = {}, {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in HF_PACKAGES and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = ((node.module or "").split(".")[0], alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root in HF_PACKAGES:
                    modules[alias.asname or root] = root
    return names, modules


@record
class Parser:
    """One script's parser: dataclasses as (package, name), package "trl" | "transformers" | "local"; a local class's
    bases the same way."""

    classes: list
    local: dict = field(default_factory=dict)  # name -> {"fields": [...], "bases": [(package, name)]}
    parse: dict = field(default_factory=dict)
    where: str = ""  # "scripts/train.py" or "TRL 0.19.1's trl/scripts/sft.py"

    @property
    def uses_trl(self) -> bool:
        return any(p == "trl" for p, _ in self.classes) or any(
            p == "trl" for c in self.local.values() for p, _ in c["bases"])

    @property
    def reads_config(self) -> bool:
        return self.parse.get("method") == "parse_args_and_config"

    @property
    def fails_on_unknown_flags(self) -> bool:
        return not self.parse.get("unread") and not self.parse.get("return_remaining_strings")

    @property
    def fails_on_unknown_keys(self) -> bool:
        return self.fails_on_unknown_flags and self.parse.get("fail_with_unknown_args", True) is not False

    @property
    def drops_unknown(self) -> bool:
        """The script asks for the unknown words back and throws them away (``*_, _ = ...``)."""
        return bool(self.parse.get("discards_rest")) and not self.parse.get("unread")


def project_parser(source) -> Parser | None:
    tree = getattr(source, "tree", None)
    if not isinstance(tree, ast.Module):
        return None
    spec = script_parser(tree)
    if spec is None:
        return None
    imported, modules = _imports(tree)

    def resolve(written: str, local_first: bool = True):
        if local_first and written in spec["local"]:
            return "local", written
        head, _, last = written.rpartition(".")
        if head and head.split(".")[0] in modules:
            return modules[head.split(".")[0]], last
        return imported.get(written)

    classes = [resolve(n) for n in spec["dataclasses"]]
    local = {}
    for name, cls in spec["local"].items():
        # a base of the same name is the imported class it extends (class TrainingArguments(TrainingArguments))
        bases = [resolve(b, local_first=b != name) for b in cls["bases"] if b not in ("object", "")]
        local[name] = {"fields": cls["fields"], "bases": bases}
    if None in classes or any(None in c["bases"] for c in local.values()):
        return None  # a dataclass from another module: its fields are not known here
    return Parser(classes, local, spec["parse"], source.path)


def trl_script_parser(script: str, index: int) -> Parser | None:
    """The parser of TRL's own ``trl/scripts/<script>.py`` at the TRL release of ``index``."""
    for row in table()["trl"].get("scripts", {}).get(script, []):
        if any(a <= index <= b for a, b in row["in"]):
            spec = row["spec"]

            def package(name: str, local_first: bool = True) -> tuple[str, str]:
                name = name.rpartition(".")[2]
                return ("local" if local_first and name in spec["local"] else
                        "transformers" if name in TRAINING_ARGUMENTS else "trl", name)

            local = {n: {"fields": c["fields"], "bases": [package(b, b != n) for b in c["bases"]
                                                          if b not in ("object", "")]}
                     for n, c in spec["local"].items()}
            release = table()["trl"]["releases"][index]
            return Parser([package(n) for n in spec["dataclasses"]], local, spec["parse"],
                          f"TRL {release}'s trl/scripts/{script}.py")
    return None


# -- fields at a release -----------------------------------------------------------------------------------------
def _at(ranges, index: int) -> bool:
    return any(a <= index <= b for a, b in ranges)


def _class_fields(package: str, name: str, local: dict, trl_i: int | None, tf_i: int, seen=()) -> set | None:
    """The fields of one dataclass (with its bases') at the given releases; None when some class is unknown there."""
    if (package, name) in seen:
        return None
    if package == "local":
        cls = local[name]
        out = set(cls["fields"])
        for base_package, base in cls["bases"]:
            sub = _class_fields(base_package, base, local, trl_i, tf_i, seen + ((package, name),))
            if sub is None:
                return None
            out |= sub
        return out
    index = tf_i if package == "transformers" else trl_i
    cls = table()[package]["classes"].get(name)
    if cls is None or index is None or not _at(cls["in"], index):
        return None
    out = {f for f, ranges in cls["fields"].items() if _at(ranges, index)}
    for bases, ranges in cls["bases"].items():
        if not _at(ranges, index):
            continue
        for base in filter(None, bases.split(",")):
            if base == "object":
                continue
            sub = _class_fields("transformers" if base in TRAINING_ARGUMENTS else package, base, local, trl_i, tf_i,
                                seen + ((package, name),))
            if sub is None:
                return None
            out |= sub
    return out


def fields(parser: Parser, trl_i: int | None, tf_i: int) -> set | None:
    out: set = set()
    for package, name in parser.classes:
        found = _class_fields(package, name, parser.local, trl_i, tf_i)
        if found is None:
            return None
        out |= found
    return out


def accepts(names: set, flag: str) -> bool:
    """Whether argparse of a parser with these fields takes ``flag`` (``--x``, ``--x-y`` for ``x_y``, ``--no_x``
    for a boolean, and an unambiguous abbreviation, which argparse expands)."""
    name = flag.lstrip("-")
    if not name:
        return True
    options = set()
    for f in names:
        options |= {f, f.replace("_", "-"), "no_" + f, "no-" + f.replace("_", "-")}
    return name in options or any(o.startswith(name) for o in options)


def releases_having(package: str, classes, field_name: str) -> list[str]:
    """The releases of ``package`` (oldest first) where one of ``classes`` (or TrainingArguments, for
    transformers) has the field."""
    data = table()[package]
    hits = set()
    for name in classes:
        cls = data["classes"].get(name)
        if cls is not None:
            for a, b in cls["fields"].get(field_name, []):
                hits.update(range(a, b + 1))
    return [data["releases"][i] for i in sorted(hits)]


# -- one launch -----------------------------------------------------------------------------------------------------
@record
class Unknown:
    """An argument the launch's parser does not take."""

    name: str  # as written: "--max_seq_length" or the YAML key
    path: str
    span: object
    kind: str  # "flag" | "key"
    fails: bool  # the parser raises (else it drops the argument silently)
    certain: bool  # every release involved is known: an error, else a warning that says why
    message: str


def _trl_script(command) -> str | None:
    """``sft`` of ``-m trl.scripts.sft`` or ``.../trl/scripts/sft.py``."""
    entry = command.entry.text if command.entry is not None and command.entry.known else ""
    if command.entry_kind == "module" and entry.startswith("trl.scripts."):
        return entry.rpartition(".")[2]
    path = "/" + entry.replace("\\", "/")
    if command.entry_kind == "script" and "/trl/scripts/" in path and path.endswith(".py"):
        return path.rpartition("/")[2][:-3]
    return None


def _indices(project, package: str, launch_path: str):
    """(candidate release indices, the Target or None, past the table's edge) of ``package`` for a launch: the
    configured release, else the pin that governs the launch's folder (a monorepo's other pins do not count)."""
    from rlhf_lint.frameworks.edge import Target, is_past, table_release, target_version

    releases = table()[package]["releases"]
    target = target_version(project, package)
    if target is not None and target.how == "pin":
        from rlhf_lint.frameworks.versions import governing_pin

        found = governing_pin(project, package, launch_path)
        target = None if found is None else Target(package, found[0], "pin", found[2], found[1])
    if target is None:
        return list(range(len(releases))), None, False
    if is_past(target.version, releases[-1]):
        return [len(releases) - 1], target, True
    name = table_release(releases, target.version)
    return ([releases.index(name)] if name is not None else []), target, False


def _admitted(trl_version: str, tf_all: list[int]) -> list[int]:
    """The transformers releases (indices) the TRL release's own requirement admits."""
    from packaging.requirements import InvalidRequirement, Requirement

    from rlhf_lint.frameworks.versions import requires_table

    releases = table()["transformers"]["releases"]
    out = set(tf_all)
    for row in requires_table().get("trl", []):
        if row.extra or not row.requires.startswith("transformers") or not row.versions.contains(trl_version):
            continue
        try:
            spec = Requirement(row.requires).specifier
        except InvalidRequirement:
            continue
        out &= {i for i in tf_all if spec.contains(releases[i])}
    return sorted(out)


def _behaviour(trl_version: str | None) -> dict | None:
    """The row of trl_checks.json unknown_arguments for a TRL release (the newest row when unknown)."""
    from rlhf_lint.frameworks.deepspeed import row_at, version_tuple
    from rlhf_lint.schemas import load

    rows = load("hf/trl_checks.json")["unknown_arguments"]["rows"]
    return rows[-1] if trl_version is None else row_at(rows, version_tuple(trl_version))


def _span_text(ranges: list[str]) -> str:
    return ranges[0] if len(ranges) == 1 else f"{ranges[0]} .. {ranges[-1]}"


def unknown_arguments(command, project) -> list[Unknown]:
    """Flags of ``command`` (and keys of its ``--config`` recipe) that its training script's parser does not take,
    at every release the repository may target."""
    from rlhf_lint.frameworks.edge import label

    trl_script = _trl_script(command)
    own = None
    if trl_script is None:
        entry = command.entry.text if command.entry is not None and command.entry.known else ""
        if command.entry_kind != "script" or not entry.endswith(".py") or project is None:
            return []
        script = project.resolve(command.path, entry)
        if script is None or script.kind != "python":
            return []
        own = project_parser(script)
        if own is None:
            return []
    trl_c, trl_target, trl_past = _indices(project, "trl", command.path)
    tf_c, tf_target, tf_past = _indices(project, "transformers", command.path)
    trl_releases, tf_releases = table()["trl"]["releases"], table()["transformers"]["releases"]
    uses_trl = trl_script is not None or own.uses_trl
    if not uses_trl:
        trl_c = [None]
    # per candidate TRL release: (parser, accepted names per admitted transformers release)
    combos = []
    for i in trl_c:
        parser = trl_script_parser(trl_script, i) if trl_script is not None else own
        if parser is None:
            continue
        trl_version = trl_releases[i] if i is not None else None
        tf_here = tf_c if tf_target is not None or i is None else _admitted(trl_version, tf_c)
        for j in tf_here:
            names = fields(parser, i, j)
            if names is not None:
                combos.append((parser, trl_version, j, names))
    if not combos:
        return []
    trl_exact = not uses_trl or (trl_target is not None and not trl_past)
    tf_exact = tf_target is not None and not tf_past
    parser = combos[0][0]
    out = []
    checks = []  # (name as written, path, span, kind)
    for arg in command.args:
        if arg.word is not None and not arg.word.known:
            continue
        if arg.flag in ("--config", "-h", "--help") or not arg.flag.startswith("--"):
            continue
        checks.append((arg.flag.split("=", 1)[0], command.path, arg.flag_span, "flag"))
    config = command.last("--config")
    if config is not None and config.value is not None and config.value.known and parser.reads_config:
        target = project.resolve(command.path, config.value.text) if project is not None else None
        if target is not None and target.kind == "yaml":
            from rlhf_lint.fixers.yaml import node_span
            from rlhf_lint.frameworks.hf import recipe_entries

            for key, (_value, key_node, _v) in (recipe_entries(target) or {}).items():
                if key != "env":
                    checks.append((key, target.path, node_span(key_node), "key"))
    for name, path, span, kind in checks:
        accepted = [c for c in combos if (accepts(c[3], name) if kind == "flag" else name in c[3])]
        if accepted:
            continue
        # how the parser treats it, per candidate TRL release: fails (raise) or drops it
        fails_any = drops_any = False
        for c_parser, trl_version, _j, _names in combos:
            row = _behaviour(trl_version) if uses_trl else {"flags": "raise", "config": "raise"}
            if row is None:
                continue
            if c_parser.drops_unknown:
                drops_any = True
            elif kind == "flag":
                if row["flags"] == "raise" and c_parser.fails_on_unknown_flags:
                    fails_any = True
                elif row["flags"] != "raise" and c_parser.fails_on_unknown_flags:
                    drops_any = True  # handed back to a script that does not look: nothing happens
            elif not c_parser.fails_on_unknown_flags:
                continue  # the script takes the unknown keys back: they may be its own
            else:
                if row["config"] == "raise" and c_parser.fails_on_unknown_keys:
                    fails_any = True
                else:
                    drops_any = True
        if not fails_any and not drops_any:
            continue  # the script takes the unknown words back itself: they may be its own
        field_name = name.lstrip("-").replace("-", "_") if kind == "flag" else name
        trl_classes = [n for p, n in parser.classes if p == "trl"] + \
            [b for c in parser.local.values() for p, b in c["bases"] if p == "trl"]
        trl_have = releases_having("trl", trl_classes, field_name) if uses_trl else []
        tf_have = releases_having("transformers", TRAINING_ARGUMENTS, field_name)
        removed = bool(trl_have or tf_have)  # a field of another release: not a name a future release adds
        certain = trl_exact and (tf_exact or removed) and fails_any and not drops_any
        what = "flag" if kind == "flag" else "key of the recipe"
        classes = ", ".join(n for _p, n in parser.classes)
        at = []
        if uses_trl:
            at.append(trl_target.phrase if trl_target is not None else "any TRL release rlhf-lint knows")
        if tf_target is not None:
            at.append(tf_target.phrase)
        elif uses_trl and trl_target is not None:
            at.append("any transformers release it admits")
        else:
            at.append("any transformers release rlhf-lint knows")
        message = f"`{name}` is not a {what} the parser of {parser.where} takes ({classes}; {'; '.join(at)})"
        if fails_any and not drops_any:
            message += (": HfArgumentParser raises \"Some specified arguments are not used\" at start-up" if
                        kind == "flag" else ": TrlParser raises \"Unknown arguments from config file\" at start-up")
        elif fails_any:
            message += ": depending on the release, the parser raises at start-up or drops it"
        else:
            message += ": the parser drops it silently, so the value never reaches the trainer"
        if trl_have:
            message += f"; TRL {_span_text(trl_have)} {'has' if len(trl_have) == 1 else 'have'} it"
        if tf_have:
            message += f"; transformers {_span_text(tf_have)} {'has' if len(tf_have) == 1 else 'have'} it"
        if not certain and fails_any and not drops_any:
            if uses_trl and trl_target is None:
                message += "; the TRL version is unknown (pin trl)"
            elif uses_trl and trl_past:
                message += f"; {label('trl')} {trl_target.version} is newer than the newest release rlhf-lint " \
                           f"knows, {trl_releases[-1]}: it may define it"
            elif tf_past:
                message += f"; transformers {tf_target.version} is newer than the newest release rlhf-lint " \
                           f"knows, {tf_releases[-1]}: it may define it"
            elif not tf_exact:
                message += f"; transformers is not pinned, and a release newer than {tf_releases[-1]} may define it"
        near = _near(field_name, combos[-1][3])
        if near:
            message += f"; did you mean `{('--' + near) if kind == 'flag' else near}`?"
        out.append(Unknown(name, path, span, kind, fails_any, certain, message))
    return out


def _near(name: str, names: set) -> str | None:
    import difflib

    found = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.85)
    return found[0] if found else None
