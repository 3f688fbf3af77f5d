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
from rlhf_lint.model import FILLED, UNKNOWN, Setting, Settings, Span
from rlhf_lint.startup.records import field, record
from rlhf_lint.startup import import_module

if TYPE_CHECKING:
    from rlhf_lint.readers.shell import ShellScript, SimpleCommand
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
    if not word.known:
        return _inline_unknown_value(word)
    return word.text.startswith("-") and len(word.text) > 1 and not _starts_negative_number(word.text)


def _inline_unknown_value(word: Word) -> bool:
    """`--flag=$(cmd)`: a long option written literally, its value an expansion that is not known."""
    return not word.known and word.prefix.startswith("--") and "=" in word.prefix and len(word.prefix) > 3


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
    """`--flag=value` -> Arg(flag, value word) with exact spans when the token is written as is; `--flag=$(cmd)` ->
    the flag with an UNKNOWN value."""
    if _inline_unknown_value(word):
        flag = word.prefix.partition("=")[0]
        flag_span = Span(word.prefix_start, word.prefix_start + len(flag))
        value_word = Word(UNKNOWN, Span(flag_span.end + 1, word.span.end), word.path, origin=word.origin)
        return Arg(flag=flag, flag_span=flag_span, values=[value_word], word=word)
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
        elif args and not (args[-1].word is not None and (_inline_unknown_value(args[-1].word) or (
                args[-1].word.known and "=" in args[-1].word.text and args[-1].word.text.startswith("--")))):
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
        if not _is_flag(word) or word.text == "--" or word.text in stop:
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


def _assignment_word(word: Word) -> bool:
    name, eq, _ = word.text.partition("=") if word.known else ("", "", "")
    return bool(eq) and name.isidentifier() and name.isascii()


def _basename(word: Word) -> str:
    return os.path.basename(word.text) if word.known else ""


def _past_unread_prefix(words: list[Word], i: int) -> int:
    """Past leading words the linter cannot read when a launcher follows them: an interpreter or wrapper chosen in
    a branch (verl's ``"${LAUNCH[@]}" -m verl.trainer.main_ppo`` with ``LAUNCH=(uv run ... python3)`` under an
    ``if``: unknown words, then python3). An unread word right before ``-m`` is the interpreter itself (``$PYTHON
    -m pkg``): kept, for _launch to read as python."""
    j = i
    while j < len(words) and not words[j].known:
        j += 1
    if j == i or j >= len(words) or words[j].text == "-m":
        return i
    return _skip_wrappers(words, j)


def _skip_wrappers(words: list[Word], i: int) -> int:
    wrappers = launcher_specs()["wrappers"]["commands"]
    while i < len(words):
        name = _basename(words[i])
        if name not in wrappers:
            return i
        i += 1
        positional = wrappers[name]
        while i < len(words) and words[i].known and (words[i].text.startswith("-") or
                                                      (name in ("env", "eval") and _assignment_word(words[i]))):
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
    # `bash -c "$LAUNCHER $CMD"`: the outer shell expands the string and the child parses it, so its leading
    # NAME=value words are assignments there (open-r1's slurm/train.slurm: LAUNCHER="ACCELERATE_LOG_LEVEL=info ...")
    while simple.depth > 0 and i < len(words) and _assignment_word(words[i]):
        i = _skip_wrappers(words, i + 1)
    i = _past_unread_prefix(words, i)
    if i >= len(words):
        return None
    command = Command(path=simple.path, span=simple.span, words=list(words), hardware=dict(script.hardware),
                      env=dict(simple.launch_env))
    from rlhf_lint.readers.shell import LAUNCH_ENV

    for word in words[:i]:  # `env CUDA_VISIBLE_DEVICES=0,1 torchrun ...`
        if word.known and "=" in word.text:
            name, _, value = word.text.partition("=")
            if name in LAUNCH_ENV:
                command.env[name] = Word(value, Span(word.span.start + len(name) + 1, word.span.end)
                                         if word.span.end - word.span.start == len(word.text) else word.span,
                                         word.path, origin=word.origin)
    text = script.doc.text if script.doc is not None and script.doc.outer is None else ""
    if text and "#SBATCH" in text:
        command.scheduler_args = _sbatch_args(text, script.path)
    if not _launch(command, words, i):
        return None
    # words that came from a heredoc (deepspeed --module $cmd) tell where the body is
    heredoc = next((h for h in script.heredocs if any(
        w.path == h.path and w.span.start in h.body_span for w in words[i:])), None)
    if heredoc is not None:
        command.heredoc_span = heredoc.body_span
    if text:
        command.continuation = _continuation(command, text, script.path)
    return command


def _sbatch_args(text: str, path: str) -> list[Arg]:
    """The `#SBATCH --opt=value` / `#SBATCH -N 2` lines of a batch script, as srun options with their spans (sbatch
    reads them up to the first command; an srun inside the allocation inherits it)."""
    aliases = launcher_specs()["srun"]["aliases"]
    out: list[Arg] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if stripped.startswith("#SBATCH"):
            body_start = offset + line.index("#SBATCH") + len("#SBATCH")
            body = line[body_start - offset :].split("#", 1)[0].rstrip("\r\n")
            pos, words = body_start, []
            for token in body.split():
                at = text.index(token, pos)
                words.append(Word(token, Span(at, at + len(token)), path))
                pos = at + len(token)
            for arg in group_args(words)[1]:
                out.append(Arg(aliases.get(arg.flag, arg.flag), arg.flag_span, arg.values, arg.word))
        offset += len(line)
    return out


def _trl_trainers() -> dict:
    """`trl <command>` that trains (`trl vllm-serve`, `trl env` do not)."""
    from rlhf_lint.schemas import load

    return load("hf/training_args.json")["trl_commands"]["types"]


