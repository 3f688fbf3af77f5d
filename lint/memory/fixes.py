"""Turning "set these settings to these values" into edits of the file that launches a job.

A setting the launch writes literally is edited where it is written (the assignment it came from, for a shell
variable). A setting the launch leaves to a default is added by the framework's writer (SETTING_WRITERS); without one
the finding carries no fix, only its message. Framework interpreters may register a writer
``func(project, job, key, value) -> list[Edit] | None``.
"""
from __future__ import annotations

import importlib

from rlhf_lint.model import UNKNOWN, Applicability, Edit, Fix, Setting

# framework -> "module:function" adding a setting the launch does not mention
SETTING_WRITERS: dict[str, str] = {
    "openrlhf": "rlhf_lint.memory.fixes:insert_openrlhf_flag",
}


def _literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _written(setting: Setting | None, job) -> bool:
    return (setting is not None and setting.span is not None and setting.path == job.path
            and "default" not in (setting.origin or "").lower())


def _replace(source_text: str, setting: Setting, value) -> Edit:
    old = source_text[setting.span.start:setting.span.end]
    text = _literal(value)
    if isinstance(value, bool) and old[:1] in "TF":  # a Python literal
        text = "True" if value else "False"
    if len(old) >= 2 and old[0] == old[-1] and old[0] in "\"'":
        text = old[0] + text + old[0]
    return Edit(setting.span.start, setting.span.end, text)


def setting_fix(project, job, changes: dict, message: str,
                applicability: Applicability = Applicability.UNSAFE) -> Fix | None:
    source = project.sources.get(job.path)
    if source is None:
        return None
    edits: list[Edit] = []
    for key, value in changes.items():
        setting = job.settings.get(key)
        if setting is not None and setting.value is UNKNOWN:
            return None  # written but unreadable (`${util}` set in a branch): the text there is no value to replace
        if _written(setting, job) and not isinstance(value, bool):
            edits.append(_replace(source.text, setting, value))
            continue
        if _written(setting, job) and isinstance(value, bool) and setting.raw is None and \
                source.text[setting.span.start:setting.span.end] in ("True", "False", "true", "false"):
            edits.append(_replace(source.text, setting, value))
            continue
        spec = SETTING_WRITERS.get(job.framework)
        if spec is None:
            return None
        module, _, name = spec.partition(":")
        try:
            writer = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            return None
        added = writer(project, job, key, value)
        if not added:
            return None
        edits.extend(added)
    if not edits:
        return None
    try:
        return Fix(message, tuple(edits), applicability)
    except ValueError:  # overlapping edits: leave it to the user
        return None


def _flag_for(key: str, command, entry: str) -> tuple[str, tuple | None] | None:
    """(the flag, for a switch the values it stands for besides true; None for a flag that takes its value)."""
    from rlhf_lint.schemas import load

    spec = load("memory_fix_flags.json").get("openrlhf", {}).get(key)
    if spec is None:
        return None
    dotted = any(a.flag.startswith("--") and "." in a.flag for a in command.args)
    if dotted:
        short = entry.rsplit(".", 1)[-1]
        flag = spec.get("dotted_by_entry", {}).get(short, spec["dotted"])
    else:
        flag = spec["flat"]
    return flag, tuple(spec.get("switch_for", ())) if spec.get("switch") else None


def insert_openrlhf_flag(project, job, key: str, value) -> list[Edit] | None:
    """Add ``--flag value`` after the last argument of the job's launch command, in its continuation style."""
    source = project.sources.get(job.path)
    if source is None or source.kind != "shell" or job.span is None:
        return None
    try:
        from rlhf_lint.frameworks.launchers import commands_of
    except ImportError:
        return None
    command = next((c for c in commands_of(source, project) if c.span == job.span), None)
    if command is None or not command.args or command.heredoc_span is not None:
        return None
    entry = command.entry.text if command.entry is not None and command.entry.known else ""
    found = _flag_for(key, command, str(entry))
    if found is None:
        return None
    flag, switch_for = found
    switch = switch_for is not None
    if switch and value is not True and (not isinstance(value, str) or value not in switch_for):
        return None
    last = command.args[-1]
    end = last.span.end
    if last.values and last.values[-1].span.end > end:
        end = last.values[-1].span.end
    if end <= command.span.start or end > command.span.end:
        return None
    separator = command.continuation or " "
    text = separator + flag + ("" if switch else " " + _literal(value))
    return [Edit(end, end, text)]
