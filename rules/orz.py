"""Z: Open-Reasoner-Zero experiment configs (@dataclass subclasses of BasePPOExpConfig), checked without running them.

ORZ validates its config only after Ray, the models and the vLLM engines are up (``_validate_args`` in
orz/ppo/utils.py, the engine constructor); these rules make the same checks on the class body. Every value is the
one the class would have: the subclass override or the inherited default, evaluated per DEBUG_MODE-style flag.
"""
from __future__ import annotations

from rlhf_lint.model import Applicability, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule

ORZ_VALIDATE_URL = "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L104"


def _configs(ctx):
    from rlhf_lint.frameworks import orz

    if ctx.source is None or not orz.looks_like_orz(ctx.source.text):
        return []
    return orz.analyze(ctx.source, ctx.project)


def _location(ctx, config, resolved):
    """Where to report a value: its node when written in this file, else the class name with a related note."""
    from rlhf_lint.fixers.python import node_span

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


@rule("Z001", "orz-zero3-without-vllm", Severity.ERROR, kinds={"python"})
def zero3_without_vllm(ctx):
    """ZeRO-3 is set while no vLLM engine is configured, which ORZ refuses at start-up.

    ## What it does
    Evaluates `zero_stage` and `vllm_num_engines` of each ORZ config class (override or inherited default) and
    reports `zero_stage = 3` with `vllm_num_engines <= 0`.

    ## Why it matters
    ORZ's `_validate_args` asserts "ZeRO-3 is only supported when vLLM enabled"; the assertion fires after the Ray
    cluster is up, so the whole start-up is wasted.

    ## Example
    ```python
    @dataclass
    class PPOExpConfig(BasePPOExpConfig):
        zero_stage: int = 3
        vllm_num_engines: int = 0
    ```

    ## Fix
    Give the experiment vLLM engines (`vllm_num_engines >= 1`) or use ZeRO stage 2.

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L104
    """
    for config in _configs(ctx):
        def check(scenario):
            stage, engines = scenario.get("zero_stage"), scenario.get("vllm_num_engines")
            if stage == 3 and isinstance(engines, int) and engines <= 0:
                r = scenario.values.get("vllm_num_engines")
                span, related = _location(ctx, config, r)
                msg = f"zero_stage = 3 with vllm_num_engines = {engines}: ORZ supports ZeRO-3 only with vLLM engines"
                yield (span, msg), lambda sfx: Finding(span, msg + sfx, related=related)
        yield from _per_scenario(config, check)


@rule("Z002", "orz-packing-max-len-too-small", Severity.ERROR, kinds={"python"}, fixable=True)
def packing_max_len_too_small(ctx):
    """The packing length `packing_max_len` is smaller than `prompt_max_len + generate_max_len`.

    ## What it does
    Evaluates the three fields (references such as `generate_max_len + prompt_max_len` included) and reports a
    packing budget that cannot hold one prompt with its longest generation.

    ## Why it matters
    ORZ always packs samples and asserts `packing_max_len >= prompt_max_len + generate_max_len` before training.

    ## Example
    ```python
    prompt_max_len: int = 2048
    generate_max_len: int = 8000
    packing_max_len: int = 8192
    ```

    ## Fix
    Set `packing_max_len` to the sum (unsafe fix: a larger packing length needs more activation memory).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L110
    """
    for config in _configs(ctx):
        def check(scenario):
            packing = scenario.get("packing_max_len")
            prompt, generate = scenario.get("prompt_max_len"), scenario.get("generate_max_len")
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (packing, prompt, generate)):
                return
            if packing >= prompt + generate:
                return
            r = scenario.values.get("packing_max_len")
            span, related = _location(ctx, config, r)
            need = prompt + generate
            msg = (f"packing_max_len = {packing} is smaller than prompt_max_len + generate_max_len = "
                   f"{prompt} + {generate} = {need}: ORZ asserts it is at least that")
            fix = _fix_literal(ctx, r, need, f"set packing_max_len to {need}")
            yield (span, msg), lambda sfx: Finding(span, msg + sfx, fix=fix, related=related)
        yield from _per_scenario(config, check)


@rule("Z003", "orz-packing-micro-batch", Severity.ERROR, kinds={"python"}, fixable=True)
def packing_micro_batch(ctx):
    """A micro batch size (`micro_train_batch_size`, `micro_forward_batch_size`) is not 1, which ORZ's sample packing requires.

    ## What it does
    Reports either micro batch size when it evaluates to a number other than 1 (the base default is 8 for training
    and 32 for forward passes, so a config that does not override them fails too).

    ## Why it matters
    ORZ packs several samples into one sequence of `packing_max_len` tokens; its `_validate_args` asserts both micro
    batch sizes are 1 and stops the run after start-up.

    ## Example
    ```python
    micro_train_batch_size: int = 2
    ```

    ## Fix
    Set the field to 1 (unsafe fix: the packing length, not the micro batch, then sets the tokens per step).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L113
    """
    for config in _configs(ctx):
        def check(scenario):
            for name in ("micro_train_batch_size", "micro_forward_batch_size"):
                value = scenario.get(name)
                if not isinstance(value, int) or isinstance(value, bool) or value == 1:
                    continue
                r = scenario.values.get(name)
                span, related = _location(ctx, config, r)
                inherited = "" if r is None or r.path == ctx.source.path else f" ({r.origin or 'inherited'})"
                msg = f"{name} = {value}{inherited}: ORZ packs samples and requires a micro batch of 1"
                fix = _fix_literal(ctx, r, 1, f"set {name} to 1")
                yield (span, msg), (lambda s, m, f, rel: lambda sfx: Finding(s, m + sfx, fix=f, related=rel))(
                    span, msg, fix, related)
        yield from _per_scenario(config, check)


