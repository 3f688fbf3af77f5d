"""Jobs: one launch each, in the common Settings vocabulary, whatever file or syntax it came from.

A job builder reads one kind of Source (a launch script, an ORZ Python config, a verl override list) and returns
Jobs. Rules about memory and topology read ``job.settings`` only, so one rule serves every framework. The keys of
``job.settings`` (and ROLES, the ``<role>`` of ``model.<role>.path``) are declared in rlhf_lint.settings.
This module holds the Job record and the registry of job builders, imported by file kind.
"""
from __future__ import annotations


TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Callable, Iterable

from rlhf_lint.startup.records import field, record
from rlhf_lint.model import Settings, Span
from rlhf_lint.startup import import_module

# Modules that register job builders; imported when the project first asks for its jobs.
BUILDER_MODULES: list[str] = ["rlhf_lint.frameworks.launchers", "rlhf_lint.frameworks.orz", "rlhf_lint.frameworks.verl",
                               "rlhf_lint.frameworks.accelerate", "rlhf_lint.frameworks.hf",
                               "rlhf_lint.frameworks.skypilot"]

# The file kinds each module above builds jobs for, so that a run imports only the builders its files need (orz,
# verl and accelerate_config cost ~7 ms of a one-script run). A module missing here is imported for every kind;
# tests/startup/test_import_cost.py checks this table against what the modules register.
BUILDER_KINDS: dict[str, frozenset[str]] = {
    "rlhf_lint.frameworks.launchers": frozenset({"shell"}),
    "rlhf_lint.frameworks.orz": frozenset({"python"}),
    "rlhf_lint.frameworks.verl": frozenset({"yaml"}),
    "rlhf_lint.frameworks.accelerate": frozenset({"yaml"}),
    "rlhf_lint.frameworks.hf": frozenset({"yaml", "python"}),
    "rlhf_lint.frameworks.skypilot": frozenset({"yaml"}),
}

# Every file kind the engine reads: a kind no module above builds jobs for (json, requirements, ...) has no builders
# and imports none. Another kind (a test's, a new builder's) gets every module, as before the table existed.
FILE_KINDS = frozenset({"json", "ds_config", "shell", "python", "yaml", "requirements", "pyproject_toml", "setup_cfg",
                        "dockerfile"})

_BUILDERS: list[tuple[frozenset[str], Callable]] = []


@record
class Job:
    name: str  # short label for reports, e.g. "train_ppo.sh:12 openrlhf.cli.train_ppo_ray"
    path: str  # the file that launches it
    span: Span | None  # the launch command (or config class) in that file
    framework: str
    settings: Settings = field(default_factory=Settings)
    roles: tuple[str, ...] = ()
    assumptions: list[str] = field(default_factory=list)  # what was assumed to build it, shown to users
    hardware: dict = field(default_factory=dict)  # per-file hardware declared in a comment

    def value(self, key: str, default=None):
        return self.settings.value(key, default)


def job_builder(kinds: Iterable[str]) -> Callable[[Callable], Callable]:
    """Register ``func(source, project) -> list[Job]`` for Sources of the given kinds."""

    def decorate(func: Callable) -> Callable:
        _BUILDERS.append((frozenset(kinds), func))
        return func

    return decorate


def builders_for(kind: str) -> list[Callable]:
    known = kind in FILE_KINDS
    for module in list(BUILDER_MODULES):
        if not known or module not in BUILDER_KINDS or kind in BUILDER_KINDS[module]:
            import_module(module)
            BUILDER_MODULES.remove(module)
    return [func for kinds, func in _BUILDERS if kind in kinds]


def not_checked(path: str, what: str) -> str:
    """The assumption a launch gets when a file it names is not among the files checked (only those are read)."""
    return (f"{what} {path} is not among the files checked, so its settings are not read: pass it too (or a "
            f"folder holding both)")