def _launch(command: Command, words: list[Word], i: int) -> bool:
    """Fill launcher, launcher_args, entry and args from words[i:]; False if this is not a launch."""
    specs = launcher_specs()
    name = _basename(words[i])
    if name == "srun":
        opts, j = _options(words, i + 1, specs["srun"])
        aliases = specs["srun"]["aliases"]
        command.scheduler_args = command.scheduler_args + [
            Arg(aliases.get(a.flag, a.flag), a.flag_span, a.values, a.word) for a in opts]
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
    if name in ("swift", "megatron") and i + 1 < len(words) and words[i + 1].known:
        # `swift sft|pt|rlhf ...` and ms-swift's `megatron sft|pt|rlhf ...` (frameworks/swift.py reads them);
        # `swift infer`, `swift deploy`, ... train nothing
        table = _swift_commands()
        train = table["commands"]["train"] if name == "swift" else table["megatron_commands"]["commands"]
        sub = words[i + 1].text.replace("_", "-")
        if sub in train:
            command.launcher = "swift" if name == "swift" else "swift-megatron"
            _entry(command, words[i + 1], command.launcher, words[i + 2 :])
            return True
        return False
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
    runner = specs["env_runners"]["tools"].get(name)
    if runner is not None and i + 1 < len(words) and words[i + 1].text == "run":
        return _env_runner(command, words, i + 2, runner)
    # an interpreter the linter cannot read, right before -m (`$PYTHON -m verl.trainer.main_ppo`, PYTHON set in a
    # branch): only python takes -m MODULE there
    unread_python = not words[i].known and i + 1 < len(words) and words[i + 1].text == "-m"
    if _is_python(name) or unread_python:
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


def _env_runner(command: Command, words: list[Word], i: int, spec: dict) -> bool:
    """`uv run [options] COMMAND ...`, `conda run -n ENV COMMAND ...` (schemas/launchers.json env_runners): the
    command runs as it would without the runner; `uv run -m MODULE` runs the module as `python -m` does."""
    module_flags = set(spec.get("module", ()))
    opts, j = _options(words, i, {"values": list(spec["values"]) + sorted(module_flags), "switches": spec["switches"]})
    module = next((a.value for a in opts if a.flag in module_flags and a.value is not None), None)
    if module is None:
        j = _skip_wrappers(words, j)
        return j < len(words) and _launch(command, words, j)
    row = launcher_specs()["python_modules"]["modules"].get(module.text) if module.known else None
    if row is not None:
        return _program(command, row["launcher"], words, j, launcher_specs()[row["launcher"]])
    command.launcher = "python"
    _entry(command, module, "module", words[j:])
    return True


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
# entry-point prefix -> "module:function" turning a Command into Jobs; the first match that does not decline
# (return None) wins, "" matches anything
INTERPRETERS: list[tuple[str, str]] = [
    ("verl.trainer.main_ppo", "rlhf_lint.frameworks.verl:interpret"),
    ("recipe.", "rlhf_lint.frameworks.verl:interpret"),  # verl's recipes; it declines other `recipe` packages
    ("playground.", "rlhf_lint.frameworks.orz:interpret"),
    ("openrlhf.", "rlhf_lint.frameworks.openrlhf:interpret"),
    ("", "rlhf_lint.frameworks.hf:interpret"),  # interpret_generic, then the HF Trainer's arguments if any
]


def _swift_commands() -> dict:
    from rlhf_lint.schemas import load  # not frameworks.swift.arguments: swift imports this module (no cycles)

    return load("swift/arguments.json")


def swift_script_command(entry: str) -> str | None:
    """"sft" | "pt" | "rlhf" when the entry is ms-swift's own CLI script (swift/cli/sft.py, run by a launcher such
    as accelerate or torchrun instead of `swift sft`), else None."""
    head, _, name = entry.replace("\\", "/").rpartition("/")
    stem = name[:-3] if name.endswith(".py") else ""
    if (head == "swift/cli" or head.endswith("/swift/cli")) and stem in _swift_commands()["commands"]["train"]:
        return stem
    return None


# launchers whose own interpreter reads them, whatever their entry word says
LAUNCHER_INTERPRETERS = {"swift": "rlhf_lint.frameworks.swift:interpret",
                         "swift-megatron": "rlhf_lint.frameworks.swift:interpret"}


def interpreters_for(entry: str, launcher: str = ""):
    """The interpreters that may read a command, in order: its launcher's own, else those whose prefix matches."""
    if launcher not in LAUNCHER_INTERPRETERS and swift_script_command(entry) is not None:
        launcher = "swift"  # `accelerate launch swift/cli/sft.py ...`: the CLI's own script
    specs = [LAUNCHER_INTERPRETERS[launcher]] if launcher in LAUNCHER_INTERPRETERS else \
        [s for prefix, s in INTERPRETERS if entry.startswith(prefix)]
    for spec in specs:
        module, _, name = spec.partition(":")
        yield getattr(import_module(module), name)


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
        built = None
        for interpret in interpreters_for(entry, command.launcher):
            built = interpret(command, source, project)
            if built is not None:
                break
        built = built or []
        allocator = allocator_setting(command)
        for job in built:
            if allocator is not None and job.settings.get("runtime.expandable_segments") is None:
                job.settings.add(allocator)
        jobs.extend(built)
    return jobs


def allocator_setting(command: Command) -> Setting | None:
    """runtime.expandable_segments from the allocator variable the launch sets for its processes
    (schemas/memory/allocator.json env): PYTORCH_ALLOC_CONF first, then PYTORCH_CUDA_ALLOC_CONF."""
    from rlhf_lint.schemas import load

    spec = load("memory/allocator.json")["env"]
    word = next((command.env[n] for n in spec["names"] if n in command.env), None)
    if word is None:
        return None
    value = UNKNOWN
    if word.known:
        value = False  # PyTorch's default: the option left out of the list
        for item in word.text.split(","):
            key, _, setting = item.strip().partition(":")
            if key.strip() == spec["option"]:
                value = setting.strip() == spec["true"]
    return Setting("runtime.expandable_segments", value, word.path, word.span, word.origin or "the launch's environment",
                   raw=word.text if word.known else None)


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


