"""Launchers: which word of argv starts the training program, and the generic job of a plain launch.

``recognise`` turns the argv of one simple command into a ``Command``: the launcher (deepspeed, torchrun, accelerate
launch, ray job submit, srun, python) and its own options, the entry (``-m module`` or ``script.py``) and the
training program's arguments grouped as flags with their values. The option tables are data
(``schemas/launchers.json``). ``interpret_generic`` is the fallback interpreter: it reads what any launcher says
about topology and which DeepSpeed / accelerate config file the launch uses.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~2 ms of every start)

from rlhf_lint.readers.commands import Arg, Command, Word
from rlhf_lint.frameworks.jobs import Job, job_builder
from rlhf_lint.model import UNKNOWN, Setting, Settings, Span
from rlhf_lint.startup import import_module

if TYPE_CHECKING:
    from rlhf_lint.readers.shell import ShellScript, SimpleCommand
    from typing import Callable

    from rlhf_lint.readers.source import Source


def _is_python(name: str) -> bool:
    """``python``, ``python3``, ``python3.11`` (a string test: this runs for every command of every script)."""
    if not name.startswith("python"):
        return False
    major, dot, minor = name[6:].partition(".")
    return (not major and not dot) or (major.isascii() and major.isdigit()
                                       and (not dot or (minor.isascii() and minor.isdigit())))


def launcher_specs() -> dict:
    from rlhf_lint.schemas import load

    return load("launchers.json")


def _is_flag(word: Word) -> bool:
    return word.known and word.text.startswith("-") and len(word.text) > 1 and not _starts_negative_number(word.text)


# The two tests below are string forms of regular expressions (`re` would compile them on every start; they run on
# every word); tests/frameworks/test_string_tests_match_regexes.py checks them against the expressions on generated
# text.
def _starts_negative_number(text: str) -> bool:
    r"""`-1`, `-.5`, `-2e-3`, `-inf`, `-nan`: a value, not a flag (``^-(?:\d|\.\d|inf$|nan$)``)."""
    if text[:1] != "-":
        return False
    rest = text[1:]
    return rest[:1].isdecimal() or (rest[:1] == "." and rest[1:2].isdecimal()) or rest in ("inf", "nan", "inf\n", "nan\n")


def _is_line_break(between: str, backslash: bool) -> bool:
    r"""Blanks around one line break, escaped when ``backslash`` (``^[ \t]*\\\r?\n[ \t]*$``, or without ``\\``)."""
    rest = between.lstrip(" \t")
    if backslash:
        if rest[:1] != "\\":
            return False
        rest = rest[1:]
    if rest[:1] == "\r":
        rest = rest[1:]
    if rest[:1] != "\n":
        return False
    rest = rest[1:]
    if rest[-1:] == "\n":  # `$` also matches before a final newline
        rest = rest[:-1]
    return not rest.strip(" \t")


def split_flag_word(word: Word) -> Arg:
    """`--flag=value` -> Arg(flag, value word) with exact spans when the token is written as is."""
    flag, eq, value = word.text.partition("=")
    if not eq or not word.text.startswith("--"):
        return Arg(flag=word.text, flag_span=word.span, word=word)
    written = word.span.end - word.span.start == len(word.text) and word.origin_span is None
    if written:
        flag_span = Span(word.span.start, word.span.start + len(flag))
        value_span = Span(flag_span.end + 1, word.span.end)
    else:
        flag_span = value_span = word.span
    # `--flag=$VAR`: a fix of the value edits the assignment of VAR
    origin_span = None if written else word.origin_span_of(len(flag) + 1, len(word.text))
    value_word = Word(value, value_span, word.path, origin=word.origin, origin_span=origin_span,
                      literal_quotes=word.literal_quotes)
    return Arg(flag=flag, flag_span=flag_span, values=[value_word], word=word)


def group_args(words: list[Word]) -> tuple[list[Word], list[Arg]]:
    """Plain words before the first flag, then each flag with the plain words after it."""
    positionals: list[Word] = []
    args: list[Arg] = []
    for word in words:
        if _is_flag(word) and word.text != "--":
            args.append(split_flag_word(word))
        elif args and not (args[-1].word is not None and args[-1].word.known and "=" in args[-1].word.text
                           and args[-1].word.text.startswith("--")):
            args[-1].values.append(word)
        else:
            positionals.append(word)
    return positionals, args


def _options(words: list[Word], i: int, spec: dict, stop: tuple[str, ...] = ()) -> tuple[list[Arg], int]:
    """A launcher's own options, from words[i] up to the program it runs (or up to an option in ``stop``)."""
    values = set(spec.get("values", ()))
    switches = set(spec.get("switches", ())) | set(spec.get("long_switches", ()))
    out: list[Arg] = []
    while i < len(words):
        word = words[i]
        if not word.known or not _is_flag(word) or word.text == "--" or word.text in stop:
            break
        arg = split_flag_word(word)
        i += 1
        if arg.values:
            out.append(arg)
            continue
        flag = arg.flag
        takes_value = flag in values
        if not takes_value and flag not in switches:
            # an option the table does not know: a long option takes a value unless the program follows it
            nxt = words[i] if i < len(words) else None
            takes_value = (flag.startswith("--") and nxt is not None and not _is_flag(nxt)
                           and not (nxt.known and (nxt.text.endswith(".py") or nxt.text == "--")))
        if takes_value and i < len(words):
            arg.values.append(words[i])
            i += 1
        out.append(arg)
    return out, i


