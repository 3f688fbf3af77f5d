"""O020 silently-overridden: an option OpenRLHF changes behind the user's back after parsing."""
from __future__ import annotations

from rlhf_lint.model import Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _checked, _invocations, _k, _on, _packing_reason, _where


@rule("O020", "silently-overridden", Severity.WARNING, kinds=SHELL)
def silently_overridden(ctx):
    """An option OpenRLHF changes behind the user's back after parsing.

    ## What it does
    Reports: `--vllm.enable_sleep` without `--train.colocate_all` (turned off, v0.5.8+); packing with a
    non-flash attention implementation (switched to flash_attention_2); ring attention or dynamic batching
    without packing in train_ppo_ray (packing switched on); colocate_all with async training (only the
    DeepSpeed models are colocated).

    ## Why it matters
    The run does something other than the script says: memory and speed differ from what was planned.

    ## Example
    `--vllm.enable_sleep` without `--train.colocate_all`.

    ## Fix
    Write what will actually run: drop the ignored option or add what it depends on.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L642-L668
    """
    k = _k()
    for inv in _invocations(ctx):
        ppo = inv.cli == "train_ppo_ray"
        if ppo and k.check_applies("vllm_sleep_needs_colocate_all", inv.tag) and _on(inv, "vllm.enable_sleep") \
                and _on(inv, "train.colocate_all") is False:
            span, related = _where(inv, "vllm.enable_sleep")
            yield _checked(
                inv, span,
                "vLLM sleep mode is switched off by OpenRLHF without colocate_all",
                related=related)
        if ppo and k.check_applies("colocate_all_async_only_deepspeed", inv.tag) and _on(inv, "train.colocate_all") \
                and _on(inv, "train.async_enable"):
            span, related = _where(inv, "train.colocate_all", "train.async_enable")
            yield _checked(
                inv, span,
                "with async training colocate_all only colocates the DeepSpeed models; vLLM gets its "
                "own GPUs",
                related=related)
        if ppo and _on(inv, "ds.packing_samples") is False:
            reason = _packing_reason(inv, k)
            if reason is not None:
                span, related = _where(inv, reason[0])
                yield _checked(
                    inv, span,
                    f"{reason[1]}: OpenRLHF switches sample packing on",
                    related=related)
        packing = _on(inv, "ds.packing_samples") or (ppo and _packing_reason(inv, k) is not None)
        if packing and k.check_applies("packing_forces_flash_attention", inv.tag) and inv.cli in (
                "train_ppo_ray", "train_sft", "train_dpo", "train_rm"):
            attn = inv.get("ds.attn_implementation")
            if inv.given("ds.attn_implementation") and isinstance(attn, str) and "flash_attention" not in attn:
                span, related = _where(inv, "ds.attn_implementation", "ds.packing_samples")
                yield _checked(
                    inv, span,
                    f"sample packing switches the attention implementation `{attn}` to "
                    "flash_attention_2",
                    related=related)
