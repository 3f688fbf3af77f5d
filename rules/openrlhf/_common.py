"""O: OpenRLHF launch commands, checked against the argparse and post-parse checks of the release they target.

Every rule reads ``rlhf_lint.frameworks.openrlhf.analyze`` (the command as argparse of that release reads it); the
release, and why it was chosen (configuration, a requirements pin, or the flags themselves), is named in each message.

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations

from rlhf_lint.model import UNKNOWN, Related, Span


SHELL = {"shell"}


def _commands(ctx):
    """Commands written in this file (a sourced file's own commands are reported when it is checked itself)."""
    from rlhf_lint.frameworks.launchers import commands_of  # cached on the read script

    return [c for c in commands_of(ctx.source, ctx.project) if c.path == ctx.source.path]


def _invocations(ctx, clis=None, missing_module=False):
    """OpenRLHF invocations of the file; those whose module the release lacks only when asked (its flags are moot)."""
    from rlhf_lint.frameworks.openrlhf import analyze, is_openrlhf

    for command in _commands(ctx):
        if is_openrlhf(command, ctx.project):
            inv = analyze(command, ctx.source, ctx.project)
            if not inv.module_ok and not missing_module:
                continue
            if clis is None or inv.cli in clis:
                yield inv.as_rules_see_it()  # a forwarded "$@" may override any default


def _k():
    from rlhf_lint.frameworks.openrlhf import knowledge

    return knowledge()


def _literal_at(source, span: Span, expected: str) -> bool:
    """Whether the file holds exactly this text there (a fix must not edit what a variable expanded to)."""
    return source is not None and source.text[span.start : span.end] == expected


def _judged(inv, span, message: str, fix=None, severity=None, tail: str = "", related=(),
            read_off: str = " in the flag table of"):
    """A finding read off the tables of the targeted release, ``message`` without the release: outside the releases
    the tables cover (a newer or older pin), a warning that says so, with no fix (issue 13, item 3). ``read_off``
    says what was read: the flag table, or a check OpenRLHF makes across flags at start-up."""
    from rlhf_lint.model import Finding, Severity

    outside = inv.outside_note
    if outside:
        return Finding(span, f"{message}{read_off} OpenRLHF {inv.version}, but {outside}: that release may "
                             f"differ{tail}", related=related, severity=Severity.WARNING)
    return Finding(span, f"{message} ({inv.about_version}){tail}", fix=fix, severity=severity, related=related)


def _checked(inv, span, message: str, fix=None, related=()):
    """A finding of a check OpenRLHF makes across flags at start-up (never an error outside the known releases)."""
    return _judged(inv, span, message, fix=fix, related=related, read_off="; checked against")


def _num(inv, name):
    value = inv.get(name)
    if isinstance(value, bool) or value is UNKNOWN:
        return None
    return value if isinstance(value, (int, float)) else None


def _on(inv, name) -> bool | None:
    value = inv.get(name)
    if value is UNKNOWN:
        return None
    return bool(value)


def _flag_of(inv, name) -> str:
    """How the targeted release spells the flag of a canonical name (``--zero_stage`` or ``--ds.zero_stage``)."""
    k = inv.k or _k()
    for flag in k.flags_at(inv.cli, inv.tag):
        if name in k.canonical(inv.cli, flag):
            return flag
    return "--" + name


def _where(inv, *names):
    """The span of the first given flag among names (else the entry module), and the others as related spans."""
    spans = [(n, inv.span_of(n)) for n in names]
    given = [(n, s) for n, s in spans if s is not None]
    if not given:
        return inv.entry_span or inv.command.span, ()
    first = given[0][1]
    related = tuple(Related(inv.path, s, f"{_flag_of(inv, n)} is set here") for n, s in given[1:])
    return first, related


def _value_text(inv, name) -> str:
    v = inv.values.get(name)
    if v is None:
        return "unset"
    shown = v.value
    if isinstance(shown, bool):
        shown = "on" if shown else "off"
    return f"{shown}" + (" (default)" if v.is_default else "")


def _world(inv, role):
    nodes, gpus = _num(inv, f"{role}.num_nodes"), _num(inv, f"{role}.num_gpus_per_node")
    if nodes is None or gpus is None:
        return None
    return int(nodes) * int(gpus)


def _remote_reward(inv) -> bool | None:
    remote, agent = inv.get("reward.remote_url"), inv.get("train.agent_func_path")
    if remote is UNKNOWN or agent is UNKNOWN:
        return None
    return bool(remote) or bool(agent)


PPO = {"train_ppo_ray"}


def _packing_reason(inv, k):
    if _on(inv, "ds.packing_samples"):
        return "ds.packing_samples", "sample packing"
    ring = _num(inv, "ds.ring_attn_size")
    if ring is not None and ring > 1 and k.check_applies("ring_attention_forces_packing", inv.tag):
        return "ds.ring_attn_size", "ring attention (which turns on sample packing)"
    if _on(inv, "train.dynamic_batch_enable") and k.check_applies("dynamic_batch_forces_packing", inv.tag):
        return "train.dynamic_batch_enable", "dynamic batching (which turns on sample packing)"
    return None
