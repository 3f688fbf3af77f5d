"""The parsed world a run sees: every Source, the Jobs built from them, and the links between files."""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any, Callable

from rlhf_lint.startup.records import record
from rlhf_lint.engine.config import Config
from rlhf_lint.frameworks.jobs import Job, builders_for, not_checked
from rlhf_lint.model import DEBUG, InternalError, OverBounds, ParseError, Setting, Span
from rlhf_lint.readers.kinds import may_declare_pins
from rlhf_lint.readers.numbers import overlong_number, overlong_run
from rlhf_lint.readers.source import Source
from rlhf_lint.startup import import_module

# kind -> "module:function" parsing Source.text; imported only when a file of that kind is seen (lazy start-up).
# A parser returns the tree, or raises ParseError.
PARSERS: dict[str, str] = {
    "json": "rlhf_lint.readers.json:parse_json_source",
    "ds_config": "rlhf_lint.readers.json:parse_json_source",
    "python": "rlhf_lint.readers.python:parse_python_source",
    "yaml": "rlhf_lint.readers.yaml:parse_yaml_source",
    "requirements": "rlhf_lint.readers.pins:parse_requirements_source",
    "pyproject_toml": "rlhf_lint.readers.pins:parse_pyproject_source",
    "setup_cfg": "rlhf_lint.readers.pins:parse_setup_cfg_source",
    "dockerfile": "rlhf_lint.readers.pins:parse_dockerfile_source",
    "shell": "rlhf_lint.readers.shell:parse_shell_source",
}


def _resolve_callable(spec: str) -> Callable:
    module, _, name = spec.partition(":")
    return getattr(import_module(module), name)


# Kinds whose numbers are words or strings that the program reading them converts (argparse, packaging), and whose
# readers do not see number tokens: a run of digits over Python's limit anywhere is reported before any parser or
# rule converts it. The JSON, YAML and Python readers find such numbers among their own tokens (a string of digits
# is no number there).
DIGITS_ANYWHERE = frozenset({"shell", "requirements", "pyproject_toml", "setup_cfg", "dockerfile"})


# Bytes a reader takes per file kind (YAML and Python configs: rlhf_lint.readers.yaml / .python). The largest real
# launch script seen is 14 KB, the largest pin file 10 KB; a file over its bound is F004, not minutes of evaluation.
MAX_PARSE_BYTES = {"shell": 64 << 10, "requirements": 32 << 10, "pyproject_toml": 32 << 10, "setup_cfg": 32 << 10,
                   "dockerfile": 32 << 10}


def over_parse_bound(source: Source, limit: int) -> bool:
    """Whether the source is over ``limit`` bytes; if so it is recorded as skipped (F004)."""
    if len(source.raw) <= limit:
        return False
    source.skipped.append((Span(0, 0), f"a {source.kind} file of {len(source.raw) >> 10} KiB, over the {limit >> 10} "
                                       "KiB rlhf-lint reads for this kind of file: not checked"))
    return True


def parse_source(source: Source) -> None:
    """Set source.tree, or source.parse_error on failure. Never raises for bad input."""
    spec = PARSERS.get(source.kind)
    if spec is None:
        return
    limit = MAX_PARSE_BYTES.get(source.kind)
    if limit is not None and over_parse_bound(source, limit):
        source.tree, source.parse_error = None, None
        return
    overlong = overlong_run(source.text) if source.kind in DIGITS_ANYWHERE else None
    if overlong is not None:
        source.tree, source.parse_error = None, overlong_number(*overlong)
        return
    try:
        source.tree = _resolve_callable(spec)(source)
        source.parse_error = None
    except ParseError as exc:
        source.tree = None
        source.parse_error = exc
    except OverBounds as exc:
        source.tree, source.parse_error = None, None
        source.skipped.append((Span(0, 0), str(exc)))
    except RecursionError:
        source.tree = None
        source.parse_error = ParseError("nesting too deep to parse", 0)
    except Exception as exc:  # a bug in a parser must not stop the other files
        if DEBUG["raise"]:
            raise
        source.tree = None
        source.parse_error = None
        source.internal_errors.append(InternalError.of(source.path, f"parser {spec}", exc))


