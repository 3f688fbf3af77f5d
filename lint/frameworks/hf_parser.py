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

try:  # the C function, without bisect.py
    from _bisect import bisect_left
except ImportError:  # an interpreter without the accelerator
    from bisect import bisect_left

from rlhf_lint.startup.records import field, record

TRAINING_ARGUMENTS = ("TrainingArguments", "Seq2SeqTrainingArguments")


@functools.lru_cache(maxsize=1)
def table() -> dict:
    from rlhf_lint.schemas import load

    return load("hf/parser_fields.json")


# -- a project script's parser ---------------------------------------------------------------------------------------
def _package(name: str) -> str:
    """Where a dataclass the parser names comes from: transformers' TrainingArguments family, else TRL (a name
    neither has is then unknown to the table, and the parser with it)."""
    return "transformers" if name in TRAINING_ARGUMENTS else "trl"


@record
class Parser:
    """One script's parser: dataclasses as (package, name), package "trl" | "transformers" | "local"; a local class's
    bases the same way."""

    classes: list
    local: dict = field(default_factory=dict)  # name -> {"fields": [...], "bases": [(package, name)]}
    parse: dict = field(default_factory=dict)
    where: str = ""  # "scripts/train.py" or "TRL 0.19.1's trl/scripts/sft.py"

    @property
    def trl_classes(self) -> list[str]:
        """The TRL dataclasses it parses, directly or as a base of its own."""
        return [n for p, n in self.classes if p == "trl"] + \
            [b for c in self.local.values() for p, b in c["bases"] if p == "trl"]

    @property
    def uses_trl(self) -> bool:
        """A TRL dataclass, or TRL's parser over any dataclasses: what unknown words do follows the TRL release."""
        return bool(self.trl_classes) or self.parse.get("parser") == "TrlParser"

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
    from rlhf_lint.schemas.build.dataclass_parsers import script_parser

    spec = script_parser(tree)
    if spec is None:
        return None
    from rlhf_lint.frameworks.hf_script import hf_imports

    imported, modules = hf_imports(tree)

    def resolve(written: str, local_first: bool):
        if local_first and written in spec["local"]:
            return "local", written
        head, _, last = written.rpartition(".")
        if head:
            return (_package(last), last) if head.split(".")[0] in modules else None
        name = imported.get(written)
        return None if name is None else (_package(name), name)

    return _parser(spec, resolve, source.path)


def _parser(spec: dict, resolve, where: str) -> Parser | None:
    """A Parser from a script_parser spec, each class name resolved by ``resolve(name, local_first)`` to (package,
    name); None when one does not resolve (a dataclass from another module: its fields are not known here)."""
    classes = [resolve(n, True) for n in spec["dataclasses"]]
    # a base of the same name is the imported class it extends (class TrainingArguments(TrainingArguments))
    local = {n: {"fields": c["fields"], "bases": [resolve(b, b != n) for b in c["bases"] if b not in ("object", "")]}
             for n, c in spec["local"].items()}
    if None in classes or any(None in c["bases"] for c in local.values()):
        return None
    return Parser(classes, local, spec["parse"], where)


def trl_script_parser(script: str, index: int) -> Parser | None:
    """The parser of TRL's own ``trl/scripts/<script>.py`` at the TRL release of ``index``."""
    for row in table()["trl"].get("scripts", {}).get(script, []):
        if _at(row["in"], index):
            spec = row["spec"]

            def resolve(written: str, local_first: bool) -> tuple[str, str]:
                name = written.rpartition(".")[2]
                return ("local" if local_first and name in spec["local"] else _package(name)), name

            release = table()["trl"]["releases"][index]
            return _parser(spec, resolve, f"TRL {release}'s trl/scripts/{script}.py")
    return None


# -- fields at a release -----------------------------------------------------------------------------------------
def _at(ranges, index: int) -> bool:
    return any(a <= index <= b for a, b in ranges)


def _base(package: str, written: str) -> tuple[str, str]:
    """(package, name) of a base as the table writes it: ``transformers:Name`` names another package's class; a
    TRL class's other bases are TRL's unless of the TrainingArguments family."""
    if ":" in written:
        other, _, name = written.partition(":")
        return other, name
    return (_package(written), written) if package == "trl" else (package, written)