def _device_ids(text: str) -> tuple[int, ...] | None:
    """`4,5,6,7` -> (4, 5, 6, 7); None for anything else (GPU UUIDs, `$(...)`)."""
    items = [t.strip() for t in text.split(",")]
    if not items or not all(t.isascii() and t.isdigit() for t in items):
        return None
    return tuple(int(t) for t in items)


def _hostfile_slots(text: str) -> tuple[int, int] | None:
    """A DeepSpeed hostfile (`worker-1 slots=8` per line, `#` comments) -> (hosts, most slots on one host)."""
    hosts: list[int] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        _, _, rest = line.partition(" ")
        key, eq, value = rest.strip().partition("=")
        if key != "slots" or not eq or not value.strip().isdigit():
            return None  # DeepSpeed refuses such a line
        hosts.append(int(value.strip()))
    return (len(hosts), max(hosts)) if hosts else None


@record(eq=False)
class LaunchTopology:
    """What one launch asks for: each field a Setting (value, where it was written, and ``origin`` saying how it
    was known: a flag, CUDA_VISIBLE_DEVICES, a config file, a launcher default, or the hardware profile filling
    what the launch leaves open) or None when nothing says. ``notes`` are the assumptions to show users."""

    world: Setting | None = None  # topology.world_size: training processes in all
    nodes: Setting | None = None  # topology.nodes
    per_node: Setting | None = None  # topology.gpus_per_node: processes (one GPU each) per node
    devices: Setting | None = None  # topology.device_ids: the GPU indices the launch names on a node
    visible: Setting | None = None  # topology.visible_gpus: GPUs CUDA_VISIBLE_DEVICES leaves to the processes
    allocator: Setting | None = None  # runtime.expandable_segments a launcher sets for the processes it starts
    notes: list = field(default_factory=list)

    def settings(self) -> list[Setting]:
        return [s for s in (self.nodes, self.per_node, self.devices, self.visible, self.world, self.allocator)
                if s is not None]




def _word_setting(key: str, word: Word, value, how: str) -> Setting:
    return Setting(key, value, word.path, word.span, word.origin or how, raw=word.text if word.known else None,
                   tail=word.suffix if value is UNKNOWN else "")


def _count(key: str, word: Word | None, how: str) -> Setting | None:
    """A whole-number launcher value; ``$SLURM_*`` resolved from the script's #SBATCH options; else UNKNOWN."""
    if word is None:
        return None
    if word.known and isinstance(word.text, str) and word.text.isascii() and word.text.isdigit():
        return _word_setting(key, word, int(word.text), how)
    return _word_setting(key, word, UNKNOWN, how)


GPU_REQUESTS = ("--gpus-per-node", "--gres")  # SLURM options whose value is a GPU request, not the count itself


def _gpu_count(flag: str, text: str) -> int | None:
    """The GPUs per node of `--gpus-per-node=[type:]N` or `--gres=gpu[:type]:N[,...]`
    (https://slurm.schedmd.com/sbatch.html)."""
    if flag == "--gres":
        fields = next((f for f in (p.strip().split(":") for p in text.split(",")) if f[0] == "gpu" and len(f) > 1),
                      [""])
        count = fields[-1]
    else:
        count = text.rpartition(":")[2]
    return int(count) if count.isdecimal() and int(count) > 0 else None


def _slurm_gpus_per_node(command: Command) -> tuple[Word, int] | None:
    """(word, count) of the GPUs per node the SLURM allocation asks for; SLURM sets CUDA_VISIBLE_DEVICES to them."""
    for flag in GPU_REQUESTS:
        word = _scheduler_value(command, flag)
        count = _gpu_count(flag, word.text) if word is not None and word.known else None
        if count is not None:
            return word, count
    return None


def _scheduler_value(command: Command, *flags: str) -> Word | None:
    found = None
    for arg in command.scheduler_args:
        if arg.flag in flags and arg.value is not None:
            found = arg.value
    return found


def _slurm(command: Command, word: Word | None, source_text: str | None) -> Word | None:
    """A launcher value written as ``$SLURM_NNODES`` and the like: the #SBATCH / srun option that sets it (the
    first of the table's options given; a GPU request gives its count)."""
    if word is None or word.known or source_text is None or word.path != command.path:
        return word
    written = source_text[word.span.start : word.span.end].strip("\"'{}$")
    for flag in launcher_specs()["slurm_env"]["variables"].get(written, ()):
        found = _scheduler_value(command, flag)
        if found is None or not found.known:
            continue
        text = found.text
        if flag in GPU_REQUESTS:
            count = _gpu_count(flag, text)
            if count is None:
                continue
            text = str(count)
        return Word(text, word.span, word.path, origin=f"${written} = {text} from `{flag}`")
    return word


def _under_srun(command: Command) -> bool:
    """srun starts the launch (once per task); a command of an sbatch script without srun runs once."""
    start = command.entry.span.start if command.entry is not None else command.span.end
    return any(w.known and w.text == "srun" and w.span.start < start for w in command.words)


def _fill(key: str, value, command: Command, what: str) -> Setting:
    return Setting(key, value, command.path, None, f"{FILLED} {what}")


