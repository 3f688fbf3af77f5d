"""V026 verl-max-model-len-above-context."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ROLLOUT, _asserts_of, _cfg, _finding


@rule("V026", "verl-max-model-len-above-context", Severity.ERROR, scope="job", frameworks=("verl",))
def verl_max_model_len_above_context(ctx):
    """A set `rollout.max_model_len` above the model's context length, which verl's vLLM server refuses.

    ## What it does
    From verl 0.7.1 the vLLM server compares a `actor_rollout_ref.rollout.max_model_len` that is set with the
    model's `max_position_embeddings` (after `actor_rollout_ref.model.override_config.max_position_embeddings`)
    and raises when it is larger (schemas/verl/startup_asserts.json `max_model_len_context`). The context length is
    the catalog's for that exact model (or its config.json when the checkpoint is among the checked files); a model
    only matched by name is not checked. With the verl release unknown the finding is a warning.

    ## Why it matters
    `ValueError: max_model_len (40960) should be less than or equal to max_position_embeddings (32768)` when the
    rollout servers start, after the trainer's workers have loaded the model.

    ## Example
    `actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct actor_rollout_ref.rollout.max_model_len=40960`.

    ## Fix
    Lower `max_model_len` to the model's context length, or raise the context through
    `actor_rollout_ref.model.override_config.max_position_embeddings` (with a rope scaling the model supports).

    ## References
    https://github.com/volcengine/verl/blob/v0.7.1/verl/workers/rollout/vllm_rollout/vllm_async_server.py
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    written = cfg.get(f"{ROLLOUT}.max_model_len") if cfg.where(f"{ROLLOUT}.max_model_len") is not None else None
    if not isinstance(written, int) or isinstance(written, bool) or written <= 0:
        return
    row = _asserts_of(cfg, "max_model_len_context")
    if row is None:
        return  # 0.7.0 overwrites the setting; earlier releases do not check it
    override = cfg.get("actor_rollout_ref.model.override_config.max_position_embeddings") \
        if cfg.where("actor_rollout_ref.model.override_config.max_position_embeddings") is not None else None
    if override is not None:
        context, whose = override, "actor_rollout_ref.model.override_config.max_position_embeddings"
    else:
        from rlhf_lint.rules.memory._common import _estimate

        vllm = _estimate(ctx).role("vllm")
        context = vllm.arch.max_position_embeddings if vllm is not None and vllm.arch is not None else 0
        whose = f"the max_position_embeddings of {vllm.arch.name}" if context else ""
    if not isinstance(context, int) or isinstance(context, bool) or context <= 0 or written <= context:
        return
    message = (f"rollout.max_model_len {written} is above {whose} ({context}): verl's vLLM server raises "
               f"\"max_model_len should be less than or equal to max_position_embeddings\" at start-up "
               f"({row['source']})")
    severity = None
    if not cfg.exact:
        message += "; the verl release is not known (0.7.0 and earlier do not check)"
        severity = Severity.WARNING
    yield _finding(ctx, cfg, f"{ROLLOUT}.max_model_len", message, severity=severity)