def _basename(word: Word) -> str:
    return os.path.basename(word.text) if word.known else ""


def _skip_wrappers(words: list[Word], i: int) -> int:
    wrappers = launcher_specs()["wrappers"]["commands"]
    while i < len(words):
        name = _basename(words[i])
        if name not in wrappers:
            return i
        i += 1
        positional = wrappers[name]
        while i < len(words) and words[i].known and (words[i].text.startswith("-") or
                                                      (name == "env" and "=" in words[i].text)):
            i += 1
        i += positional
    return i


def _continuation(command: Command, text: str, path: str) -> str:
    """The separator a person used between flags: ' \\\\\\n    ' on a multi-line command, '' on one line."""
    words = [w for a in command.args for w in ([a.word] if a.word else []) + a.values]
    if command.entry is not None:
        words.insert(0, command.entry)
    words = [w for w in words if w is not None and w.path == path and w.span.end <= len(text)]
    words.sort(key=lambda w: w.span.start)
    found = ""
    for prev, cur in zip(words, words[1:]):
        if prev.span.end > cur.span.start:
            continue
        between = text[prev.span.end : cur.span.start]
        if _is_line_break(between, backslash=True) or (command.heredoc_span is not None
                                                       and cur.span.start in command.heredoc_span
                                                       and _is_line_break(between, backslash=False)):
            found = between
    return found


def recognise(simple: "SimpleCommand", script: "ShellScript") -> Command | None:
    words = simple.words
    i = _skip_wrappers(words, 0)
    if i >= len(words):
        return None
    command = Command(path=simple.path, span=simple.span, words=list(words), hardware=dict(script.hardware))
    if not _launch(command, words, i):
        return None
    # words that came from a heredoc (deepspeed --module $cmd) tell where the body is
    heredoc = next((h for h in script.heredocs if any(
        w.path == h.path and w.span.start in h.body_span for w in words[i:])), None)
    if heredoc is not None:
        command.heredoc_span = heredoc.body_span
    text = script.doc.text if script.doc is not None and script.doc.outer is None else ""
    if text:
        command.continuation = _continuation(command, text, script.path)
    return command


def _trl_trainers() -> dict:
    """`trl <command>` that trains (`trl vllm-serve`, `trl env` do not)."""
    from rlhf_lint.schemas import load

    return load("hf/training_args.json")["trl_commands"]["types"]