@functools.lru_cache(maxsize=4096)
def _table_class(package: str, name: str, index: int) -> tuple[frozenset, tuple] | None:
    """(its own fields, its bases as (package, name)) of a dataclass of the table at release ``index`` of its
    package; None when it has none there. Cached: every candidate pair of releases asks again."""
    cls = table()[package]["classes"].get(name)
    if cls is None or not _at(cls["in"], index):
        return None
    own = frozenset(f for f, ranges in cls["fields"].items() if _at(ranges, index))
    bases = tuple(_base(package, b) for joined, ranges in cls["bases"].items() if _at(ranges, index)
                  for b in joined.split(",") if b not in ("", "object"))
    return own, bases


def _parts(package: str, name: str, local: dict, at: dict, seen: tuple = ()) -> list[frozenset] | None:
    """The own fields of one dataclass and of each of its bases, one set each, at the releases ``at`` (package ->
    release index); None when some class is unknown there."""
    if (package, name) in seen:
        return None
    if package == "local":
        found = frozenset(local[name]["fields"]), local[name]["bases"]
    else:
        found = None if at.get(package) is None else _table_class(package, name, at[package])
    if found is None:
        return None
    out = [found[0]]
    for base in found[1]:
        sub = _parts(*base, local, at, seen + ((package, name),))
        if sub is None:
            return None
        out += sub
    return out


def _all_parts(classes, local: dict, at: dict) -> tuple[frozenset, ...] | None:
    """The field sets of dataclasses (package, name) with their bases at the releases ``at``."""
    out: list = []
    for package, name in classes:
        sub = _parts(package, name, local, at)
        if sub is None:
            return None
        out += sub
    return tuple(out)


def _parser_parts(parser: Parser, trl_i: int | None, tf_i: int) -> tuple[frozenset, ...] | None:
    return _all_parts(parser.classes, parser.local, {"trl": trl_i, "transformers": tf_i})


def fields(parser: Parser, trl_i: int | None, tf_i: int) -> set | None:
    """Every field the parser takes at the given releases; None when some dataclass is unknown there."""
    parts = _parser_parts(parser, trl_i, tf_i)
    return None if parts is None else set().union(*parts)


@functools.lru_cache(maxsize=1024)
def _options(names: frozenset) -> tuple[str, ...]:
    """The option strings argparse builds for these fields, sorted for a prefix search."""
    return tuple(sorted({o for f in names for o in (f, f.replace("_", "-"), "no_" + f, "no-" + f.replace("_", "-"))}))


def _takes(parts, flag: str) -> bool:
    name = flag.lstrip("-")
    if not name:
        return True
    for part in parts:
        options = _options(part)
        i = bisect_left(options, name)
        if i < len(options) and options[i].startswith(name):  # the option itself, or one it abbreviates
            return True
    return False


def accepts(names: set, flag: str) -> bool:
    """Whether argparse of a parser with these fields takes ``flag`` (``--x``, ``--x-y`` for ``x_y``, ``--no_x``
    for a boolean, and an unambiguous abbreviation, which argparse expands)."""
    return _takes((frozenset(names),), flag)


def _has_key(parts, key: str) -> bool:
    return any(key in part for part in parts)


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
    certain: bool  # every release involved is known: an error, else a warning that says why
    message: str


def _indices(project, package: str, launch_path: str):
    """(candidate release indices, the Target or None, past the table's edge) of ``package`` for a launch: the
    configured release, else the pin that governs the launch's folder (a monorepo's other pins do not count)."""
    from rlhf_lint.frameworks.edge import is_past, table_release, target_version

    releases = table()[package]["releases"]
    target = target_version(project, package, launch_path)
    if target is None:
        return list(range(len(releases))), None, False
    if is_past(target.version, releases[-1]):
        return [len(releases) - 1], target, True
    name = table_release(releases, target.version)
    return ([releases.index(name)] if name is not None else []), target, False


