"""A004 accelerate-unknown-deepspeed-key."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import _cfg


@rule("A004", "accelerate-unknown-deepspeed-key", Severity.WARNING, kinds={"yaml"})
def accelerate_unknown_deepspeed_key(ctx):
    """A key of `deepspeed_config` that accelerate does not read, so its value is silently ignored.

    ## What it does
    Checks the keys of an accelerate config's `deepspeed_config` section against the ones `accelerate config` writes
    and `accelerate launch` reads, and suggests the closest known key.

    ## Why it matters
    accelerate copies unknown keys onto its arguments without using them: `zero_stag: 3` or `offload_optimizer: cpu`
    leaves the run at the defaults (ZeRO-2, no offload) without a word.

    ## Example
    ```yaml
    deepspeed_config:
      offload_optimizer: cpu
    ```

    ## Fix
    Use the documented key (`offload_optimizer_device: cpu`).

    ## References
    https://github.com/huggingface/accelerate/blob/16cb6eb8/src/accelerate/commands/config/cluster.py
    https://github.com/huggingface/accelerate/blob/16cb6eb8/src/accelerate/commands/launch.py
    """
    import difflib

    from rlhf_lint.frameworks.accelerate import deepspeed_keys
    from rlhf_lint.fixers.yaml import node_span

    cfg = _cfg(ctx)
    if cfg is None:
        return
    from rlhf_lint.frameworks.edge import edge_note, past_edge

    known = deepspeed_keys()["keys"]
    edge = None
    for key, entry in cfg.deepspeed.items():
        if key in known:
            continue
        if edge is None:
            edge = past_edge(ctx.project, "accelerate") or False
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else ""
        if edge:  # a key new in a release the table lacks
            hint = f", but {edge_note('accelerate', edge.version, edge.origin)}: that release may read it" + hint
        yield Finding(node_span(entry.key_node), f"deepspeed_config key {key!r} is not read by accelerate{hint}")
