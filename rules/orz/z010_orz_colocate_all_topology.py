"""Z010 orz-colocate-all-topology."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.orz._common import _configs, _location, _per_scenario

BUILD_MODELS_URL = "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/trainer.py#L575"


def _mismatch(get):
    """(key, message) of the first clause of ORZ's colocate_all assert that fails, or None."""
    clauses = [
        ("critic_num_nodes", "actor_num_nodes", "critic_num_nodes"),
        ("critic_num_gpus_per_node", "actor_num_gpus_per_node", "critic_num_gpus_per_node"),
        ("ref_num_nodes", "actor_num_nodes", "ref_num_nodes"),
        ("ref_num_gpus_per_node", "actor_num_gpus_per_node", "ref_num_gpus_per_node"),
        ("vllm_num_engines", "actor_num_nodes", "vllm_num_engines"),
    ]
    per = get("actor_num_gpus_per_node")
    if isinstance(per, int) and not isinstance(per, bool) and per != 1:
        return "actor_num_gpus_per_node", f"actor_num_gpus_per_node = {per}, ORZ asks 1 (one GPU per actor)"
    for report, a, b in clauses:
        va, vb = get(a), get(b)
        if isinstance(va, int) and isinstance(vb, int) and not isinstance(va, bool) and not isinstance(vb, bool) \
                and va != vb:
            return report, f"{a} = {va} but {b} = {vb}"
    return None


@rule("Z010", "orz-colocate-all-topology", Severity.ERROR, kinds={"python"})
def orz_colocate_all_topology(ctx):
    """With `colocate_all`, ORZ asks one GPU per actor and the same count for actor, critic, reference and vLLM.

    ## What it does
    Repeats the assert of `RayPPOTrainer.build_models` for a config that colocates everything: actor, critic and
    reference have equal `*_num_nodes` and `*_num_gpus_per_node`, `actor_num_gpus_per_node` is 1, and
    `vllm_num_engines` equals `actor_num_nodes` (ORZ counts one node per GPU). Each value is the one the class
    would have (the subclass override or the inherited default), per DEBUG_MODE-style scenario.

    ## Why it matters
    The assert "num_nodes and num_gpus_per_node must be the same when colocate all models and each actor has only
    one gpu" fires after the dataset is loaded and the Ray cluster started.

    ## Example
    ```python
    colocate_all: bool = True
    actor_num_nodes: int = 8
    vllm_num_engines: int = 4
    ```

    ## Fix
    Give every role `total_num_nodes` nodes of one GPU and as many vLLM engines, as ORZ's playground configs do.

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/trainer.py#L575
    """
    for config in _configs(ctx):
        def check(scenario):
            if scenario.get("colocate_all") is not True:
                return
            found = _mismatch(scenario.get)
            if found is None:
                return
            key, why = found
            span, related = _location(ctx, config, scenario.values.get(key))
            msg = (f"colocate_all = True with {why}: ORZ's build_models asserts one GPU per actor and the same "
                   f"count for actor, critic, reference and vLLM engines ({BUILD_MODELS_URL})")
            yield (span, msg), lambda sfx: Finding(span, msg + sfx, related=related)
        yield from _per_scenario(config, check)
