"""V: verl launches: Hydra overrides of launch scripts and trainer YAML, checked the way verl checks them at start-up.

Each rule reads a verl Job (lint/verl.py): the release defaults, the repository's YAML and the overrides of the
launch command, with the exact token each value was written in.
"""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity, UNKNOWN
from rlhf_lint.engine.registry import rule

ACTOR = "actor_rollout_ref.actor"
ROLLOUT = "actor_rollout_ref.rollout"


def _cfg(ctx):
    job = ctx.job
    return getattr(job, "verl", None) if job is not None and job.framework == "verl" else None


def _where(ctx, cfg, key):
    """(path, span) of the token that sets ``key``: the override, the YAML value, or the launch command."""
    from rlhf_lint.fixers.yaml import node_span
    from rlhf_lint.frameworks.verl import Override, YamlEntry

    found = cfg.where(key)
    if isinstance(found, Override):
        return found.path, found.value_span or found.span
    if isinstance(found, YamlEntry):
        return found.path, node_span(found.node)
    return ctx.job.path, ctx.job.span


def _value_fix(cfg, key, value, message, applicability=Applicability.UNSAFE):
    """Rewrite the value of ``key`` where it is written (override token or YAML scalar); None for a default."""
    import yaml

    from rlhf_lint.fixers.yaml import replace_scalar, yaml_scalar
    from rlhf_lint.frameworks.verl import Override, YamlEntry

    found = cfg.where(key)
    if isinstance(found, Override) and found.value_span is not None:
        return Fix(message, (Edit.replace(found.value_span, yaml_scalar(value)),), applicability)
    if isinstance(found, YamlEntry) and isinstance(found.node, yaml.ScalarNode):
        return Fix(message, (replace_scalar(found.node, value),), applicability)
    return None


def _finding(ctx, cfg, key, message, fix=None, severity=None):
    path, span = _where(ctx, cfg, key)
    return Finding(span, message, fix=fix, path=path, severity=severity)


def _ints(cfg, *keys):
    values = [cfg.known_int(k) for k in keys]
    return None if any(v is None for v in values) else values


def _gpus(cfg, nodes, per_node) -> str:
    """How the GPU count was known, naming defaults the reader may not have meant."""
    defaults = [k for k in ("trainer.nnodes", "trainer.n_gpus_per_node") if cfg.where(k) is None]
    note = f" ({', '.join(defaults)} at verl's default)" if defaults else ""
    return f"{nodes * per_node} GPUs ({nodes} node(s) x {per_node}){note}"


def _fsdp(cfg) -> bool:
    return cfg.get(f"{ACTOR}.strategy") in ("fsdp", "fsdp2")


@rule("V001", "verl-unknown-key", Severity.ERROR, scope="job", frameworks=("verl",), fixable=True)
def unknown_key(ctx):
    """An override names a key the trainer config does not have, and Hydra refuses it without `+`.

    ## What it does
    Checks every `key=value` override of a `verl.trainer.main_ppo` command against the keys of verl's trainer config
    (the release given by `verl-version`, else any release) and the repository's own YAML config.

    ## Why it matters
    Hydra stops with "Could not override 'x'. Key 'x' is not in struct" before anything starts; a misspelt key in a
    long script is easy to miss, and a script written for one release breaks on another.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.gpu_memory_utilisation=0.6
    ```

    ## Fix
    When one known key is very close, the fix renames the override (unsafe: check that it is the key you meant).
    A key that is meant to be new is written `+key=value`.

    ## References
    https://hydra.cc/docs/advanced/override_grammar/basic/
    https://github.com/verl-project/verl/blob/main/docs/faq/faq.rst
    """
    cfg = _cfg(ctx)
    if cfg is None or not cfg.defaults or cfg.partial:
        return
    from rlhf_lint.frameworks.verl import close_key  # past the early return: a non-verl job need not import it (~2 ms)

    for o in cfg.overrides:
        if o.op in ("+", "++") or cfg.exists(o.key):
            continue
        if o.op == "~":
            message = f"`~{o.key}` deletes a key the config does not have"
            yield Finding(o.key_span or o.span, message, path=o.path)
            continue
        where = f"verl {cfg.release}" if cfg.exact else "any verl release"
        near = close_key(o.key, cfg.defaults)
        fix = None
        message = f"unknown key `{o.key}` (not in the trainer config of {where}): Hydra refuses it"
        if near:
            message += f"; did you mean `{near}`?"
            if o.key_span is not None:
                start = o.key_span.start + len(o.op)
                fix = Fix(f"rename to {near}", (Edit(start, o.key_span.end, near),), Applicability.UNSAFE)
        else:
            message += "; write `+" + o.key + "=...` to add a new key"
        yield Finding(o.key_span or o.span, message, fix=fix, path=o.path)