@rule("Z004", "orz-colocate-all-tensor-parallel", Severity.ERROR, kinds={"python"})
def colocate_all_tensor_parallel(ctx):
    """Everything is colocated (`colocate_all = True`) with `vllm_tensor_parallel_size > 1`, which ORZ's vLLM engines refuse.

    ## What it does
    Reports a config that colocates everything (vLLM engines share GPUs with the training models) while each engine
    spans several GPUs.

    ## Why it matters
    ORZ's `create_vllm_engines` asserts "colocate_with_actor is not supported when tensor_parallel_size > 1"; a
    colocated engine gets a fraction of one GPU in the placement group and cannot span several.

    ## Example
    ```python
    colocate_all: bool = True
    vllm_tensor_parallel_size: int = 4
    ```

    ## Fix
    Use `vllm_tensor_parallel_size = 1` with `colocate_all`, or `colocate_all = False` with separate vLLM GPUs (as
    ORZ's 32B config does).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py
    """
    for config in _configs(ctx):
        def check(scenario):
            tp = scenario.get("vllm_tensor_parallel_size")
            if scenario.get("colocate_all") is True and isinstance(tp, int) and tp > 1:
                r = scenario.values.get("vllm_tensor_parallel_size")
                span, related = _location(ctx, config, r)
                msg = (f"colocate_all = True with vllm_tensor_parallel_size = {tp}: ORZ supports colocated vLLM "
                       "engines only with tensor parallel size 1")
                yield (span, msg), lambda sfx: Finding(span, msg + sfx, related=related)
        yield from _per_scenario(config, check)


@rule("Z005", "orz-no-reward-source", Severity.ERROR, kinds={"python"})
def no_reward_source(ctx):
    """Neither a reward model nor a reward function is configured.

    ## What it does
    Reports a config whose `reward_pretrain` evaluates to None while `use_compute_reward_fn` is False.

    ## Why it matters
    ORZ asserts "at least one of reward model or custom reward fn should be set" after start-up.

    ## Example
    ```python
    reward_pretrain: Optional[str] = None
    use_compute_reward_fn: bool = False
    ```

    ## Fix
    Set `use_compute_reward_fn = True` (rule-based reward, as ORZ's playground does) or name a reward model.

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/ppo/utils.py#L106
    """
    for config in _configs(ctx):
        def check(scenario):
            if "reward_pretrain" not in scenario.values or "use_compute_reward_fn" not in scenario.values:
                return
            if scenario.get("reward_pretrain") is None and scenario.get("use_compute_reward_fn") is False:
                r = scenario.values.get("use_compute_reward_fn")
                span, related = _location(ctx, config, r)
                msg = "reward_pretrain is None and use_compute_reward_fn is False: ORZ needs one reward source"
                yield (span, msg), lambda sfx: Finding(span, msg + sfx, related=related)
        yield from _per_scenario(config, check)


@rule("Z006", "orz-unreachable-flag-branch", Severity.WARNING, kinds={"python"})
def unreachable_flag_branch(ctx):
    """A conditional expression's flag-dependent branch can never be taken.

    ## What it does
    Finds conditional expressions (`a if test else b`) whose test is fixed by the class body (it does not depend on
    a module-level environment flag such as `DEBUG_MODE`) while the branch it excludes does depend on the flag.
    Conditionals chain to the right, so `0.75 if use_grpo else 0.7 if not DEBUG_MODE else 0.5` with
    `use_grpo = True` is 0.75 whatever DEBUG_MODE says.

    ## Why it matters
    Open-Reasoner-Zero shipped exactly this: the DEBUG_MODE value of `gpu_memory_utilization` in orz_7b_grpo.py was
    unreachable, so debug runs on 8 GPUs used 0.75 and ran out of memory (issue #6, fixed in commit 8fe8ab1).

    ## Example
    ```python
    use_grpo: bool = True
    gpu_memory_utilization: float = 0.75 if use_grpo else 0.7 if not DEBUG_MODE else 0.5
    ```

    ## Fix
    Write the flag test where it is meant to apply, e.g. `0.75 if not DEBUG_MODE else 0.5`.

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/issues/6
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/commit/8fe8ab1
    """
    from rlhf_lint.fixers.python import node_span

    for config in _configs(ctx):
        for dead in config.dead_branches:
            span = node_span(ctx.source, dead.dead)
            where = f"{dead.field}: " if dead.field else ""
            flags = ", ".join(sorted(dead.flags))
            yield Finding(span, f"{where}this branch depends on {flags} but is never taken: the test "
                                f"`{dead.test_text}` is always {dead.test_value}")


@rule("Z007", "orz-unknown-override", Severity.ERROR, kinds=(), scope="job", frameworks=("orz",))
def unknown_override(ctx):
    """A launch command overrides `exp.<field>` for a field the ORZ config does not have.

    ## What it does
    Checks the `exp.<field>=value` words after `python -m playground.<config>` against the fields of the config
    class (its own and inherited ones).

    ## Why it matters
    ORZ's `BaseExp.set_cfg` raises `ValueError("Attribute ... is not found")` for an override of a missing field,
    after the Ray cluster has started.

    ## Example
    ```bash
    python -m playground.orz_7b_ppo exp.gpu_memory_utilisation=0.6
    ```

    ## Fix
    Correct the field name (the message suggests the closest field).

    ## References
    https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a0/orz/exps/base_exp.py#L31
    """
    job = ctx.job
    if job is None or job.framework != "orz":
        return
    for override, message in getattr(job, "unknown_overrides", ()):
        yield Finding(override.key_span or override.span, message, path=override.path)