def launch_topology(command: Command, source: "Source | None" = None, project=None) -> LaunchTopology:
    """World size, nodes and GPUs per node of one launch, each with where it came from (the one place that reads
    them: the framework builders and the HF Trainer jobs call it). What the launch says wins; the hardware profile
    (``project.config.hardware_for``, with the script's own hardware comment) fills only what the launch leaves
    open, and such a value's origin starts with FILLED. Rules: schemas/launchers.json, docs/launch-model.md."""
    top = LaunchTopology()
    hw = project.config.hardware_for(command.hardware) if project is not None and \
        getattr(project, "config", None) is not None else None
    hw_per_node = getattr(hw, "gpus_per_node", None)
    hw_nodes = getattr(hw, "nodes", None)
    text = source.text if source is not None and source.path == command.path else None
    cvd = command.env.get("CUDA_VISIBLE_DEVICES")
    cvd_ids = _device_ids(cvd.text) if cvd is not None and cvd.known else None

    def value(*flags: str) -> Word | None:
        return _slurm(command, _launcher_value(command, *flags), text)

    allocated = _slurm_gpus_per_node(command)

    def visible_count(what: str) -> Setting | None:
        """GPUs a process group may use on a node: CUDA_VISIBLE_DEVICES, else the SLURM allocation's (SLURM sets
        CUDA_VISIBLE_DEVICES to them), else all of the node (hardware)."""
        if cvd is not None:
            n = len(cvd_ids) if cvd_ids is not None else UNKNOWN
            return _word_setting("topology.gpus_per_node", cvd, n, f"CUDA_VISIBLE_DEVICES ({what})")
        if allocated is not None:
            word, n = allocated
            return _word_setting("topology.gpus_per_node", word, n, f"the SLURM allocation's GPUs per node ({what})")
        if hw_per_node:
            return _fill("topology.gpus_per_node", hw_per_node, command, f"gpus-per-node={hw_per_node}: {what}")
        top.notes.append(f"{what}: the GPU count per node is not known (declare gpus-per-node)")
        return None

    launcher = command.launcher
    if cvd is not None and launcher in ("torchrun", "accelerate", "trl", "llamafactory", "swift", "swift-megatron"):
        if cvd_ids is not None:
            top.devices = _word_setting("topology.device_ids", cvd, cvd_ids, "CUDA_VISIBLE_DEVICES")
        top.visible = _word_setting("topology.visible_gpus", cvd, len(cvd_ids) if cvd_ids is not None else UNKNOWN,
                                    "CUDA_VISIBLE_DEVICES")
    elif allocated is not None and launcher in ("torchrun", "accelerate", "trl", "llamafactory", "swift",
                                                "swift-megatron"):
        top.visible = _word_setting("topology.visible_gpus", allocated[0], allocated[1],
                                    "the SLURM allocation's GPUs per node (CUDA_VISIBLE_DEVICES)")
    if launcher == "deepspeed":
        hostfile = value("--hostfile")
        include, exclude = value("--include"), value("--exclude")
        num_gpus, num_nodes = value("--num_gpus"), value("--num_nodes")
        top.per_node = _count("topology.gpus_per_node", num_gpus, "--num_gpus")
        top.nodes = _count("topology.nodes", num_nodes, "--num_nodes")
        pool = None
        if hostfile is not None:
            target = project.resolve(command.path, hostfile.text) if project is not None and hostfile.known else None
            pool = _hostfile_slots(target.text) if target is not None and isinstance(target.text, str) else None
            if pool is not None:
                if top.nodes is None:
                    top.nodes = _word_setting("topology.nodes", hostfile, pool[0], "hosts of the hostfile")
                if top.per_node is None:
                    top.per_node = _word_setting("topology.gpus_per_node", hostfile, pool[1], "slots= of the hostfile")
            else:
                top.notes.append("the hostfile is not among the checked files: its hosts and slots are not known")
        if include is not None and include.known:
            parsed = _parse_include(include.text)
            if parsed is not None:
                top.nodes = _word_setting("topology.nodes", include, parsed[0], "--include")
                top.per_node = _word_setting("topology.gpus_per_node", include, parsed[1], "--include")
                hosts = [h for h in include.text.split("@") if h]
                if len(hosts) == 1:
                    ids = _device_ids(hosts[0].partition(":")[2])
                    if ids is not None:
                        top.devices = _word_setting("topology.device_ids", include, ids, "--include")
        elif cvd is not None and not (exclude is not None or num_gpus is not None or hostfile is not None
                                      or (top.nodes is not None and top.nodes.value != 1)):
            # runner.py: CUDA_VISIBLE_DEVICES becomes --include localhost:<it> when no other filter is given
            top.nodes = Setting("topology.nodes", 1, command.path, None,
                                "deepspeed turns CUDA_VISIBLE_DEVICES into --include localhost:...")
            top.per_node = _word_setting("topology.gpus_per_node", cvd,
                                         len(cvd_ids) if cvd_ids is not None else UNKNOWN,
                                         "deepspeed turns CUDA_VISIBLE_DEVICES into --include localhost:...")
            if cvd_ids is not None:
                top.devices = _word_setting("topology.device_ids", cvd, cvd_ids, "CUDA_VISIBLE_DEVICES")
        elif cvd is not None:
            top.notes.append("deepspeed ignores CUDA_VISIBLE_DEVICES when --include/--exclude/--num_gpus/"
                             "--num_nodes or a hostfile is given")
        if top.per_node is None and exclude is not None and exclude.known:
            parsed = _parse_include(exclude.text)
            if parsed is not None and parsed[0] == 1 and hw_per_node:
                top.per_node = _fill("topology.gpus_per_node", max(0, hw_per_node - parsed[1]), command,
                                     f"gpus-per-node={hw_per_node} less the {parsed[1]} of --exclude")
        if top.nodes is None and hostfile is None:
            top.nodes = Setting("topology.nodes", 1, command.path, None,
                                "deepspeed without a hostfile runs on this node")
        if top.per_node is None and allocated is not None:
            # a bare `deepspeed` in a SLURM allocation: the GPUs SLURM leaves visible on the node
            top.per_node = visible_count("`deepspeed` without --num_gpus/--include uses every visible GPU")
        if top.per_node is None:
            # a bare `deepspeed`: every GPU of each node (runner.py fetches the local GPU count)
            if hw_per_node:
                top.per_node = _fill("topology.gpus_per_node", hw_per_node, command,
                                     f"gpus-per-node={hw_per_node}: `deepspeed` without --num_gpus/--include "
                                     "uses every GPU of the node")
            else:
                top.notes.append("`deepspeed` without --num_gpus/--include uses every GPU of the node: declare "
                                 "gpus-per-node to know how many")
        if top.nodes is None and hw_nodes:
            top.nodes = _fill("topology.nodes", hw_nodes, command, f"nodes={hw_nodes} (the hostfile's hosts)")
    elif launcher == "torchrun":
        nproc = value("--nproc_per_node")
        if nproc is not None and nproc.known and nproc.text in ("gpu", "auto", "cuda"):
            # torch/distributed/run.py: "gpu"/"auto" start one process per visible GPU
            top.per_node = visible_count(f"--nproc_per_node {nproc.text}")
            if top.per_node is not None and top.per_node.span is None:
                top.per_node = Setting(top.per_node.key, top.per_node.value, nproc.path, nproc.span,
                                       top.per_node.origin)
        else:
            top.per_node = _count("topology.gpus_per_node", nproc, "--nproc_per_node")
        if top.per_node is None and nproc is None:
            top.per_node = Setting("topology.gpus_per_node", 1, command.path, None,
                                   "torchrun default --nproc_per_node 1")
        nnodes = value("--nnodes")
        if nnodes is not None and nnodes.known and ":" in nnodes.text:
            low, _, high = nnodes.text.partition(":")
            n = int(low) if low.isdigit() and low == high else UNKNOWN  # elastic: the count is known at run time
            top.nodes = _word_setting("topology.nodes", nnodes, n, "--nnodes MIN:MAX")
        else:
            top.nodes = _count("topology.nodes", nnodes, "--nnodes")
        if top.nodes is None:
            top.nodes = Setting("topology.nodes", 1, command.path, None,
                                "torchrun --standalone" if _has_launcher_flag(command, "--standalone")
                                else "torchrun default --nnodes 1")
    elif launcher == "accelerate":
        _accelerate_topology(top, command, project, value, lambda *f: _has_launcher_flag(command, *f),
                             _launcher_value(command, "--config_file"), visible_count, "accelerate launch")
    elif launcher == "trl":
        _trl_topology(top, command, project, visible_count)
    elif launcher == "llamafactory":
        _llamafactory_topology(top, command, project, visible_count)
    elif launcher in ("swift", "swift-megatron"):
        _swift_topology(top, command, project)
    elif _under_srun(command):
        # srun starting the program itself: one process per task
        ntasks = _count("topology.world_size", _scheduler_value(command, "--ntasks"),
                        "the SLURM allocation (--ntasks)")
        top.nodes = _count("topology.nodes", _scheduler_value(command, "--nodes"),
                           "the SLURM allocation (--nodes)")
        top.per_node = _count("topology.gpus_per_node", _scheduler_value(command, "--ntasks-per-node"),
                              "the SLURM allocation (--ntasks-per-node)")
        top.world = ntasks
    if top.nodes is None and _under_srun(command):
        nodes = _scheduler_value(command, "--nodes")
        if nodes is not None:
            top.nodes = _count("topology.nodes", nodes, "the SLURM allocation (--nodes)")
    if top.world is None and top.nodes is not None and top.per_node is not None:
        n, p = top.nodes.value, top.per_node.value
        if isinstance(n, int) and isinstance(p, int):
            filled = [s.origin for s in (top.nodes, top.per_node) if s.filled]
            origin = "nodes x GPUs per node of the launcher" + (f"; {'; '.join(filled)}" if filled else "")
            span_of = top.per_node if top.per_node.span is not None else top.nodes
            top.world = Setting("topology.world_size", n * p, span_of.path or command.path, span_of.span, origin)
    return top