def _launch(command: Command, words: list[Word], i: int) -> bool:
    """Fill launcher, launcher_args, entry and args from words[i:]; False if this is not a launch."""
    specs = launcher_specs()
    name = _basename(words[i])
    if name == "srun":
        _, j = _options(words, i + 1, specs["srun"])
        j = _skip_wrappers(words, j)
        return j < len(words) and _launch(command, words, j)
    if name == "deepspeed":
        return _program(command, "deepspeed", words, i + 1, specs["deepspeed"])
    if name == "torchrun":
        return _program(command, "torchrun", words, i + 1, specs["torchrun"])
    if name == "accelerate" and i + 1 < len(words) and words[i + 1].text == "launch":
        return _program(command, "accelerate", words, i + 2, specs["accelerate"])
    if name == "trl" and i + 1 < len(words) and words[i + 1].known and words[i + 1].text in _trl_trainers():
        # `trl grpo --flags`: the TRL CLI runs its trainer script through accelerate (frameworks/hf.py reads it)
        command.launcher = "trl"
        _entry(command, words[i + 1], "trl", words[i + 2 :])
        return True
    if name in ("llamafactory-cli", "lmf") and i + 1 < len(words) and words[i + 1].text == "train":
        command.launcher = "llamafactory"
        _entry(command, words[i + 1], "llamafactory", words[i + 2 :])
        return True
    if name == "ray" and [w.text for w in words[i + 1 : i + 3]] == ["job", "submit"]:
        opts, j = _options(words, i + 3, specs["ray_job_submit"])
        command.launcher = "ray"
        command.launcher_args = opts
        if j < len(words) and words[j].text == "--":
            j += 1
        j = _skip_wrappers(words, j)
        if j < len(words):
            inner = Command(path=command.path, span=command.span, words=command.words)
            if _launch(inner, words, j):
                command.entry, command.entry_kind = inner.entry, inner.entry_kind
                command.args, command.positionals = inner.args, inner.positionals
        return True
    if _is_python(name):
        opts, j = _options(words, i + 1, specs["python"], stop=("-m", "-c"))
        if j >= len(words):
            return False
        if words[j].text == "-c":
            return False
        if words[j].text == "-m" and j + 1 < len(words):
            module = words[j + 1]
            # `python -m torch.distributed.run` and the like are launchers (schemas/launchers.json python_modules)
            row = specs["python_modules"]["modules"].get(module.text) if isinstance(module.text, str) else None
            if row is not None:
                return _program(command, row["launcher"], words, j + 2, specs[row["launcher"]])
            command.launcher, command.launcher_args = "python", opts
            _entry(command, module, "module", words[j + 2 :])
            return True
        if words[j].known and words[j].text.startswith("-"):
            return False
        command.launcher, command.launcher_args = "python", opts
        _entry(command, words[j], "script", words[j + 1 :])
        return True
    return False


def _program(command: Command, launcher: str, words: list[Word], i: int, spec: dict) -> bool:
    opts, j = _options(words, i, spec)
    command.launcher, command.launcher_args = launcher, opts
    module_flags = {"--module", "-m"}
    as_module = any(a.flag in module_flags for a in opts)
    if j < len(words) and words[j].text == "--":
        j += 1
    if j >= len(words):
        return True
    if launcher == "torchrun" and words[j].text == "-m" and j + 1 < len(words):
        j += 1
        as_module = True
    _entry(command, words[j], "module" if as_module else "script", words[j + 1 :])
    return True


def _entry(command: Command, entry: Word, kind: str, rest: list[Word]) -> None:
    command.entry, command.entry_kind = entry, kind
    command.positionals, command.args = group_args(rest)


# ---------------------------------------------------------------------------------------------------------------
# jobs
# ---------------------------------------------------------------------------------------------------------------
# entry-point prefix -> "module:function" turning a Command into Jobs; first match wins, "" matches anything
INTERPRETERS: list[tuple[str, str]] = [
    ("verl.trainer.main_ppo", "rlhf_lint.frameworks.verl:interpret"),
    ("playground.", "rlhf_lint.frameworks.orz:interpret"),
    ("openrlhf.", "rlhf_lint.frameworks.openrlhf:interpret"),
    ("", "rlhf_lint.frameworks.hf:interpret"),  # interpret_generic, then the HF Trainer's arguments if any
]


def interpreter_for(entry: str) -> Callable | None:
    for prefix, spec in INTERPRETERS:
        if entry.startswith(prefix):
            module, _, name = spec.partition(":")
            return getattr(import_module(module), name)
    return None


def commands_of(source: "Source", project=None) -> list[Command]:
    """The launch Commands of a shell Source (its simple commands that start a training program), with files it
    sources resolved inside the project when given; recognised once per read script."""
    from rlhf_lint.readers.shell import script_of

    script = script_of(source, project)
    if script is None:
        return []
    if script.commands is None:
        script.commands = [c for c in (recognise(s, script) for s in script.simple_commands) if c is not None]
    return script.commands