def _admitted(trl_version: str, tf_all: list[int]) -> list[int]:
    """The transformers releases (indices) the TRL release's own requirement admits."""
    from rlhf_lint.frameworks.versions import requirements_on

    releases = table()["transformers"]["releases"]
    out = set(tf_all)
    for row, wanted in requirements_on("trl", "transformers"):
        if not row.extra and row.versions.contains(trl_version):
            out &= {i for i in tf_all if wanted.contains(releases[i])}
    return sorted(out)


@functools.lru_cache(maxsize=64)
def _behaviour(trl_version: str | None) -> dict | None:
    """The row of trl_checks.json unknown_arguments for a TRL release (the newest row when unknown)."""
    from rlhf_lint.frameworks.deepspeed import row_at, version_tuple
    from rlhf_lint.schemas import load

    rows = load("hf/trl_checks.json")["unknown_arguments"]["rows"]
    return rows[-1] if trl_version is None else row_at(rows, version_tuple(trl_version))


def _span_text(ranges: list[str]) -> str:
    return ranges[0] if len(ranges) == 1 else f"{ranges[0]} .. {ranges[-1]}"


def _having(pairs: list[tuple[str, list[str]]]) -> str:
    """The releases of each package that have the name, for a message."""
    return "".join(f"; {package} {_span_text(have)} {'has' if len(have) == 1 else 'have'} it"
                   for package, have in pairs if have)


def unknown_arguments(command, project) -> list[Unknown]:
    """Flags of ``command`` (and keys of its ``--config`` recipe) that its training script's parser does not take,
    at every release the repository may target."""
    if command.launcher == "llamafactory":
        return _llamafactory_unknown(command, project)
    from rlhf_lint.frameworks.hf import trl_script_name

    trl_script = trl_script_name(command)
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
    candidates = []  # (parser, TRL release) for each TRL release some admitted transformers release completes
    field_sets: set = set()  # the distinct field sets (as parts) of every candidate pair
    newest = None  # those of the newest pair
    for i in trl_c:
        parser = trl_script_parser(trl_script, i) if trl_script is not None else own
        if parser is None:
            continue
        trl_version = trl_releases[i] if i is not None else None
        tf_here = tf_c if tf_target is not None or i is None else _admitted(trl_version, tf_c)
        found = [parts for j in tf_here if (parts := _parser_parts(parser, i, j)) is not None]
        if found:
            candidates.append((parser, trl_version))
            field_sets.update(found)
            newest = found[-1]
    if not candidates:
        return []
    trl_exact = not uses_trl or (trl_target is not None and not trl_past)
    tf_exact = tf_target is not None and not tf_past
    parser = candidates[-1][0]  # the newest release's: the one an unpinned repository gets
    out = []
    for name, path, span, kind in _arguments(command, project, parser):
        if any(_takes(parts, name) if kind == "flag" else _has_key(parts, name) for parts in field_sets):
            continue
        fails, drops = _treatment(kind, candidates, uses_trl)
        if not fails and not drops:
            continue  # the script takes the unknown words back itself: they may be its own
        field_name = name.lstrip("-").replace("-", "_") if kind == "flag" else name
        trl_have = releases_having("trl", parser.trl_classes, field_name) if uses_trl else []
        tf_have = releases_having("transformers", TRAINING_ARGUMENTS, field_name)
        removed = bool(trl_have or tf_have)  # a field of another release: not a name a future release adds
        certain = trl_exact and (tf_exact or removed) and fails and not drops
        what = "flag" if kind == "flag" else "key of the recipe"
        at = []
        if uses_trl:
            at.append(trl_target.phrase if trl_target is not None else "any TRL release rlhf-lint knows")
        at.append(tf_target.phrase if tf_target is not None else "any transformers release it admits"
                  if uses_trl and trl_target is not None else "any transformers release rlhf-lint knows")
        message = (f"`{name}` is not a {what} the parser of {parser.where} takes "
                   f"({', '.join(n for _p, n in parser.classes)}; {'; '.join(at)})")
        if fails and not drops:
            message += (": HfArgumentParser raises \"Some specified arguments are not used\" at start-up" if
                        kind == "flag" else ": TrlParser raises \"Unknown arguments from config file\" at start-up")
        elif fails:
            message += ": depending on the release, the parser raises at start-up or drops it"
        else:
            message += ": the parser drops it silently, so the value never reaches the trainer"
        message += _having([("TRL", trl_have), ("transformers", tf_have)])
        if not certain and fails and not drops:
            message += _unsure(("TRL", "trl", trl_target, trl_past, trl_releases[-1]) if uses_trl else None,
                               tf_target, tf_past, tf_releases[-1])
        near = _near(field_name, newest)
        if near:
            message += f"; did you mean `{('--' + near) if kind == 'flag' else near}`?"
        out.append(Unknown(name, path, span, certain, message))
    return out