HOME_CONFIG = ("accelerate's default config in the user's home (~/.cache/huggingface/accelerate/"
               "default_config.yaml), which the linter cannot read, replaces this when it exists")


def _accelerate_topology(top: LaunchTopology, command: Command, project, value, has, config: Word | None,
                         visible_count, who: str) -> None:
    """What accelerate launch.py does with --num_processes, --num_machines, --config_file, --multi_gpu and
    --gpu_ids (``value``/``has`` read them from wherever the launch writes them: accelerate's own options, or the
    TRL CLI's)."""
    top.world = _count("topology.world_size", value("--num_processes"), "--num_processes")
    top.nodes = _count("topology.nodes", value("--num_machines"), "--num_machines")
    if (top.world is None or top.nodes is None) and config is not None and config.known and project is not None:
        world, nodes = _accelerate_config_counts(command, config, project)
        top.world, top.nodes = top.world or world, top.nodes or nodes
    if top.world is None and (has("--multi_gpu") or has("--use_deepspeed", "--use_fsdp")):
        # launch.py: --multi_gpu without --num_processes starts one process per visible GPU
        top.per_node = visible_count(f"{who} --multi_gpu without --num_processes")
        if top.per_node is not None and config is None:
            top.notes.append(HOME_CONFIG)
    elif top.world is None and config is None:
        # launch.py _validate_launch_command: no config file -> num_processes = torch.cuda.device_count()
        top.per_node = visible_count(f"{who} without --num_processes or --config_file: one process per "
                                     "visible GPU")
        if top.per_node is not None:
            top.notes.append(HOME_CONFIG)
    elif top.world is None and config is not None and top.visible is not None:
        # the config's num_processes is not known (the file is not read, or leaves it out); a process past the
        # visible GPUs has no device of its own, so the GPUs the launch sees beat the hardware profile
        what = f"num_processes of {config.text} not known: one process per visible GPU assumed"
        top.per_node = visible_count(what)
        top.notes.append(what)
    gpu_ids = value("--gpu_ids")
    if gpu_ids is not None and gpu_ids.known and gpu_ids.text != "all":
        ids = _device_ids(gpu_ids.text)
        if ids is not None:
            top.devices = _word_setting("topology.device_ids", gpu_ids, ids, "--gpu_ids")
            top.visible = _word_setting("topology.visible_gpus", gpu_ids, len(ids), "--gpu_ids")
    w, n = top.world, top.nodes
    if top.per_node is None and w is not None and isinstance(w.value, int) and isinstance(getattr(n, "value", 1), int):
        machines = n.value if n is not None else 1
        if machines > 0 and w.value % machines == 0:
            top.per_node = Setting("topology.gpus_per_node", w.value // machines, w.path, w.span,
                                   f"{w.origin or 'num_processes'} / {n.origin if n else 'one machine'}")
    if top.nodes is None and top.per_node is not None:
        top.nodes = Setting("topology.nodes", 1, command.path, None, "accelerate default --num_machines 1")