def reference_candidates(from_path: str, reference: str, root: str) -> list[str]:
    """Every path ``reference`` written in ``from_path`` may name, in the order Project.resolve tries them.
    The grouping of files for parallel runs and the cache (rlhf_lint.engine.groups) uses the same list, so that a file
    and every file it can name are always checked together."""
    if not reference or reference.startswith(("$", "~")):
        return []
    candidates = []
    if os.path.isabs(reference):
        candidates.append(reference)
    else:
        candidates.append(os.path.join(os.path.dirname(from_path), reference))
        candidates.append(os.path.join(root, reference))
        candidates.append(reference)
        # scripts run from the repository root often name files relative to it: try every ancestor
        parent = os.path.dirname(os.path.abspath(from_path))
        for _ in range(6):
            candidates.append(os.path.join(parent, reference))
            up = os.path.dirname(parent)
            if up == parent:
                break
            parent = up
    return candidates


@record
class Context:
    """What a rule sees. Rules read it; they never do I/O."""

    project: "Project"
    source: Source | None = None
    job: Job | None = None

    @property
    def config(self) -> Config:
        """The configuration of the file (or the job's launch file) the rule looks at."""
        path = self.source.path if self.source is not None else (self.job.path if self.job is not None else None)
        return self.project.config_for(path)

    @property
    def tree(self) -> Any:
        return None if self.source is None else self.source.tree

    @property
    def path(self) -> str | None:
        return None if self.source is None else self.source.path