@rule("V002", "verl-append-existing-key", Severity.ERROR, scope="job", frameworks=("verl",), fixable=True)
def append_existing_key(ctx):
    """An override `+key=value` adds a key that the config already has, which Hydra refuses.

    ## What it does
    Reports `+key=value` overrides whose key exists in the trainer config (release defaults or the YAML).

    ## Why it matters
    Hydra stops with "Could not append to config. An item is already at 'key'". Scripts copied between verl
    releases hit this when a key that used to need `+` became part of the config.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo +actor_rollout_ref.rollout.n=4
    ```

    ## Fix
    Drop the `+` (safe: the value is set the same way). Use `++key=value` to set a key whether or not it exists.

    ## References
    https://hydra.cc/docs/advanced/override_grammar/basic/#modifying-the-config-object
    """
    cfg = _cfg(ctx)
    if cfg is None or not cfg.defaults or not cfg.exact or cfg.partial:
        return
    for o in cfg.overrides:
        if o.op == "+" and cfg.exists(o.key):
            fix = None
            if o.key_span is not None:
                fix = Fix("drop the +", (Edit(o.key_span.start, o.key_span.start + 1, ""),), Applicability.SAFE)
            yield Finding(o.key_span or o.span, f"`+{o.key}` appends a key verl {cfg.release} already has: Hydra "
                                                "refuses it (drop the + to set it)", fix=fix, path=o.path)


@rule("V003", "verl-batch-not-divisible-by-gpus", Severity.ERROR, scope="job", frameworks=("verl",))
def batch_not_divisible(ctx):
    """The real train batch `data.train_batch_size x rollout.n` is not a multiple of the number of GPUs.

    ## What it does
    Computes the real train batch (prompts x samples per prompt) and the GPU count
    (`trainer.nnodes x trainer.n_gpus_per_node`) and reports a remainder, for FSDP without dynamic batch size.

    ## Why it matters
    verl's `validate_config` asserts "real_train_batch_size must be divisible by minimal possible batch size";
    older releases failed later with "only support equal chunk".

    ## Example
    `data.train_batch_size=100 actor_rollout_ref.rollout.n=1 trainer.n_gpus_per_node=8`

    ## Fix
    Choose a train batch size whose product with `rollout.n` divides by the GPU count.

    ## References
    https://github.com/verl-project/verl/issues/473
    https://github.com/verl-project/verl/issues/3095
    """
    cfg = _cfg(ctx)
    if cfg is None or not _fsdp(cfg) or cfg.get(f"{ACTOR}.use_dynamic_bsz") is not False:
        return
    got = _ints(cfg, "data.train_batch_size", f"{ROLLOUT}.n", "trainer.nnodes", "trainer.n_gpus_per_node")
    if got is None:
        return
    batch, n, nodes, per_node = got
    gpus = nodes * per_node
    if gpus > 0 and (batch * n) % gpus:
        yield _finding(ctx, cfg, "data.train_batch_size",
                       f"data.train_batch_size x rollout.n = {batch} x {n} = {batch * n} is not divisible by "
                       f"{_gpus(cfg, nodes, per_node)}")


