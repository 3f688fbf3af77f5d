"""O011 colocate-all-engine-mismatch."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import (
    PPO, SHELL, _checked, _flag_of, _invocations, _k, _literal_at, _num, _on, _where, _world,
)


@rule("O011", "colocate-all-engine-mismatch", Severity.ERROR, kinds=SHELL)
def colocate_all_engine_mismatch(ctx):
    """With `--train.colocate_all`, vLLM engines × tensor parallel size must equal the actor's GPUs.

    ## What it does
    In the hybrid engine every actor GPU also hosts one vLLM worker, so OpenRLHF asserts
    `actor.num_nodes × actor.num_gpus_per_node == vllm.num_engines × vllm.tensor_parallel_size` (not in async
    mode, where vLLM stays outside the shared placement group). Applies from v0.5.9.

    ## Why it matters
    The assertion fires after Ray started; a mismatch is the most common hybrid-engine start-up failure.

    ## Example
    ```bash
    --actor.num_gpus_per_node 8 --vllm.num_engines 4 --vllm.tensor_parallel_size 1 --train.colocate_all
    ```

    ## Fix
    Set `--vllm.num_engines` to actor GPUs / tensor parallel size.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L55-L64
    - https://github.com/OpenRLHF/OpenRLHF/issues/1162
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        if k.check_applies("colocate_all_engines_fill_actor", inv.tag) is None:
            continue
        if not _on(inv, "train.colocate_all") or _on(inv, "train.async_enable") is not False:
            continue
        engines, tp, actor = _num(inv, "vllm.num_engines"), _num(inv, "vllm.tensor_parallel_size"), _world(inv, "actor")
        if engines is None or tp is None or actor is None or engines <= 0:
            continue
        if engines * tp != actor:
            span, related = _where(inv, "vllm.num_engines", "vllm.tensor_parallel_size", "actor.num_nodes",
                                   "actor.num_gpus_per_node", "train.colocate_all")
            fix = None
            word = inv.values["vllm.num_engines"].word
            if actor % tp == 0 and word is not None and _literal_at(ctx.source, word.span, str(word.text)):
                fix = Fix(f"set {_flag_of(inv, 'vllm.num_engines')} to {actor // tp}",
                          (Edit.replace(word.span, str(actor // tp)),), Applicability.UNSAFE)
            yield _checked(
                inv, span,
                f"colocate_all puts one vLLM worker on every actor GPU: {engines} engine(s) × tensor "
                f"parallel {tp} = {engines * tp} GPUs, but the actor has {actor}",
                fix=fix,
                related=related)