class Project:
    def __init__(self, sources: list[Source], config: Config, configs: dict[str, Config] | None = None):
        self._config = config
        self.configs = configs or {}  # path -> its own configuration, where files of one project differ
        self.focus: str | None = None  # the file whose job is being built or checked (see config)
        self.sources: dict[str, Source] = {}
        self._by_real: dict[str, Source] = {}
        self._jobs: list[Job] | None = None
        self._ds_config_users: dict[str, list[tuple[Job, Setting]]] | None = None  # see jobs_referencing
        # whether some source may pin / does pin (see declares_pins): asked per file and rule, answered once
        self._may_pin: bool | None = None
        self._pins: bool | None = None
        for s in sources:
            self.add(s)

    def add(self, source: Source) -> None:
        self.sources[source.path] = source
        self._by_real[os.path.realpath(source.path)] = source
        self._sources_changed()

    def _sources_changed(self) -> None:
        """Forget what was derived from the whole set of sources. (The language server builds a new Project for
        each edit; a --fix round rebuilds it too.)"""
        self._ds_config_users = None
        self._may_pin = self._pins = None
        for memo in ("_pin_documents", "_pins_cache"):  # the pins readers' memos (readers.pins, frameworks.versions)
            self.__dict__.pop(memo, None)

    @property
    def config(self) -> Config:
        """The configuration of the file in focus: job builders and rules that read ``project.config`` get their
        own file's configuration when the files of one project have different ones (per-file configuration)."""
        if self.focus is None or not self.configs:
            return self._config
        return self.configs.get(self.focus, self._config)

    @config.setter
    def config(self, value: Config) -> None:
        self._config = value

    def config_for(self, path: str | None) -> Config:
        return self.configs.get(path, self._config) if path is not None else self._config

    def has(self, fact: str, job: Job | None = None, source: Source | None = None) -> bool:
        """Whether the project (for a job-scope rule: the job; for a file-scope rule: the file) holds what a rule
        declares it needs (``@rule(when=...)``). A rule is neither imported nor run where its fact is absent, so a
        fact must be a condition without which the rule surely finds nothing."""
        if source is not None and fact == "parse error":
            return source.parse_error is not None
        if source is not None and fact == "over bounds":
            return bool(source.skipped)
        if source is not None and fact == "unparsed constructs":  # words the shell reader could not parse
            return bool(getattr(source.tree, "unparsed", None))
        if fact == "pins":
            return self.declares_pins()
        if fact == "pin files":  # a file that may pin, even when nothing in it resolves to a version (``-e .``)
            return self.may_declare_pins()
        if fact == "versions":  # a framework release is configured or some file pins
            return bool(self.config.versions) or self.declares_pins()
        if fact == "unreadable files":
            return bool(getattr(self, "unreadable", None))
        if job is not None and fact in ("gpu", "host memory"):
            hardware = self.config_for(job.path).hardware_for(job.hardware)
            if fact == "gpu":  # the memory estimate gives a GPU verdict only with the card's size
                return bool(hardware.gpu or hardware.gpu_memory)
            return bool(hardware.host_memory or hardware.container_memory)
        raise ValueError(f"unknown fact {fact!r}")

    def may_declare_pins(self) -> bool:
        """Whether some source may pin (rlhf_lint.readers.kinds.may_declare_pins), remembered."""
        if self._may_pin is None:
            self._may_pin = any(may_declare_pins(s) for s in self.sources.values())
        return self._may_pin

    def declares_pins(self) -> bool:
        """Whether any source pins or includes anything (rlhf_lint.readers.pins, imported only when some source may
        declare a pin): without pins the P rules have nothing to check. Remembered: every ds_config asks it per
        rule, and scanning every source each time made a run quadratic in the number of files."""
        if self._pins is None:
            if self.may_declare_pins():
                from rlhf_lint.readers.pins import declares_pins

                self._pins = declares_pins(self)
            else:
                self._pins = False
        return self._pins

    def of_kind(self, *kinds: str) -> list[Source]:
        return [s for s in self.sources.values() if s.kind in kinds]

    def resolve(self, from_path: str, reference: str) -> Source | None:
        """A file named by another file: relative to the referencing file, then to the config root, then the
        working directory (launch scripts are usually run from the repository root). Lint-time only: the file
        must be among the files being checked."""
        if not isinstance(reference, str) or "\0" in reference:
            return None  # no file has that name (a NUL escaped into a YAML or JSON string; os.path refuses it)
        for candidate in reference_candidates(from_path, reference, self.config_for(from_path).root):
            found = self._by_real.get(os.path.realpath(candidate))
            if found is not None:
                return found
        return None

    @property
    def jobs(self) -> list[Job]:
        if self._jobs is None:
            jobs: list[Job] = []
            for source in list(self.sources.values()):
                if source.tree is None:
                    continue
                try:
                    builders = builders_for(source.kind)
                except Exception as exc:  # a builder module that fails to import
                    if DEBUG["raise"]:
                        raise
                    source.internal_errors.append(InternalError.of(source.path, "job builders import", exc))
                    continue
                previous, self.focus = self.focus, source.path
                for build in builders:
                    try:
                        jobs.extend(build(source, self))
                    except Exception as exc:  # one bad builder or file must not stop the others
                        if DEBUG["raise"]:
                            raise
                        name = f"{getattr(build, '__module__', '?')}.{getattr(build, '__name__', '?')}"
                        source.internal_errors.append(InternalError.of(source.path, f"job builder {name}", exc))
                self.focus = previous
            for job in jobs:
                self._add_ds_config_settings(job)
            self._jobs = jobs
        return self._jobs

    def _add_ds_config_settings(self, job: Job) -> None:
        """A launch that names a ds_config runs with what that file says (ZeRO stage, precision, offload, batch):
        its settings join the job's, where the launch itself does not set the key."""
        for setting in job.settings.all("deepspeed.config_path"):
            if setting.path is None:
                continue
            target = self.resolve(setting.path, setting.value) if isinstance(setting.value, str) else None
            if target is None and setting.value is not None:
                # not among the checked files (pre-commit passes only what changed), or a path the linter cannot
                # read: its ZeRO stage and offload stay open rather than defaulting to none
                shown = setting.value if isinstance(setting.value, str) else "(its path is not known)"
                job.settings.add(Setting("deepspeed.config_unread", shown, setting.path, setting.span,
                                         "the DeepSpeed config the launch names was not read"))
                job.assumptions.append(not_checked(shown, "the DeepSpeed config"))
                continue
            if target.tree is None or target.path == job.path:
                continue
            from rlhf_lint.frameworks.deepspeed import settings_from_ds_config
            from rlhf_lint.readers.json import JSONDocument

            if not isinstance(target.tree, JSONDocument):
                continue
            for ds_setting in settings_from_ds_config(target.tree, target.path):
                if job.settings.get(ds_setting.key) is None:
                    job.settings.add(ds_setting)

    def jobs_referencing(self, path: str) -> list[tuple[Job, Setting]]:
        """Jobs whose DeepSpeed config setting names ``path`` (a launch script naming a ds_config). Every job's
        reference is resolved once per project, not once per asking file (rules ask for every ds_config)."""
        if self._ds_config_users is None:
            users: dict[str, list[tuple[Job, Setting]]] = {}
            for job in self.jobs:
                for setting in job.settings.all("deepspeed.config_path"):
                    if not isinstance(setting.value, str) or setting.path is None:
                        continue
                    target = self.resolve(setting.path, setting.value)
                    if target is not None:
                        users.setdefault(os.path.realpath(target.path), []).append((job, setting))
            self._ds_config_users = users
        return list(self._ds_config_users.get(os.path.realpath(path), ()))