def _hf_launchers() -> dict:
    from rlhf_lint.schemas import load

    return load("hf/launchers.json")


def _release_row(rows: list, project, package: str) -> tuple[dict | None, str]:
    """The row of ``rows`` (since/until) for the release of ``package`` the project targets, and where that release
    came from; the newest row, with a note saying so, when nothing says which release."""
    from rlhf_lint.frameworks.deepspeed import row_at, version_tuple
    from rlhf_lint.frameworks.edge import target_version

    target = target_version(project, package) if project is not None else None
    if target is None:
        return rows[-1], f"the newest {package} (not pinned)"
    return row_at(rows, version_tuple(target.version)), f"{package} {target.version} ({target.origin})"


def underscored(flag: str) -> str:
    """``--num-processes`` as accelerate's argparse spells it, ``--num_processes``."""
    return flag.replace("-", "_").replace("__", "--", 1)


def _trl_topology(top: LaunchTopology, command: Command, project, visible_count) -> None:
    """`trl sft|dpo|grpo ...`: TRL's CLI hands its accelerate options to accelerate launch (all commands from TRL
    0.29, only sft from 0.18, none before: schemas/hf/launchers.json trl_cli); the rest launch with accelerate's
    defaults."""
    spec = _hf_launchers()["trl_cli"]
    row, release = _release_row(spec["rows"], project, "trl")
    name = command.entry.text if command.entry is not None and command.entry.known else "?"
    options = set(spec["accelerate_options"])
    given = [a for a in command.args if underscored(a.flag) in options]
    if row is None:
        top.notes.append(f"{release}: how this TRL CLI starts its processes is not in the tables")
        return
    recipe = _trl_recipe_options(command, project, options)
    forwards = "*" in row["forwards"] or name in row["forwards"]
    if (given or recipe) and not forwards:
        ignored = sorted({a.flag for a in given} | {a.flag for a in recipe})
        top.notes.append(f"`trl {name}` of {release} does not pass {', '.join(ignored)} "
                         "to accelerate launch: it starts with accelerate's defaults")
    # launch_args = the recipe's leftover keys + the command line's: argparse keeps the last, so flags win
    args = recipe + given if forwards else []

    def value(*flags: str) -> Word | None:
        found = None
        for a in args:
            if underscored(a.flag) in flags and a.value is not None:
                found = a.value
        return found

    def has(*flags: str) -> bool:
        return any(underscored(a.flag) in flags for a in args)

    config = value("--config_file")
    named = value("--accelerate_config")
    if named is not None and named.known:
        target = project.resolve(command.path, named.text) if project is not None else None
        preset = spec["accelerate_configs"]["configs"].get(named.text)
        if target is not None or preset is None:
            config = named
        elif value("--num_processes") is None:
            # a config TRL ships: trl/accelerate_configs/NAME.yaml
            top.world = _word_setting("topology.world_size", named, preset["num_processes"],
                                      f"num_processes of TRL's accelerate_configs/{named.text}.yaml")
            top.nodes = _word_setting("topology.nodes", named, preset["num_machines"],
                                      f"num_machines of TRL's accelerate_configs/{named.text}.yaml")
            top.per_node = _word_setting("topology.gpus_per_node", named,
                                         preset["num_processes"] // preset["num_machines"],
                                         f"TRL's accelerate_configs/{named.text}.yaml")
            return
    elif named is not None:
        config = named
    top.notes.append(f"`trl {name}` as {release} starts it")
    _accelerate_topology(top, command, project, value, has, config, visible_count, f"trl {name}")


def _trl_recipe_options(command: Command, project, options: set) -> list[Arg]:
    """accelerate options written as top-level keys of the recipe YAML `--config` names (`num_processes: 8`):
    TrlParser.set_defaults_with_config returns the keys no dataclass takes, and TRL's CLI passes them to
    accelerate launch before the command line's."""
    arg = command.last("--config")
    if arg is None or arg.value is None or not arg.value.known or project is None:
        return []
    from rlhf_lint.readers.yaml import named_yaml_docs

    target = project.resolve(command.path, arg.value.text)
    docs = named_yaml_docs(target) if target is not None else []  # TrlParser's yaml.safe_load reads JSON as well
    import yaml

    if not docs or not isinstance(docs[0], yaml.MappingNode):
        return []
    from rlhf_lint.readers.yaml import node_span

    out = []
    for key, node in docs[0].value:
        flag = f"--{getattr(key, 'value', '')}"
        if flag in options and isinstance(key, yaml.ScalarNode) and isinstance(node, yaml.ScalarNode):
            span = node_span(node)
            word = Word(str(node.value), span, target.path, origin=f"{key.value} in {os.path.basename(target.path)}")
            out.append(Arg(flag=flag, flag_span=node_span(key), values=[word], word=None))
    return out


def _env_flag(word: Word | None, truthy) -> bool | None:
    if word is None:
        return False
    return word.text.strip().lower() in truthy if word.known else None


