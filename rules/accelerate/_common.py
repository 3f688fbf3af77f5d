"""A: accelerate config YAML (as used by TRL's example configs) with DeepSpeed, checked as accelerate reads it.

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations


def _cfg(ctx):
    from rlhf_lint.frameworks.accelerate import read

    if ctx.source is None or "distributed_type" not in ctx.source.text and "compute_environment" not in ctx.source.text:
        return None
    return read(ctx.source)


def _value_span(entry):
    from rlhf_lint.fixers.yaml import node_span

    return node_span(entry.value_node)
