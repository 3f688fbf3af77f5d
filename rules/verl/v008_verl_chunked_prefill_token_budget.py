"""V008 verl-chunked-prefill-token-budget."""
from __future__ import annotations

from rlhf_lint.model import Severity, UNKNOWN
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import ROLLOUT, _cfg, _finding, _ints, _value_fix


@rule("V008", "verl-chunked-prefill-token-budget", Severity.ERROR, scope="job", frameworks=("verl",), fixable=True)
def verl_chunked_prefill_token_budget(ctx):
    """Chunked prefill is on while `max_num_batched_tokens` is below the rollout's model length.

    ## What it does
    With `rollout.enable_chunked_prefill` true, compares `rollout.max_num_batched_tokens` with `rollout.max_model_len`
    (or prompt + response length when unset). verl releases up to 0.6 raise on this in the synchronous rollout
    (`vLLMRollout`); the async one (`rollout.mode=async`) passes the budget to vLLM, which accepts it. With no
    `verl-version` configured it is reported as a warning.

    ## Why it matters
    verl's vLLM rollout raises "Enable chunked prefill, max_num_batched_tokens is smaller than max_model_len" once
    the engine is built: long-response recipes (8k+ tokens) trip it with the default budget of 8192.

    ## Example
    `data.max_prompt_length=1024 data.max_response_length=8192 actor_rollout_ref.rollout.max_num_batched_tokens=8192`

    ## Fix
    Raise `max_num_batched_tokens` to the model length (unsafe fix: a larger prefill batch uses more memory).

    ## References
    https://github.com/verl-project/verl/pull/259
    https://github.com/verl-project/verl/blob/v0.6.1/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py
    (the check at L197 in vLLMRollout; vLLMAsyncRollout at L515 has none)
    """
    cfg = _cfg(ctx)
    if cfg is None or cfg.get(f"{ROLLOUT}.enable_chunked_prefill") is not True:
        return
    if cfg.get(f"{ROLLOUT}.name") not in ("vllm", None, UNKNOWN):
        return
    # not written: the default of the releases this check concerns (<= 0.6: sync), whatever a newer table says
    written = cfg.where(f"{ROLLOUT}.mode") is not None
    mode = cfg.get(f"{ROLLOUT}.mode") if written else (UNKNOWN if cfg.values_unknown else "sync")
    if mode == "async":
        return  # the check is vLLMRollout's (sync) only; vLLMAsyncRollout hands the budget to vLLM, which accepts it
    from packaging.version import InvalidVersion, Version

    severity = None
    version = cfg.target.version if cfg.target is not None else None  # configuration > pin
    if version:
        try:
            if Version(version) >= Version("0.7.0"):
                return
        except InvalidVersion:
            return
    else:
        severity = Severity.WARNING
    if mode is UNKNOWN:
        severity = Severity.WARNING  # the mode may be async
    budget = cfg.known_int(f"{ROLLOUT}.max_num_batched_tokens")
    max_len = cfg.known_int(f"{ROLLOUT}.max_model_len")
    if max_len is None:
        lens = _ints(cfg, "data.max_prompt_length", "data.max_response_length")
        if lens is None or cfg.get(f"{ROLLOUT}.max_model_len") not in (None,):
            return
        max_len = sum(lens)
        what = f"max_prompt_length + max_response_length = {max_len}"
    else:
        what = f"max_model_len = {max_len}"
    if budget is None or budget >= max_len:
        return
    fix = _value_fix(cfg, f"{ROLLOUT}.max_num_batched_tokens", max_len, f"set max_num_batched_tokens to {max_len}")
    note = "" if severity is None else (" (in sync mode; rollout.mode cannot be read)" if mode is UNKNOWN and version
                                         else " (verl <= 0.6 raises; set verl-version or pin verl to know)")
    yield _finding(ctx, cfg, f"{ROLLOUT}.max_num_batched_tokens",
                   f"chunked prefill with max_num_batched_tokens = {budget} < {what}: verl's vLLM rollout "
                   f"refuses it{note}", fix=fix, severity=severity)