@rule("V004", "verl-mini-batch-not-divisible", Severity.ERROR, scope="job", frameworks=("verl",))
def mini_batch_not_divisible(ctx):
    """The actor's mini batch, normalised per GPU, is zero or not a multiple of its micro batch per GPU.

    ## What it does
    Repeats the FSDP worker's normalisation: `ppo_mini_batch_size x rollout.n / (GPUs / ulysses_sp)`, then checks it
    is positive and divisible by `ppo_micro_batch_size_per_gpu`. Also reports `data.train_batch_size` smaller than
    `ppo_mini_batch_size`.

    ## Why it matters
    The worker asserts these when it builds the model, after the Ray cluster and the weights are loaded; a
    normalised mini batch of 0 once sent verl's `split` into an endless loop.

    ## Example
    `actor_rollout_ref.actor.ppo_mini_batch_size=4 actor_rollout_ref.rollout.n=1 trainer.n_gpus_per_node=8`

    ## Fix
    Raise the mini batch or lower the micro batch so the normalised mini batch is a positive multiple.

    ## References
    https://github.com/verl-project/verl/pull/552
    https://github.com/verl-project/verl/pull/559
    https://github.com/verl-project/verl/issues/1524
    """
    cfg = _cfg(ctx)
    if cfg is None or not _fsdp(cfg) or cfg.get(f"{ACTOR}.use_dynamic_bsz") is not False:
        return
    got = _ints(cfg, f"{ACTOR}.ppo_mini_batch_size", f"{ROLLOUT}.n", "trainer.nnodes", "trainer.n_gpus_per_node")
    if got is None:
        return
    mini, n, nodes, per_node = got
    train = cfg.known_int("data.train_batch_size")
    if train is not None and train < mini:
        yield _finding(ctx, cfg, f"{ACTOR}.ppo_mini_batch_size",
                       f"ppo_mini_batch_size = {mini} is larger than data.train_batch_size = {train}")
    sp = cfg.known_int(f"{ACTOR}.ulysses_sequence_parallel_size") or 1
    dp = (nodes * per_node) // sp
    if dp <= 0:
        return
    normalised = mini * n // dp
    if normalised <= 0:
        yield _finding(ctx, cfg, f"{ACTOR}.ppo_mini_batch_size",
                       f"ppo_mini_batch_size x rollout.n / data-parallel GPUs = {mini} x {n} / {dp} = 0 per GPU: "
                       "verl asserts it is larger than 0")
        return
    micro = cfg.known_int(f"{ACTOR}.ppo_micro_batch_size_per_gpu")
    if micro and normalised % micro:
        yield _finding(ctx, cfg, f"{ACTOR}.ppo_micro_batch_size_per_gpu",
                       f"normalised ppo_mini_batch_size {mini} x {n} / {dp} = {normalised} per GPU is not divisible "
                       f"by ppo_micro_batch_size_per_gpu = {micro} on {_gpus(cfg, nodes, per_node)}")


