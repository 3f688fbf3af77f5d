"""S: launch scripts as bash runs them (continuations, repeated flags, placeholders, ray, globs, heredoc quotes).

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations


_SHELL = {"shell"}


def _script(ctx):
    from rlhf_lint.readers.shell import script_of

    return script_of(ctx.source, ctx.project)


def _commands(ctx):
    from rlhf_lint.frameworks.launchers import commands_of

    return commands_of(ctx.source, ctx.project)