@job_builder(kinds={"shell"})
def build_shell_jobs(source: "Source", project) -> list[Job]:
    jobs: list[Job] = []
    for command in commands_of(source, project):
        if command.entry is None:
            continue
        entry = command.entry.text if command.entry.known else ""
        interpret = interpreter_for(entry)
        if interpret is None:
            continue
        jobs.extend(interpret(command, source, project) or [])
    return jobs


def _int_setting(key: str, word: Word | None) -> Setting | None:
    if word is None:
        return None
    value = int(word.text) if word.known and word.text.isascii() and word.text.isdigit() else UNKNOWN
    return Setting(key, value, path=word.path, span=word.span, origin=word.origin,
                   raw=None if not word.known else word.text)


def _launcher_value(command: Command, *flags: str) -> Word | None:
    aliases = {}
    for spec in launcher_specs().values():
        if isinstance(spec, dict):
            aliases.update(spec.get("aliases", {}))
    found = None
    for arg in command.launcher_args:
        if arg.flag in flags or aliases.get(arg.flag) in flags:
            found = arg.value if arg.value is not None else found
    return found


def _has_launcher_flag(command: Command, *flags: str) -> bool:
    return any(a.flag in flags for a in command.launcher_args)


def _parse_include(text: str) -> tuple[int, int] | None:
    """`localhost:0,1,2,3` or `host1:0,1@host2:0,1` -> (nodes, gpus on the busiest node)."""
    hosts = [h for h in text.split("@") if h]
    if not hosts:
        return None
    counts = []
    for host in hosts:
        _, colon, slots = host.partition(":")
        if not colon:
            return None  # whole hosts: their GPU count comes from the hostfile
        items = [s for s in slots.split(",") if s]
        if not all(s.isdigit() for s in items):
            return None
        counts.append(len(items))
    return len(hosts), max(counts)


def _topology(command: Command, settings: Settings, assumptions: list[str]) -> None:
    nodes: Setting | None = None
    per_node: Setting | None = None
    world: Setting | None = None
    if command.launcher == "deepspeed":
        per_node = _int_setting("topology.gpus_per_node", _launcher_value(command, "--num_gpus"))
        nodes = _int_setting("topology.nodes", _launcher_value(command, "--num_nodes"))
        include = _launcher_value(command, "--include")
        if include is not None and include.known:
            parsed = _parse_include(include.text)
            if parsed is not None:
                nodes = Setting("topology.nodes", parsed[0], include.path, include.span, include.origin)
                per_node = Setting("topology.gpus_per_node", parsed[1], include.path, include.span, include.origin)
        if nodes is None and not _has_launcher_flag(command, "--hostfile", "-H"):
            nodes = Setting("topology.nodes", 1, command.path, None, "deepspeed without a hostfile runs on this node")
    elif command.launcher == "torchrun":
        per_node = _int_setting("topology.gpus_per_node", _launcher_value(command, "--nproc_per_node"))
        if per_node is None:
            per_node = Setting("topology.gpus_per_node", 1, command.path, None, "torchrun default --nproc_per_node 1")
        nodes = _int_setting("topology.nodes", _launcher_value(command, "--nnodes"))
        if nodes is None:
            nodes = Setting("topology.nodes", 1, command.path, None, "torchrun default --nnodes 1")
    elif command.launcher == "accelerate":
        world = _int_setting("topology.world_size", _launcher_value(command, "--num_processes"))
        nodes = _int_setting("topology.nodes", _launcher_value(command, "--num_machines"))
        if world is not None and nodes is not None and isinstance(world.value, int) and isinstance(nodes.value, int) \
                and nodes.value > 0 and world.value % nodes.value == 0:
            per_node = Setting("topology.gpus_per_node", world.value // nodes.value, world.path, world.span,
                               "--num_processes / --num_machines")
    for s in (nodes, per_node):
        if s is not None:
            settings.add(s)
    if world is None and nodes is not None and per_node is not None:
        if isinstance(nodes.value, int) and isinstance(per_node.value, int):
            world = Setting("topology.world_size", nodes.value * per_node.value, command.path,
                            per_node.span or nodes.span, "nodes x GPUs per node of the launcher")
    if world is not None:
        settings.add(world)