_MICRO_PAIRS = [
    (f"{ACTOR}.ppo_micro_batch_size", f"{ACTOR}.ppo_micro_batch_size_per_gpu"),
    ("critic.ppo_micro_batch_size", "critic.ppo_micro_batch_size_per_gpu"),
    ("actor_rollout_ref.ref.log_prob_micro_batch_size", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"),
    (f"{ROLLOUT}.log_prob_micro_batch_size", f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu"),
    ("reward_model.micro_batch_size", "reward_model.micro_batch_size_per_gpu"),
]


@rule("V005", "verl-micro-batch-both-forms", Severity.ERROR, scope="job", frameworks=("verl",))
def micro_batch_both_forms(ctx):
    """Both the deprecated global micro batch and the per-GPU micro batch are set for the same role.

    ## What it does
    Reports `*micro_batch_size` and `*micro_batch_size_per_gpu` set together (actor, critic, reference and rollout
    log-prob, reward model), and an actor with neither when dynamic batch size is off.

    ## Why it matters
    verl raises "You have set both ... Please remove ..." (or "Please set at least one of ...") at start-up. The
    global form is deprecated; per-GPU values also avoid the host-memory blow-up seen with the old form.

    ## Example
    `actor_rollout_ref.actor.ppo_micro_batch_size=16 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2`

    ## Fix
    Keep the `_per_gpu` form and delete the other.

    ## References
    https://github.com/verl-project/verl/issues/217
    https://github.com/verl-project/verl/blob/main/verl/utils/config.py
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    for old, new in _MICRO_PAIRS:
        a, b = cfg.get(old), cfg.get(new)
        if a not in (None, UNKNOWN) and b not in (None, UNKNOWN):
            yield _finding(ctx, cfg, old, f"both {old.rsplit('.', 1)[1]} = {a} and {new.rsplit('.', 1)[1]} = {b} "
                                          f"are set for {old.rsplit('.', 1)[0]}: verl refuses both; keep the "
                                          "_per_gpu form")
    if (cfg.overrides and not cfg.partial and cfg.get(f"{ACTOR}.use_dynamic_bsz") is False
            and cfg.get(f"{ACTOR}.ppo_micro_batch_size") is None
            and cfg.get(f"{ACTOR}.ppo_micro_batch_size_per_gpu") is None):
        yield Finding(ctx.job.span, "neither actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu nor the "
                                    "deprecated ppo_micro_batch_size is set (and use_dynamic_bsz is off): verl "
                                    "asks for one", path=ctx.job.path)


@rule("V006", "verl-sequence-parallel-needs-remove-padding", Severity.ERROR, scope="job", frameworks=("verl",), fixable=True)
def sp_needs_remove_padding(ctx):
    """Ulysses sequence parallelism is on while `use_remove_padding` is off.

    ## What it does
    Reports `ulysses_sequence_parallel_size > 1` (actor or critic) with the model's `use_remove_padding` false
    (the default before verl 0.5).

    ## Why it matters
    verl's FSDP actor and critic configs assert that sequence parallelism is only supported with remove-padding.

    ## Example
    `actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 actor_rollout_ref.model.use_remove_padding=False`

    ## Fix
    Set `use_remove_padding=True` (unsafe fix: a different attention path).

    ## References
    https://github.com/verl-project/verl/blob/main/verl/workers/config/actor.py
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    for sp_key, pad_key in ((f"{ACTOR}.ulysses_sequence_parallel_size", "actor_rollout_ref.model.use_remove_padding"),
                            ("critic.ulysses_sequence_parallel_size", "critic.model.use_remove_padding")):
        sp = cfg.known_int(sp_key)
        if sp is not None and sp > 1 and cfg.get(pad_key) is False:
            fix = _value_fix(cfg, pad_key, True, f"set {pad_key}=True")
            where = pad_key if cfg.where(pad_key) is not None else sp_key
            yield _finding(ctx, cfg, where, f"{sp_key.rsplit('.', 1)[0].split('.')[-1]} sequence parallel size {sp} "
                                            f"needs {pad_key} = True", fix=fix)


@rule("V007", "verl-vllm-version-unsupported", Severity.ERROR, scope="job", frameworks=("verl",))
def vllm_version_unsupported(ctx):
    """The vLLM version is not one this verl release accepts.

    ## What it does
    With `verl-version` and `vllm-version` configured (or pinned), checks the vLLM version against the allowlist
    that verl releases up to 0.5 apply when the rollout imports vLLM (schemas/verl/vllm_support.json).

    ## Why it matters
    The job stops with "ValueError: vllm version 0.6.3.post1 not supported" once the rollout worker starts.

    ## Example
    verl 0.2.0 with vllm 0.6.4 or 0.7.3.

    ## Fix
    Pin a vLLM version the release accepts, or upgrade verl.

    ## References
    https://github.com/verl-project/verl/issues/245
    https://github.com/verl-project/verl/issues/513
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    verl_v, vllm_v = ctx.config.version("verl"), ctx.config.version("vllm")
    if not verl_v or not vllm_v:
        return
    # imported only past the early returns: packaging.specifiers costs ~25 ms of a one-file run
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    from rlhf_lint.frameworks.verl import vllm_support

    try:
        verl_version, vllm_version = Version(verl_v), Version(vllm_v)
    except InvalidVersion:
        return
    for row in vllm_support():
        if verl_version not in SpecifierSet(row["verl"]):
            continue
        if vllm_v in row["exact"] or any(vllm_v.startswith(p) for p in row["prefix"]):
            return
        if vllm_version >= Version(row["minimum"]):
            return
        yield Finding(ctx.job.span, f"verl {verl_v} refuses vllm {vllm_v} at rollout start ({row['message']})",
                      path=ctx.job.path)
        return


@rule("V008", "verl-chunked-prefill-token-budget", Severity.ERROR, scope="job", frameworks=("verl",), fixable=True)
def chunked_prefill_budget(ctx):
    """Chunked prefill is on while `max_num_batched_tokens` is below the rollout's model length.

    ## What it does
    With `rollout.enable_chunked_prefill` true, compares `rollout.max_num_batched_tokens` with `rollout.max_model_len`
    (or prompt + response length when unset). verl releases up to 0.6 raise on this; with no `verl-version`
    configured it is reported as a warning.

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
    """
    cfg = _cfg(ctx)
    if cfg is None or cfg.get(f"{ROLLOUT}.enable_chunked_prefill") is not True:
        return
    if cfg.get(f"{ROLLOUT}.name") not in ("vllm", None, UNKNOWN):
        return
    from packaging.version import InvalidVersion, Version

    severity = None
    version = ctx.config.version("verl")
    if version:
        try:
            if Version(version) >= Version("0.7.0"):
                return
        except InvalidVersion:
            return
    else:
        severity = Severity.WARNING
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
    note = "" if severity is None else " (verl <= 0.6 raises; set verl-version to know)"
    yield _finding(ctx, cfg, f"{ROLLOUT}.max_num_batched_tokens",
                   f"chunked prefill with max_num_batched_tokens = {budget} < {what}: verl's vLLM rollout "
                   f"refuses it{note}", fix=fix, severity=severity)


@rule("V009", "verl-token-budget-below-sequence", Severity.ERROR, scope="job", frameworks=("verl",))
def token_budget_below_sequence(ctx):
    """With dynamic batch size, a per-GPU token budget is smaller than one prompt plus its response.

    ## What it does
    With `use_dynamic_bsz`, compares the actor's `ppo_max_token_len_per_gpu` (and the critic's, when a critic is
    trained) with `max_prompt_length + max_response_length`; verl's guidance is at least twice that.

    ## Why it matters
    verl packs sequences up to the budget and asserts "max_token_len must be greater than the sequence length"
    when the longest sample does not fit.

    ## Example
    `data.max_response_length=16384 actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=16384`

    ## Fix
    Raise the budget to at least 2 x (prompt + response), or lower the lengths.

    ## References
    https://github.com/verl-project/verl/blob/main/verl/utils/seqlen_balancing.py
    https://github.com/verl-project/verl/blob/main/docs/perf/perf_tuning.rst
    """
    cfg = _cfg(ctx)
    if cfg is None:
        return
    lens = _ints(cfg, "data.max_prompt_length", "data.max_response_length")
    if lens is None:
        return
    seq = sum(lens)
    keys = [(f"{ACTOR}.use_dynamic_bsz", f"{ACTOR}.ppo_max_token_len_per_gpu")]
    if cfg.get("algorithm.adv_estimator") == "gae":
        keys.append(("critic.use_dynamic_bsz", "critic.ppo_max_token_len_per_gpu"))
    for flag, key in keys:
        budget = cfg.known_int(key)
        if cfg.get(flag) is True and budget is not None and budget < seq:
            yield _finding(ctx, cfg, key, f"{key.split('.')[-2]}.ppo_max_token_len_per_gpu = {budget} is below "
                                          f"max_prompt_length + max_response_length = {seq}: one sample does not "
                                          f"fit (verl recommends at least {2 * seq})")