def _llamafactory_topology(top: LaunchTopology, command: Command, project, visible_count) -> None:
    """`llamafactory-cli train x.yaml`: torchrun with NNODES x NPROC_PER_NODE (default: the visible GPUs) when
    FORCE_TORCHRUN is set or more than one GPU is visible, else one process (schemas/hf/launchers.json
    llamafactory_cli, per release)."""
    spec = _hf_launchers()["llamafactory_cli"]
    row, release = _release_row(spec["rows"], project, "llamafactory")
    if row is None:
        top.notes.append(f"{release}: how this llamafactory-cli starts its processes is not in the tables")
        return
    env = command.env
    one = Setting("topology.nodes", 1, command.path, None, f"llamafactory-cli trains in its own process ({release})")
    if row["mode"] == "in_process":
        top.nodes = one
        top.per_node = Setting("topology.gpus_per_node", 1, command.path, None, one.origin)
        return
    truthy = set(spec["true"])
    skip = [name for name in row["skip_env"] if _env_flag(env.get(name), truthy) is not False]
    if skip:
        top.notes.append(f"{', '.join(skip)} set (or unknown): llamafactory-cli may not start torchrun ({release})")
        return
    forced = [_env_flag(env.get(name), truthy) for name in row["force_env"]]
    force = True if True in forced else None if None in forced else False
    why = "llamafactory-cli train"
    top.notes.append(f"`{why}` as {release} starts it")
    nproc = env.get("NPROC_PER_NODE")
    visible = None
    if nproc is None or not force:
        visible = visible_count(f"{why}: one process per visible GPU")
    if force is None:
        top.notes.append(f"{'/'.join(row['force_env'])} not known: whether {why} starts torchrun is not known")
        return
    if not force:
        # torchrun only when more than one GPU is visible
        count = visible
        if count is None or not isinstance(count.value, int):
            top.notes.append(f"{why} starts torchrun only with more than one visible GPU: their number is not known")
            return
        if count.value <= 1:
            top.nodes = Setting("topology.nodes", 1, count.path, count.span,
                                f"{count.origin.split(' (')[0]}: one visible GPU, no torchrun")
            top.per_node = Setting("topology.gpus_per_node", 1, count.path, count.span, top.nodes.origin)
            return
    if nproc is not None:
        top.per_node = _count("topology.gpus_per_node", nproc, f"NPROC_PER_NODE, {why} starting torchrun")
    elif force is False and visible is not None:
        top.per_node = Setting(visible.key, visible.value, visible.path, visible.span,
                               f"{visible.origin}; more than one visible GPU: {why} starts torchrun")
    else:
        top.per_node = visible
    nnodes = env.get("NNODES")
    top.nodes = (_count("topology.nodes", nnodes, f"NNODES, {why} starting torchrun") if nnodes is not None else
                 Setting("topology.nodes", 1, command.path, None, f"{why}: NNODES default 1"))
    if row.get("alloc_conf"):
        # the launcher writes PYTORCH_CUDA_ALLOC_CONF into torchrun's environment unless OPTIM_TORCH is off
        optim = env.get(row["alloc_conf_unless"])
        on = True if optim is None else (optim.text.strip().lower() in truthy if optim.known else UNKNOWN)
        top.allocator = Setting("runtime.expandable_segments", on, command.path, None,
                                f"{why} ({release}) sets PYTORCH_CUDA_ALLOC_CONF={row['alloc_conf']} for torchrun"
                                + (f" unless {row['alloc_conf_unless']} is off" if optim is not None else ""))


def _swift_topology(top: LaunchTopology, command: Command, project) -> None:
    """`swift sft|pt|rlhf` (and `megatron ...`): torchrun --nproc_per_node $NPROC_PER_NODE --nnodes $NNODES when
    either is set (torchrun's default 1 for the other), else one process (schemas/hf/launchers.json swift_cli)."""
    spec = _hf_launchers()["swift_cli"]
    env = command.env
    nproc, nnodes = env.get("NPROC_PER_NODE"), env.get("NNODES")
    if nproc is None and nnodes is None:
        why = f"swift without NPROC_PER_NODE/NNODES trains in one process ({spec['source'].split(' ')[0]})"
        top.nodes = Setting("topology.nodes", 1, command.path, None, why)
        top.per_node = Setting("topology.gpus_per_node", 1, command.path, None, why)
        return
    why = "swift starting torchrun"
    if nproc is not None:
        top.per_node = _count("topology.gpus_per_node", nproc, f"NPROC_PER_NODE, {why}")
    else:
        # torchrun's default is 1 per node, but a multi-node platform that sets NNODES (PAI-DLC) sets
        # NPROC_PER_NODE in the environment too: left open
        top.notes.append(f"NNODES without NPROC_PER_NODE: {why} with torchrun's default of one process per node, "
                         "unless the environment sets NPROC_PER_NODE (cluster platforms do)")
    top.nodes = (_count("topology.nodes", nnodes, f"NNODES, {why}") if nnodes is not None else
                 Setting("topology.nodes", 1, command.path, None, f"{why}: NNODES unset, torchrun default --nnodes 1"))


def _accelerate_config_counts(command: Command, config: Word, project) -> tuple[Setting | None, Setting | None]:
    """num_processes (all machines together) and num_machines of the accelerate config (YAML, or JSON as
    accelerate's load_config_from_file also takes) ``--config_file`` names, for what the command line leaves to it."""
    from rlhf_lint.frameworks.accelerate import read
    from rlhf_lint.readers.yaml import node_span

    target = project.resolve(command.path, config.text)
    if target is None or target.kind not in ("yaml", "json") or target.tree is None:
        return None, None
    cfg = read(target)
    if cfg is None:
        return None, None
    name = os.path.basename(target.path)
    out = []
    for key, common in (("num_processes", "topology.world_size"), ("num_machines", "topology.nodes")):
        entry = cfg.count(key)
        out.append(None if entry is None else Setting(common, entry.value, target.path, node_span(entry.value_node),
                                                      f"{key} in {name}"))
    return out[0], out[1]


def _topology(command: Command, settings: Settings, assumptions: list[str], source=None, project=None) -> None:
    top = launch_topology(command, source, project)
    for s in top.settings():
        settings.add(s)
        if s.filled:
            assumptions.append(f"{s.key.rsplit('.', 1)[1].replace('_', ' ')} {s.value} from the {s.origin}")
    assumptions.extend(top.notes)