def _topology_from_accelerate_config(command: Command, config: Word, settings: Settings, project) -> None:
    """What the command line leaves to the config file: accelerate reads num_processes (all machines together) and
    num_machines from ``--config_file`` unless ``--num_processes`` / ``--num_machines`` say otherwise."""
    from rlhf_lint.frameworks.accelerate import read
    from rlhf_lint.readers.yaml import node_span

    target = project.resolve(command.path, config.text) if project is not None else None
    if target is None or target.kind != "yaml" or target.tree is None:
        return
    cfg = read(target)
    if cfg is None:
        return
    name = os.path.basename(target.path)

    def number(key: str) -> Setting | None:
        entry = cfg.count(key)
        if entry is None:
            return None
        return Setting(f"topology.{'world_size' if key == 'num_processes' else 'nodes'}", entry.value, target.path,
                       node_span(entry.value_node), f"{key} in {name}")

    world = settings.get("topology.world_size")
    nodes = settings.get("topology.nodes")
    if world is None:
        world = number("num_processes")
        if world is not None:
            settings.add(world)
    if nodes is None:
        nodes = number("num_machines")
        if nodes is not None:
            settings.add(nodes)
    if settings.get("topology.gpus_per_node") is None and world is not None and nodes is not None \
            and isinstance(world.value, int) and isinstance(nodes.value, int) and world.value % nodes.value == 0:
        settings.add(Setting("topology.gpus_per_node", world.value // nodes.value, world.path, world.span,
                             "num_processes / num_machines"))


def interpret_generic(command: Command, source: "Source", project) -> list[Job]:
    """A deepspeed / torchrun / accelerate / python launch of any program: topology and config files."""
    settings = Settings()
    assumptions: list[str] = []
    framework = {"deepspeed": "deepspeed", "torchrun": "torchrun", "accelerate": "accelerate"}.get(command.launcher)
    entry = command.entry
    if entry is not None:
        settings.add(Setting("job.entry", entry.text, entry.path, entry.span, entry.origin))
    _topology(command, settings, assumptions)
    ds_config_flags = launcher_specs()["program_flags"]["ds_config"]
    for arg in command.args:
        if arg.flag in ds_config_flags and arg.value is not None and arg.value.known \
                and not arg.value.text.startswith("-"):
            settings.add(Setting("deepspeed.config_path", arg.value.text, arg.value.path, arg.value.span,
                                 arg.value.origin or arg.flag))
            if arg.flag == "--deepspeed":
                # DeepSpeed's own argument is the switch `--deepspeed` plus `--deepspeed_config FILE`;
                # `--deepspeed FILE` is Hugging Face TrainingArguments, so the HF Trainer reads the file (a script
                # or a module: `torchrun -m pkg.train --deepspeed ds.json`)
                framework = "hf"
                assumptions.append("`--deepspeed FILE` is the Hugging Face Trainer's flag: the Trainer fills the "
                                   "config's \"auto\" values")
            framework = framework or "deepspeed"
    if command.launcher == "accelerate":
        config = _launcher_value(command, "--config_file")
        if config is not None and config.known:
            settings.add(Setting("accelerate.config_path", config.text, config.path, config.span, config.origin))
            _topology_from_accelerate_config(command, config, settings, project)
        ds = _launcher_value(command, "--deepspeed_config_file")
        if ds is not None and ds.known:
            settings.add(Setting("deepspeed.config_path", ds.text, ds.path, ds.span, ds.origin))
        for flag, row in launcher_specs()["accelerate"]["settings"].items():
            word = _launcher_value(command, flag)
            if word is None:
                continue
            value = UNKNOWN
            if word.known:
                kind = row["type"]
                value = int(word.text) if kind == "int" and word.text.isdecimal() else (word.text if kind == "str" else UNKNOWN)
            settings.add(Setting(row["key"], value, word.path, word.span, word.origin))
        mp = _launcher_value(command, "--mixed_precision")
        if mp is not None:
            from rlhf_lint.frameworks.precision import accelerate_dtype

            dtype = accelerate_dtype(mp.text) if mp.known else None
            settings.add(Setting("precision.param_dtype", UNKNOWN if dtype is None else dtype,
                                 mp.path, mp.span, mp.origin))
    settings.add(Setting("framework", framework or command.launcher or "python", command.path, command.span))
    line = source.position(command.span.start).line if command.path == source.path else 0
    label = entry.text if entry is not None and entry.known else "?"
    return [Job(name=f"{os.path.basename(command.path)}:{line} {label}", path=command.path, span=command.span,
                framework=framework or command.launcher or "python", settings=settings, assumptions=assumptions,
                hardware=dict(command.hardware))]
