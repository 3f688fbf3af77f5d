"""Z: Open-Reasoner-Zero experiment configs (@dataclass subclasses of BasePPOExpConfig), checked without running them.

ORZ validates its config only after Ray, the models and the vLLM engines are up (``_validate_args`` in
orz/ppo/utils.py, the engine constructor); these rules make the same checks on the class body. Every value is the
one the class would have: the subclass override or the inherited default, evaluated per DEBUG_MODE-style flag.

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations

from rlhf_lint.model import Applicability, Fix, Related
from rlhf_lint.readers.kinds import looks_like_orz


ORZ_VALIDATE_URL = "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L104"


def _configs(ctx):
    if ctx.source is None or not looks_like_orz(ctx.source.text):
        return []
    from rlhf_lint.frameworks import orz  # ~4 ms: only for files that look like ORZ configs

    return orz.analyze(ctx.source, ctx.project)


def _location(ctx, config, resolved):
    """Where to report a value: its node when written in this file, else the class name with a related note."""
    from rlhf_lint.readers.python import node_span

    if resolved is not None and resolved.node is not None and resolved.path == ctx.source.path:
        return node_span(ctx.source, resolved.node), ()
    span = node_span(ctx.source, config.name_node)
    related = ()
    if resolved is not None and resolved.origin and resolved.path:
        other = None
        if resolved.path and resolved.node is not None and resolved.path in ctx.project.sources:
            other = node_span(ctx.project.sources[resolved.path], resolved.node)
        related = (Related(resolved.path, other, f"inherited: {resolved.origin}"),)
    return span, related


def _fix_literal(ctx, resolved, value, message, applicability=Applicability.UNSAFE):
    from rlhf_lint.fixers.python import replace_node

    if resolved is None or not resolved.literal or resolved.path != ctx.source.path:
        return None
    edit = replace_node(ctx.source, resolved.node, value)
    return None if edit is None else Fix(message, (edit,), applicability)


def _per_scenario(config, check):
    """Run ``check(scenario)`` -> [(key, make_finding(suffix))] on every scenario; a finding true in all scenarios
    is reported once, one true in some is reported per scenario with the flag values it holds under."""
    results: dict = {}
    order = []
    for scenario in config.scenarios:
        for key, make in check(scenario):
            if key not in results:
                results[key] = (make, [])
                order.append(key)
            results[key][1].append(scenario.label)
    for key in order:
        make, labels = results[key]
        if len(labels) == len(config.scenarios) or not any(labels):
            yield make("")
        else:
            yield make(f" (with {'; '.join(labels)})")