def accelerate_launch_settings(command: Command, settings: Settings) -> None:
    """What `accelerate launch` says itself: its --config_file, --deepspeed_config_file, the counts and the
    --mixed_precision it passes on (schemas/launchers.json accelerate)."""
    config = _launcher_value(command, "--config_file")
    if config is not None and config.known:
        settings.add(Setting("accelerate.config_path", config.text, config.path, config.span, config.origin))
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


def interpret_generic(command: Command, source: "Source", project) -> list[Job]:
    """A deepspeed / torchrun / accelerate / python launch of any program: topology and config files."""
    settings = Settings()
    assumptions: list[str] = []
    framework = {"deepspeed": "deepspeed", "torchrun": "torchrun", "accelerate": "accelerate"}.get(command.launcher)
    entry = command.entry
    if entry is not None:
        settings.add(Setting("job.entry", entry.text, entry.path, entry.span, entry.origin))
    if command.launcher:
        settings.add(Setting("job.launcher", command.launcher, command.path, command.span))
    _topology(command, settings, assumptions, source, project)
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
        accelerate_launch_settings(command, settings)
    settings.add(Setting("framework", framework or command.launcher or "python", command.path, command.span))
    line = source.position(command.span.start).line if command.path == source.path else 0
    label = entry.text if entry is not None and entry.known else "?"
    return [Job(name=f"{os.path.basename(command.path)}:{line} {label}", path=command.path, span=command.span,
                framework=framework or command.launcher or "python", settings=settings, assumptions=assumptions,
                hardware=dict(command.hardware))]


# ---------------------------------------------------------------------------------------------------------------
# what a job asks of the cluster (M010 compares it with the hardware profile)
# ---------------------------------------------------------------------------------------------------------------
@record(eq=False)
class Demand:
    """GPUs a job needs before it can start. ``per_node``: processes that must share one node (a launcher's
    processes on each node; verl's STRICT_PACK placement group per node), None when the job may spread over nodes
    (OpenRLHF/ORZ PACK placement groups); ``total``: GPUs held at once; ``parts``: how the total adds up;
    ``at``: the Setting a finding points at; ``devices``: GPU indices the launch names on a node;
    ``visible``: GPUs CUDA_VISIBLE_DEVICES leaves to a launcher that starts ``per_node`` processes."""

    per_node: Setting | None = None
    nodes: Setting | None = None
    total: int | None = None
    parts: list = field(default_factory=list)
    at: Setting | None = None
    devices: Setting | None = None
    visible: Setting | None = None
    ray: bool = False


RAY_ROLES = ("actor", "ref", "critic", "reward")


def _known_int(setting: Setting | None) -> int | None:
    v = getattr(setting, "value", None)
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def gpu_demand(job: Job) -> Demand:
    """The GPUs ``job`` needs at once, from its Settings (launch_topology for plain launches, the role topology of
    OpenRLHF/ORZ Ray jobs, verl's trainer.nnodes x n_gpus_per_node). Values the hardware profile filled are not a
    demand (they are the profile itself)."""
    s = job.settings
    d = Demand()
    roles = [r for r in RAY_ROLES if s.get(f"topology.{r}.gpus_per_node") is not None
             and (not job.roles or r in job.roles)]
    if roles and job.framework in ("openrlhf", "orz"):
        d.ray = True
        groups: list[tuple[list[str], int, Setting]] = []
        for role in roles:
            n, p = s.get(f"topology.{role}.nodes"), s.get(f"topology.{role}.gpus_per_node")
            nodes, per = (_known_int(n) or (1 if n is None else None)), _known_int(p)
            if nodes is None or per is None:
                return Demand(ray=True)  # a count the launch leaves unknown: no demand claimed
            groups.append(([role], nodes * per, p))
        def merge(a: str, b: str) -> None:
            ga = next((g for g in groups if a in g[0]), None)
            gb = next((g for g in groups if b in g[0]), None)
            if ga is not None and gb is not None and ga is not gb:
                groups.remove(gb)
                groups[groups.index(ga)] = (ga[0] + gb[0], max(ga[1], gb[1]), ga[2] if ga[1] >= gb[1] else gb[2])
        if s.value("topology.colocate_all") is True:
            for role in roles[1:]:
                merge(roles[0], role)
        else:
            if s.value("topology.colocate_actor_ref") is True:
                merge("actor", "ref")
            if s.value("topology.colocate_critic_reward") is True:
                merge("critic", "reward")
            engines, tp = s.get("vllm.num_engines"), s.get("vllm.tensor_parallel_size")
            if _known_int(engines):
                t = _known_int(tp) or (1 if tp is None else None)
                if t is None:
                    return Demand(ray=True)
                groups.append((["vllm"], engines.value * t, engines))
        d.total = sum(g[1] for g in groups)
        d.parts = [f"{' + '.join(g[0])} {g[1]}" for g in groups]
        d.at = max(groups, key=lambda g: g[1])[2]
        return d
    nodes, per = s.get("topology.nodes"), s.get("topology.gpus_per_node")
    d.devices, d.visible = s.get("topology.device_ids"), s.get("topology.visible_gpus")
    if per is not None and not per.filled:
        d.per_node = per
    if nodes is not None and not nodes.filled:
        d.nodes = nodes
    if _known_int(d.per_node) and _known_int(d.nodes):
        d.total = d.per_node.value * d.nodes.value
    d.at = d.per_node
    pool = s.get("topology.vllm.gpus_per_node")
    if job.framework == "verl" and d.total and _known_int(pool):
        # a verl recipe whose rollout has a resource pool of its own (one_step_off_policy): Ray holds both at once
        rollout = pool.value * (_known_int(s.get("topology.vllm.nodes")) or 1)
        d.ray, d.parts = True, [f"trainer {d.total}", f"rollout {rollout}"]
        d.total += rollout
    return d