def _unsure(framework: tuple | None, tf_target, tf_past: bool, tf_newest: str) -> str:
    """Why a finding is not certain: ``framework`` = (name, pin name, target, past the table, newest release) of the
    package whose parser it is (None: transformers' alone)."""
    if framework is not None:
        name, pin, target, past, newest = framework
        if target is None:
            return f"; the {name} version is unknown (pin {pin})"
        if past:
            return f"; {name} {target.version} is newer than the newest release rlhf-lint knows, {newest}: it may " \
                   f"define it"
    if tf_past:
        return f"; transformers {tf_target.version} is newer than the newest release rlhf-lint knows, {tf_newest}: " \
               f"it may define it"
    if tf_target is None:
        return f"; transformers is not pinned, and a release newer than {tf_newest} may define it"
    return ""


def _flags(command, skip) -> list[tuple]:
    """(name, path, span, "flag") of the command's ``--`` flags whose words are known, but those ``skip(name)``
    names."""
    return [(name, command.path, arg.flag_span, "flag") for arg in command.args
            if (arg.word is None or arg.word.known) and arg.flag.startswith("--")
            and not skip(name := arg.flag.split("=", 1)[0])]


def _recipe_keys(command, project, written: str, skip=lambda key: False) -> list[tuple]:
    """(key, path, span, "key") of the top-level keys of the YAML (or JSON) recipe ``written`` (as the command names
    it)."""
    target = project.resolve(command.path, written) if project is not None else None
    if target is None or target.kind not in ("yaml", "json"):
        return []
    from rlhf_lint.fixers.yaml import node_span
    from rlhf_lint.frameworks.hf import recipe_entries

    return [(key, target.path, node_span(key_node), "key")
            for key, (_value, key_node, _v) in (recipe_entries(target) or {}).items() if not skip(key)]


def _arguments(command, project, parser: Parser) -> list[tuple]:
    """(name as written, path, span, "flag" | "key") of the command's flags and of its ``--config`` recipe's keys."""
    from rlhf_lint.frameworks.launchers import underscored

    launch = _trl_cli_options() if command.launcher == "trl" else set()  # TRL's CLI takes them for accelerate
    out = _flags(command, lambda name: name in ("--config", "--help") or underscored(name) in launch)
    config = command.last("--config")
    if config is None or config.value is None or not config.value.known or not parser.reads_config:
        return out
    return out + _recipe_keys(command, project, config.value.text, lambda key: key == "env" or f"--{key}" in launch)


def _trl_cli_options() -> set:
    """accelerate's options TRL's CLI reads (schemas/hf/launchers.json trl_cli)."""
    from rlhf_lint.schemas import load

    return set(load("hf/launchers.json")["trl_cli"]["accelerate_options"])


def _treatment(kind: str, candidates: list, uses_trl: bool) -> tuple[bool, bool]:
    """(some candidate release raises on the unknown argument, some drops it silently)."""
    fails = drops = False
    for parser, trl_version in candidates:
        row = _behaviour(trl_version) if uses_trl else {"flags": "raise", "config": "raise"}
        if row is None:
            continue
        if parser.drops_unknown:
            drops = True
        elif kind == "flag" and parser.fails_on_unknown_flags:  # else handed back: the script may use it
            fails, drops = fails or row["flags"] == "raise", drops or row["flags"] != "raise"
        elif kind == "key" and parser.fails_on_unknown_flags:
            raises = row["config"] == "raise" and parser.fails_on_unknown_keys
            fails, drops = fails or raises, drops or not raises
    return fails, drops


def _near(name: str, parts) -> str | None:
    import difflib

    found = difflib.get_close_matches(name, sorted(set().union(*parts)), n=1, cutoff=0.85)
    return found[0] if found else None


# -- llamafactory-cli train -------------------------------------------------------------------------------------------
def _lf_parts(lf_i: int, tf_i: int) -> tuple[frozenset, ...] | None:
    """The field sets `llamafactory-cli train` accepts at LLaMA-Factory release ``lf_i`` and transformers ``tf_i``:
    its _TRAIN_ARGS dataclasses with their bases; None when unknown."""
    row = next((r for r in table()["llamafactory"].get("parsers", {}).get("train", []) if _at(r["in"], lf_i)), None)
    if row is None:
        return None
    return _all_parts([_base("llamafactory", n) for n in row["classes"]], {},
                      {"llamafactory": lf_i, "transformers": tf_i})


def _lf_arguments(command, project) -> list[tuple]:
    """(name, path, span, "flag" | "key") of a `llamafactory-cli train` launch: its YAML's top-level keys, its
    ``key=value`` overrides and its ``--key`` flags."""
    out = _flags(command, lambda name: name == "--help")
    for word in command.positionals:
        if not word.known:
            continue
        if "=" in word.text and not word.text.startswith("="):
            out.append((word.text.partition("=")[0], word.path, word.span, "key"))
        elif word.text.endswith((".yaml", ".yml")):
            out += _recipe_keys(command, project, word.text)
    return out


def _llamafactory_unknown(command, project) -> list[Unknown]:
    """Keys of a `llamafactory-cli train` launch that no dataclass of its _TRAIN_ARGS has: every LLaMA-Factory
    release raises "Some keys are not used by the HfArgumentParser" (unless ALLOW_EXTRA_ARGS is set)."""
    entry = command.entry.text if command.entry is not None and command.entry.known else ""
    if entry != "train" or "llamafactory" not in table():
        return []
    script = project.sources.get(command.path) if project is not None else None
    if script is not None and "ALLOW_EXTRA_ARGS" in script.text:
        return []  # LLaMA-Factory 0.9.2 on lets the variable through unknown keys
    lf_c, lf_target, lf_past = _indices(project, "llamafactory", command.path)
    tf_c, tf_target, tf_past = _indices(project, "transformers", command.path)
    found = [parts for i in lf_c for j in tf_c if (parts := _lf_parts(i, j)) is not None]
    if not found:
        return []
    field_sets = set(found)
    lf_data, tf_releases = table()["llamafactory"], table()["transformers"]["releases"]
    out = []
    for name, path, span, kind in _lf_arguments(command, project):
        field_name = name.lstrip("-").replace("-", "_")
        if any(_takes(parts, name) if kind == "flag" else _has_key(parts, field_name) for parts in field_sets):
            continue
        lf_have = releases_having("llamafactory", lf_data["classes"], field_name)
        tf_have = releases_having("transformers", TRAINING_ARGUMENTS, field_name)
        certain = lf_target is not None and not lf_past and ((tf_target is not None and not tf_past) or
                                                             bool(lf_have or tf_have))
        at = [lf_target.phrase if lf_target is not None else "any LLaMA-Factory release rlhf-lint knows",
              tf_target.phrase if tf_target is not None else "any transformers release rlhf-lint knows"]
        what = "flag" if kind == "flag" else "key"
        message = (f"`{name}` is not a {what} `llamafactory-cli train` takes (the fields of its model, data, "
                   f"training, finetuning and generating arguments; {'; '.join(at)}): HfArgumentParser raises "
                   f"\"Some keys are not used\" at start-up")
        message += _having([("LLaMA-Factory", lf_have), ("transformers", tf_have)])
        if not certain:
            message += _unsure(("LLaMA-Factory", "llamafactory", lf_target, lf_past, lf_data["releases"][-1]),
                               tf_target, tf_past, tf_releases[-1])
        near = _near(field_name, found[-1])
        if near:
            message += f"; did you mean `{near}`?"
        out.append(Unknown(name, path, span, certain, message))
    return out
