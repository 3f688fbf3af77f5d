"""O: OpenRLHF launch commands, checked against the argparse and post-parse checks of the release they target.

Every rule reads ``rlhf_lint.frameworks.openrlhf.analyze`` (the command as argparse of that release reads it); the release, and
why it was chosen (configuration, a requirements pin, or the flags themselves), is named in each message.
"""
from __future__ import annotations


from rlhf_lint.model import UNKNOWN, Applicability, Edit, Finding, Fix, Related, Severity, Span
from rlhf_lint.engine.registry import rule

SHELL = {"shell"}


# -- helpers -------------------------------------------------------------------------------------------------------
def _commands(ctx):
    """Commands written in this file (a sourced file's own commands are reported when it is checked itself)."""
    from rlhf_lint.frameworks.launchers import commands_of  # the shell reader's accessor, cached on the source

    return [c for c in commands_of(ctx.source, ctx.project) if c.path == ctx.source.path]


def _invocations(ctx, clis=None, missing_module=False):
    """OpenRLHF invocations of the file; those whose module the release lacks only when asked (its flags are moot)."""
    from rlhf_lint.frameworks.openrlhf import analyze, is_openrlhf

    for command in _commands(ctx):
        if is_openrlhf(command, ctx.project):
            inv = analyze(command, ctx.source, ctx.project)
            if not inv.module_ok and not missing_module:
                continue
            if clis is None or inv.cli in clis:
                yield inv


def _k():
    from rlhf_lint.frameworks.openrlhf import knowledge

    return knowledge()


def _literal_at(source, span: Span, expected: str) -> bool:
    """Whether the file holds exactly this text there (a fix must not edit what a variable expanded to)."""
    return source is not None and source.text[span.start : span.end] == expected


def _num(inv, name):
    value = inv.get(name)
    if isinstance(value, bool) or value is UNKNOWN:
        return None
    return value if isinstance(value, (int, float)) else None


def _on(inv, name) -> bool | None:
    value = inv.get(name)
    if value is UNKNOWN:
        return None
    return bool(value)


def _flag_of(inv, name) -> str:
    """How the targeted release spells the flag of a canonical name (``--zero_stage`` or ``--ds.zero_stage``)."""
    k = _k()
    for flag in k.flags_at(inv.cli, inv.tag):
        if name in k.canonical(inv.cli, flag):
            return flag
    return "--" + name


def _where(inv, *names):
    """The span of the first given flag among names (else the entry module), and the others as related spans."""
    spans = [(n, inv.span_of(n)) for n in names]
    given = [(n, s) for n, s in spans if s is not None]
    if not given:
        return inv.entry_span or inv.command.span, ()
    first = given[0][1]
    related = tuple(Related(inv.path, s, f"{_flag_of(inv, n)} is set here") for n, s in given[1:])
    return first, related


def _value_text(inv, name) -> str:
    v = inv.values.get(name)
    if v is None:
        return "unset"
    shown = v.value
    if isinstance(shown, bool):
        shown = "on" if shown else "off"
    return f"{shown}" + (" (default)" if v.is_default else "")


def _world(inv, role):
    nodes, gpus = _num(inv, f"{role}.num_nodes"), _num(inv, f"{role}.num_gpus_per_node")
    if nodes is None or gpus is None:
        return None
    return int(nodes) * int(gpus)


def _remote_reward(inv) -> bool | None:
    remote, agent = inv.get("reward.remote_url"), inv.get("train.agent_func_path")
    if remote is UNKNOWN or agent is UNKNOWN:
        return None
    return bool(remote) or bool(agent)


# -- flags ----------------------------------------------------------------------------------------------------------
@rule("O001", "unknown-flag", Severity.ERROR, kinds=SHELL, fixable=True)
def unknown_flag(ctx):
    """A flag that the targeted OpenRLHF release does not define: argparse exits before anything starts.

    ## What it does
    Reads every flag of an `openrlhf.cli.*` command against the argparse parser of the OpenRLHF release the script
    targets (the `openrlhf-version` setting, else an `openrlhf==` pin in the project's requirements, else the
    newest release that accepts the flags used) and reports each flag that parser does not know. The message
    names the closest valid flag, the releases that did accept the flag, and a rename when there was one.

    ## Why it matters
    OpenRLHF renamed flags many times (`--flash_attn` → `--attn_implementation` in v0.8.10, `--bf16` →
    `--param_dtype` in v0.9.2) and moved every flag into a dotted namespace in v0.10.2 (`--zero_stage` →
    `--ds.zero_stage`) without aliases. A script written for one release fails with `unrecognized arguments`
    on another, often after a cluster allocation and a container pull.

    ## Example
    ```bash
    # with openrlhf==0.11.0 pinned
    python3 -m openrlhf.cli.train_ppo_ray --zero_stage 3 ...
    ```

    ## Fix
    A one-to-one rename is fixed safely in the direction of the targeted release (`--zero_stage` →
    `--ds.zero_stage` for v0.10.2 and later, the reverse for older releases). Other flags need a person: the
    message names the closest valid flag.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/commit/ed62d0e2
    - https://github.com/OpenRLHF/OpenRLHF/compare/v0.8.9.post1...v0.8.10
    - https://github.com/OpenRLHF/OpenRLHF/compare/v0.9.1.post1...v0.9.2
    """
    k = _k()
    for inv in _invocations(ctx):
        valid = k.flags_at(inv.cli, inv.tag)
        for use in inv.uses:
            if use.match != "unknown":
                continue
            yield _unknown_flag_finding(ctx, inv, use, valid, k)


def _unknown_flag_finding(ctx, inv, use, valid, k):
    flag = use.written
    parts = [f"`{flag}` is not a flag of {inv.cli} in {inv.release_phrase}: argparse exits with "
             f"'unrecognized arguments'"]
    fix = None
    rename = _rename_for(inv, flag, valid, k)
    if rename is not None:
        new_words, applicability, note = rename
        if new_words:
            parts.append(f"{note}: use `{' '.join(new_words)}`")
            if applicability != "display" and _literal_at(ctx.source, use.flag_span, flag):
                fix = Fix(f"replace `{flag}` with `{' '.join(new_words)}`",
                          (Edit.replace(use.flag_span, " ".join(new_words)),),
                          Applicability.SAFE if applicability == "safe" else Applicability.UNSAFE)
        else:
            parts.append(note)
    else:
        import difflib  # only for unknown flags: difflib costs ~1 ms of every start

        close = difflib.get_close_matches(flag, list(valid), n=1, cutoff=0.6)
        if close:
            parts.append(f"did you mean `{close[0]}`?")
    accepted = k.releases_accepting(inv.cli, flag)
    if accepted:
        parts.append(f"`{flag}` was accepted by {k.describe_ranges(accepted)}")
    return Finding(use.flag_span, "; ".join(parts), fix=fix)


def _rename_for(inv, flag, valid, k):
    """(replacement words, applicability, note) when the flag was renamed in the direction of the target."""
    for row in k.renames_of(inv.cli, flag):
        if inv.tag > k.index(row["last_old"]):
            words = row["new"]
            if words and not all(w in valid for w in words if w.startswith("--")):
                continue
            return words, row["applicability"], f"renamed after {row['last_old']} ({row['note']})"
    reverse = k.reverse_rename(inv.cli, flag)
    if reverse is not None and inv.tag <= k.index(reverse["last_old"]) and reverse["old"] in valid:
        return [reverse["old"]], "safe", (f"`{flag}` only exists from v0.10.2; releases up to "
                                          f"{reverse['last_old']} call it `{reverse['old']}`")
    return None


@rule("O002", "unknown-module", Severity.ERROR, kinds=SHELL)
def unknown_module(ctx):
    """The OpenRLHF entry module does not exist in the targeted release.

    ## What it does
    Checks `python -m openrlhf.cli.X` / `deepspeed --module openrlhf.cli.X` against the modules each release ships:
    `openrlhf.cli.train_ppo` was removed after v0.6.1.post1; KTO, KD, PRM, batch_inference and interactive_chat after
    v0.9.5; before v0.3.6 OpenRLHF ran `examples/train_*.py` scripts instead of modules.

    ## Why it matters
    Python stops with `No module named ...` on every rank after the launcher has started them all.

    ## Example
    `deepspeed --module openrlhf.cli.train_kto ...` with `openrlhf==0.10.0` pinned.

    ## Fix
    Pin a release that has the module, or move to its successor (`train_ppo_ray` for `train_ppo`).

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/pull/882
    - https://github.com/OpenRLHF/OpenRLHF/commit/6a981c8c
    - https://github.com/OpenRLHF/OpenRLHF/issues/846
    """
    k = _k()
    for inv in _invocations(ctx, missing_module=True):
        if inv.module_ok:
            continue
        span = inv.entry_span or inv.command.span
        if not inv.module_lifetime:
            import difflib

            names = sorted({m["entry"] for m in k.modules if m["kind"] == "module"})
            close = difflib.get_close_matches(inv.entry, names, n=1, cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            yield Finding(span, f"no OpenRLHF release has a module `{inv.entry}`{hint}")
        else:
            yield Finding(span, f"`{inv.entry}` does not exist in {inv.release_phrase}; it exists in "
                                f"{inv.module_lifetime}")


@rule("O003", "invalid-flag-value", Severity.ERROR, kinds=SHELL)
def invalid_flag_value(ctx):
    """A flag value that argparse of the targeted release rejects: not an int, not a float, or not a valid choice.

    ## What it does
    Applies each flag's `type` (int, float) and `choices` the way argparse does, on values the linter can
    resolve (a literal, or a shell variable with a known value).

    ## Why it matters
    `--ds.param_dtype fp32` or `--zero_stage two` stop the launch with `invalid choice` / `invalid int value`.
    Inside a `read -r -d '' cmd <<EOF` heredoc, quotes are not removed, so `--param_dtype "bf16"` passes the
    six characters `"bf16"` and is rejected as well.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --ds.param_dtype fp32 ...
    ```

    ## Fix
    Use one of the listed choices or a number; remove quotes inside heredoc command bodies.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py
    - https://docs.python.org/3/library/argparse.html#choices
    """
    from rlhf_lint.frameworks.openrlhf import convert

    for inv in _invocations(ctx):
        for use in inv.uses:
            if use.spec is None or use.spec.is_switch:
                continue
            for word in use.values:
                if not word.known:
                    continue
                _, error = convert(use.spec, word.text)
                if error is None:
                    continue
                note = ""
                if getattr(word, "literal_quotes", False) and any(q in word.text for q in "\"'"):
                    note = " (the quotes are part of the value: bash does not remove quotes from an expanded variable)"
                yield Finding(word.span, f"{use.spec.flag}: {error}{note} ({inv.about_version})")


@rule("O004", "switch-given-value", Severity.ERROR, kinds=SHELL, fixable=True)
def switch_given_value(ctx):
    """A value after an on/off switch (`--ds.packing_samples true`): argparse rejects the stray word.

    ## What it does
    OpenRLHF's booleans are `store_true` switches that take no value. A word after one (`true`, `1`,
    `False`) is a stray positional argument and argparse exits with `unrecognized arguments`; `--flag=true`
    exits with `ignored explicit argument`.

    ## Why it matters
    The launch fails; and `--flag false` would not have meant off even if it were accepted.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --ds.packing_samples true ...
    ```

    ## Fix
    A `true`/`1`/`yes` value is removed (safe: the switch alone means on). For `false`/`0`/`no`, an unsafe fix
    removes the switch with its value (off is the default).

    ## References
    - https://docs.python.org/3/library/argparse.html#action
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py
    """
    for inv in _invocations(ctx):
        for use in inv.uses:
            if use.spec is None or not use.spec.is_switch:
                continue
            word = use.values[0] if use.explicit and use.values else (use.extra[0] if use.extra else None)
            if word is None:
                continue
            text = word.text if word.known else "<unknown>"
            fix = None
            if word.known and text.lower() in ("true", "1", "yes", "on"):
                start = use.flag_span.end
                between = ctx.source.text[start : word.span.start] if ctx.source is not None else ""
                if between in ("=", " ", "\t") or (between and between.strip(" \t") == ""):
                    fix = Fix(f"remove the value `{text}` of the switch {use.spec.flag}",
                              (Edit.delete(Span(start, word.span.end)),), Applicability.SAFE)
            meaning = "off" if word.known and text.lower() in ("false", "0", "no", "off") else "on"
            if meaning == "off" and not use.explicit and use.spec.action == "store_true" \
                    and use.spec.default is False and _literal_at(ctx.source, use.flag_span, use.written) \
                    and all(w.path == inv.path for w in use.arg.values):
                from rlhf_lint.fixers.shell import remove_flag

                edits = remove_flag(ctx.source.text, inv.command, use.arg)
                if edits:
                    fix = Fix(f"remove the switch {use.spec.flag} (off is its default)", edits, Applicability.UNSAFE)
            message = (f"{use.spec.flag} is a switch and takes no value; argparse exits on `{text}` "
                       f"({inv.about_version})")
            if meaning == "off":
                message += "; to turn it off, leave the switch out"
            yield Finding(word.span, message, fix=fix)


@rule("O005", "wrong-value-count", Severity.ERROR, kinds=SHELL)
def wrong_value_count(ctx):
    """A flag with too few values, or words argparse does not consume.

    ## What it does
    Counts the words after each flag the way argparse does: one for a plain option, exactly two for
    `nargs=2` options (`--actor.eps_clip_low_high 0.2 0.28`, `--reward.clip_range -10 10`), any number for
    `nargs="*"` (`--ds.lora.target_modules`). A missing value, or words left over (OpenRLHF's CLIs take no
    positional arguments), stop the launch. Words whose count the linter cannot know (`$EXTRA`) are not judged.

    ## Why it matters
    A value that went missing (an unset variable, a lost line) makes argparse exit with `expected one argument`
    or `unrecognized arguments` on every rank.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --actor.eps_clip_low_high 0.2 --rollout.batch_size 128
    ```

    ## Fix
    Give every option its values; quote values with spaces.

    ## References
    - https://docs.python.org/3/library/argparse.html#nargs
    """
    for inv in _invocations(ctx):
        for word in inv.stray:
            if word.known:
                yield Finding(word.span, f"`{word.text}` is not an option of {inv.cli}: argparse exits with "
                                         f"'unrecognized arguments' ({inv.about_version})")
        for use in inv.uses:
            spec = use.spec
            if spec is None or spec.is_switch or not use.count_known:
                continue
            need = 1 if spec.nargs is None else spec.nargs
            if spec.nargs in ("*", "?"):
                need = 0
            elif spec.nargs == "+":
                need = 1
            if len(use.values) < need:
                what = "one argument" if need == 1 else f"{need} arguments"
                yield Finding(use.flag_span, f"{spec.flag} expects {what}, got {len(use.values)} "
                                             f"({inv.about_version})")
            elif use.extra:
                extra = " ".join(w.text for w in use.extra if w.known)
                yield Finding(use.extra[0].span, f"{spec.flag} takes {need} value(s); argparse exits with "
                                                 f"'unrecognized arguments: {extra}' ({inv.about_version})")


@rule("O006", "mixed-flag-eras", Severity.ERROR, kinds=SHELL)
def mixed_flag_eras(ctx):
    """A command mixes pre-v0.10.2 flat flags with v0.10.2+ dotted flags: no OpenRLHF release accepts both.

    ## What it does
    Counts flat flags that v0.10.2 renamed (`--zero_stage`) and dotted flags (`--ds.zero_stage`) in one command.

    ## Why it matters
    v0.10.2 replaced every flat flag with a dotted one and kept no aliases, so a half-migrated script fails
    with `unrecognized arguments` on every release. Unknown-flag (O001) reports and fixes each flag; this rule
    names the cause once.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --ds.zero_stage 3 --vllm_num_engines 4
    ```

    ## Fix
    Migrate the remaining flags (O001 fixes one-to-one renames) and pin the release you migrated to.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/commit/ed62d0e2
    """
    k = _k()
    for inv in _invocations(ctx):
        flat, dotted = [], []
        for use in inv.uses:
            if "." in use.written[2:]:
                dotted.append(use)
            elif any(r["dotted"] and r["new"] for r in k.renames_of(inv.cli, use.written)):
                flat.append(use)
        if flat and dotted:
            minority = flat if inv.tag >= k.index("v0.10.2") else dotted
            yield Finding(minority[0].flag_span,
                          f"this command mixes {len(flat)} flat flag(s) of OpenRLHF <= v0.10.1.post2 (e.g. "
                          f"`{flat[0].written}`) with {len(dotted)} dotted flag(s) of v0.10.2+ (e.g. "
                          f"`{dotted[0].written}`); no release accepts both ({inv.about_version})")


@rule("O007", "ambiguous-flag", Severity.ERROR, kinds=SHELL)
def ambiguous_flag(ctx):
    """An abbreviated flag that matches several flags of the targeted release: argparse exits.

    ## What it does
    argparse accepts a unique prefix of a flag (`--vllm.gpu_mem`), and exits with `ambiguous option` when the
    prefix matches more than one flag.

    ## Why it matters
    The launch fails; an abbreviation that was unique can become ambiguous when a release adds flags.

    ## Example
    `--actor.eps` matches `--actor.eps_clip` and `--actor.eps_clip_low_high` in v0.11.0.

    ## Fix
    Write the flag in full.

    ## References
    - https://docs.python.org/3/library/argparse.html#allow-abbrev
    """
    for inv in _invocations(ctx):
        for use in inv.uses:
            if use.match == "ambiguous":
                shown = ", ".join(use.candidates[:6]) + (" ..." if len(use.candidates) > 6 else "")
                yield Finding(use.flag_span, f"`{use.written}` is ambiguous in {inv.release_phrase}: it could be "
                                             f"{shown}")


@rule("O008", "abbreviated-flag", Severity.WARNING, kinds=SHELL, fixable=True)
def abbreviated_flag(ctx):
    """A flag written as an abbreviation that argparse expands today but may not tomorrow.

    ## What it does
    Reports flags that match a longer flag only by prefix (argparse `allow_abbrev`), with a safe fix that writes
    the flag in full.

    ## Why it matters
    The next release that adds a flag with the same prefix turns the abbreviation into an `ambiguous option`
    error; a full flag also greps and reads better.

    ## Example
    `--vllm.gpu_mem 0.5` is `--vllm.gpu_memory_utilization 0.5`.

    ## Fix
    Replaced with the full flag (safe).

    ## References
    - https://docs.python.org/3/library/argparse.html#allow-abbrev
    """
    for inv in _invocations(ctx):
        for use in inv.uses:
            if use.match != "prefix":
                continue
            full = use.spec.flag
            fix = None
            if _literal_at(ctx.source, use.flag_span, use.written):
                fix = Fix(f"write `{full}` in full", (Edit.replace(use.flag_span, full),), Applicability.SAFE)
            yield Finding(use.flag_span, f"`{use.written}` is an abbreviation of `{full}` ({inv.about_version})",
                          fix=fix)


# -- post-parse checks of train_ppo_ray --------------------------------------------------------------------------------
PPO = {"train_ppo_ray"}


@rule("O010", "colocated-groups-differ", Severity.ERROR, kinds=SHELL)
def colocated_groups_differ(ctx):
    """Colocated model groups with different node or GPU counts: OpenRLHF asserts they are equal.

    ## What it does
    With `--train.colocate_actor_ref` (or `--train.colocate_all`) the actor and reference model share one
    placement group, so their `num_nodes` and `num_gpus_per_node` must match (when a reference model is built:
    `--algo.kl.init_coef > 0`, from v0.6.1). With `--train.colocate_critic_reward` the critic and reward model
    must match. Defaults of the targeted release count (1 node; 8 GPUs per node since v0.2.6).

    ## Why it matters
    The assertion fires after Ray is up, so the allocation is spent for nothing.

    ## Example
    ```bash
    --actor.num_gpus_per_node 4 --train.colocate_actor_ref   # ref keeps the default 8
    ```

    ## Fix
    Give both roles the same `num_nodes` and `num_gpus_per_node`.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L41-L46
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L109-L113
    """
    from rlhf_lint.frameworks.openrlhf import critic_in_use

    k = _k()
    for inv in _invocations(ctx, PPO):
        row = k.check_applies("colocate_actor_ref_same_gpus", inv.tag)
        if row is not None and (_on(inv, "train.colocate_actor_ref") or _on(inv, "train.colocate_all")):
            kl = _num(inv, "algo.kl.init_coef")
            needs_kl = row["params"].get("needs_kl")
            ref_built = not (needs_kl and inv.tag >= k.index(needs_kl)) or kl is None or kl > 0
            if ref_built and inv.get("algo.kl.init_coef") is not UNKNOWN:
                yield from _same_topology(inv, "actor", "ref", "the actor and reference model are colocated")
        row = k.check_applies("colocate_critic_reward_same_gpus", inv.tag)
        if row is not None and _on(inv, "train.colocate_critic_reward") and critic_in_use(inv) \
                and inv.get("reward.model_name_or_path"):
            yield from _same_topology(inv, "critic", "reward", "the critic and reward model are colocated")


def _same_topology(inv, a, b, why):
    for part in ("num_nodes", "num_gpus_per_node"):
        va, vb = _num(inv, f"{a}.{part}"), _num(inv, f"{b}.{part}")
        if va is None or vb is None or va == vb:
            continue
        span, related = _where(inv, f"{a}.{part}", f"{b}.{part}", "train.colocate_actor_ref", "train.colocate_all",
                               "train.colocate_critic_reward")
        yield Finding(span, f"{why}, so {a} and {b} need the same {part}: {a} has {_value_text(inv, f'{a}.{part}')}, "
                            f"{b} has {_value_text(inv, f'{b}.{part}')}; OpenRLHF asserts this at start-up "
                            f"({inv.about_version})", related=related)


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
            yield Finding(span, f"colocate_all puts one vLLM worker on every actor GPU: {engines} engine(s) × tensor "
                                f"parallel {tp} = {engines * tp} GPUs, but the actor has {actor} "
                                f"({inv.about_version})", fix=fix, related=related)


@rule("O012", "rollout-batches-below-actors", Severity.ERROR, kinds=SHELL)
def rollout_batches_below_actors(ctx):
    """Fewer rollout micro-batches than actor processes: OpenRLHF asserts every actor gets one (v0.7.2+).

    ## What it does
    Checks `n_samples_per_prompt × rollout.batch_size // rollout.micro_batch_size >=
    actor.num_nodes × actor.num_gpus_per_node // ds.ring_attn_size // ds.tensor_parallel_size`.

    ## Why it matters
    The assertion "The number of sample batches must be greater than or equal to the effective number of actor
    processes" fires at start-up.

    ## Example
    `--rollout.batch_size 4 --rollout.micro_batch_size 4` with 8 actor GPUs.

    ## Fix
    Raise the rollout batch or lower the rollout micro batch.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L711-L717
    - https://github.com/OpenRLHF/OpenRLHF/issues/431
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        if k.check_applies("sample_batches_cover_actors", inv.tag) is None:
            continue
        n, rb, mrb = (_num(inv, "rollout.n_samples_per_prompt"), _num(inv, "rollout.batch_size"),
                      _num(inv, "rollout.micro_batch_size"))
        ring, tp, actor = _num(inv, "ds.ring_attn_size") or 1, _num(inv, "ds.tensor_parallel_size") or 1, _world(inv, "actor")
        if None in (n, rb, mrb, actor) or mrb <= 0:
            continue
        batches = int(n) * int(rb) // int(mrb)
        processes = int(actor) // int(ring) // int(tp)
        if batches < processes:
            span, related = _where(inv, "rollout.batch_size", "rollout.micro_batch_size", "rollout.n_samples_per_prompt",
                                   "actor.num_gpus_per_node", "actor.num_nodes")
            yield Finding(span, f"{n} sample(s) per prompt × rollout batch {rb} // rollout micro batch {mrb} = {batches} "
                                f"micro-batches, fewer than the {processes} actor processes; OpenRLHF asserts at "
                                f"start-up ({inv.about_version})", related=related)


@rule("O013", "estimator-needs-samples", Severity.ERROR, kinds=SHELL)
def estimator_needs_samples(ctx):
    """A group-baseline estimator or dynamic filtering with one sample per prompt: OpenRLHF asserts n > 1.

    ## What it does
    `rloo` (from v0.5.3), `reinforce_baseline` and `group_norm` (GRPO, from v0.6.0) and `dr_grpo` (v0.11.0)
    compare samples of the same prompt, and dynamic filtering (v0.8.1+) filters on them: each needs
    `--rollout.n_samples_per_prompt > 1`, whose default is 1.

    ## Why it matters
    The assertion fires at start-up; with one sample the group baseline would be the sample itself.

    ## Example
    `--algo.advantage.estimator group_norm` without `--rollout.n_samples_per_prompt`.

    ## Fix
    Set `--rollout.n_samples_per_prompt` to the group size (e.g. 8).

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L612-L615
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L707-L709
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        n = _num(inv, "rollout.n_samples_per_prompt")
        if n is None or n > 1:
            continue
        row = k.check_applies("estimator_needs_samples", inv.tag)
        estimator = inv.get("algo.advantage.estimator")
        if row is not None and isinstance(estimator, str) and estimator in row["params"]["estimators"]:
            span, related = _where(inv, "rollout.n_samples_per_prompt", "algo.advantage.estimator")
            yield Finding(span, f"estimator {estimator} needs more than one sample per prompt, but "
                                f"n_samples_per_prompt is {_value_text(inv, 'rollout.n_samples_per_prompt')} "
                                f"({inv.about_version})", related=related)
        if k.check_applies("dynamic_filtering", inv.tag) is not None and _on(inv, "algo.dynamic_filtering_enable"):
            span, related = _where(inv, "rollout.n_samples_per_prompt", "algo.dynamic_filtering_enable")
            yield Finding(span, f"dynamic filtering needs more than one sample per prompt, but n_samples_per_prompt "
                                f"is {_value_text(inv, 'rollout.n_samples_per_prompt')} ({inv.about_version})",
                          related=related)


@rule("O014", "packing-without-vllm", Severity.ERROR, kinds=SHELL)
def packing_without_vllm(ctx):
    """Sample packing in train_ppo_ray without vLLM engines: OpenRLHF refuses to start.

    ## What it does
    `--ds.packing_samples` (also switched on by `--ds.ring_attn_size > 1` and by dynamic batching) requires
    `--vllm.num_engines > 0` (v0.4.4+). With the engine count left at its default `None` the check itself
    fails with a `TypeError` instead of its message.

    ## Why it matters
    The job dies at start-up with an unhelpful error.

    ## Example
    `--ds.packing_samples` without `--vllm.num_engines`.

    ## Fix
    Add vLLM engines or drop packing.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L655-L661
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        if k.check_applies("packing_needs_vllm", inv.tag) is None:
            continue
        reason = _packing_reason(inv, k)
        if reason is None:
            continue
        engines = inv.get("vllm.num_engines")
        if engines is UNKNOWN or (isinstance(engines, int) and engines > 0):
            continue
        name, why = reason
        span, related = _where(inv, name, "vllm.num_engines")
        shown = "unset (None)" if engines is None else str(engines)
        yield Finding(span, f"{why} needs vLLM engines in train_ppo_ray, but vllm.num_engines is {shown} "
                            f"({inv.about_version})", related=related)


def _packing_reason(inv, k):
    if _on(inv, "ds.packing_samples"):
        return "ds.packing_samples", "sample packing"
    ring = _num(inv, "ds.ring_attn_size")
    if ring is not None and ring > 1 and k.check_applies("ring_attention_forces_packing", inv.tag):
        return "ds.ring_attn_size", "ring attention (which turns on sample packing)"
    if _on(inv, "train.dynamic_batch_enable") and k.check_applies("dynamic_batch_forces_packing", inv.tag):
        return "train.dynamic_batch_enable", "dynamic batching (which turns on sample packing)"
    return None


@rule("O015", "critic-without-model", Severity.ERROR, kinds=SHELL)
def critic_without_model(ctx):
    """GAE (the default estimator) with neither a reward model, a remote reward nor a critic: start-up crashes.

    ## What it does
    With GAE, OpenRLHF initialises the critic from the first `--reward.model_name_or_path` when no critic path is
    given (or from the actor when a remote reward is used). With none of them set, it calls `.split` on `None`
    and stops with `AttributeError` (v0.3.2+).

    ## Why it matters
    A GRPO-style script that forgot `--algo.advantage.estimator` runs GAE by default and crashes this way.

    ## Example
    `python3 -m openrlhf.cli.train_ppo_ray --actor.model_name_or_path M --data.prompt_dataset D`.

    ## Fix
    Choose the estimator you meant (`group_norm`, `reinforce_baseline`, ...) or give a reward model / remote
    reward / critic.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L600-L606
    """
    from rlhf_lint.frameworks.openrlhf import critic_in_use

    k = _k()
    for inv in _invocations(ctx, PPO):
        if k.check_applies("critic_from_reward", inv.tag) is None or critic_in_use(inv) is not True:
            continue
        critic, reward, remote = (inv.get("critic.model_name_or_path"), inv.get("reward.model_name_or_path"),
                                  _remote_reward(inv))
        if critic is UNKNOWN or reward is UNKNOWN or remote is None:
            continue
        if not critic and not reward and not remote:
            span, related = _where(inv, "algo.advantage.estimator")
            yield Finding(span, f"the estimator is {_value_text(inv, 'algo.advantage.estimator')}: GAE trains a critic "
                                f"initialised from the reward model, but no reward model, remote reward or critic is "
                                f"given, so OpenRLHF fails with AttributeError ({inv.about_version})", related=related)


@rule("O016", "async-conflict", Severity.ERROR, kinds=SHELL)
def async_conflict(ctx):
    """Options that require, or forbid, asynchronous training (`--train.async_enable`).

    ## What it does
    OpenRLHF asserts: async training cannot use `--vllm.enable_sleep` (v0.8.0+); `--train.partial_rollout_enable`
    requires async (v0.9.7+); `--rollout.vllm_generate_batch_size` larger than `--rollout.batch_size` requires
    async (v0.10.0+).

    ## Why it matters
    Each is an assertion at start-up.

    ## Example
    `--train.async_enable --vllm.enable_sleep`.

    ## Fix
    Drop the conflicting option or switch async training on/off accordingly.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L670-L698
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        is_async = _on(inv, "train.async_enable")
        if is_async is None:
            continue
        if is_async and k.check_applies("async_forbids_vllm_sleep", inv.tag) and _on(inv, "vllm.enable_sleep"):
            span, related = _where(inv, "vllm.enable_sleep", "train.async_enable")
            yield Finding(span, f"async training does not support vLLM sleep mode; OpenRLHF asserts at start-up "
                                f"({inv.about_version})", related=related)
        if not is_async and k.check_applies("partial_rollout_needs_async", inv.tag) \
                and _on(inv, "train.partial_rollout_enable"):
            span, related = _where(inv, "train.partial_rollout_enable")
            yield Finding(span, f"partial rollout requires async training ({_flag_of(inv, 'train.async_enable')}) "
                                f"({inv.about_version})", related=related)
        if not is_async and k.check_applies("generate_batch_over_rollout_needs_async", inv.tag):
            gen, rb = _num(inv, "rollout.vllm_generate_batch_size"), _num(inv, "rollout.batch_size")
            if gen is not None and rb is not None and gen > rb:
                span, related = _where(inv, "rollout.vllm_generate_batch_size", "rollout.batch_size")
                yield Finding(span, f"a vLLM generate batch ({gen}) larger than the rollout batch ({rb}) requires "
                                    f"async training ({inv.about_version})", related=related)


@rule("O017", "remote-reward-required", Severity.ERROR, kinds=SHELL)
def remote_reward_required(ctx):
    """Evaluation or dynamic filtering without a remote reward (or agent function): OpenRLHF asserts.

    ## What it does
    `--eval.dataset` requires `--reward.remote_url` (v0.7.0..v0.10.3) or also accepts `--train.agent_func_path`
    (v0.10.4+); dynamic filtering requires one of them (v0.8.1+).

    ## Why it matters
    The assertion fires at start-up.

    ## Example
    `--eval.dataset D --reward.model_name_or_path RM`.

    ## Fix
    Serve the reward remotely (`openrlhf.cli.serve_rm`) or drop the option.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L676-L681
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L700-L706
    """
    k = _k()
    for inv in _invocations(ctx, PPO):
        remote, agent = inv.get("reward.remote_url"), inv.get("train.agent_func_path")
        if remote is UNKNOWN or agent is UNKNOWN or remote:
            continue
        row = k.check_applies("eval_needs_remote_reward", inv.tag)
        if row is not None and inv.get("eval.dataset") and not (agent and row["params"]["agent_ok"]):
            span, related = _where(inv, "eval.dataset")
            needs = "a remote reward or an agent function" if row["params"]["agent_ok"] else "a remote reward"
            yield Finding(span, f"an eval dataset needs {needs} ({inv.about_version})", related=related)
        if k.check_applies("dynamic_filtering", inv.tag) and _on(inv, "algo.dynamic_filtering_enable") and not agent:
            span, related = _where(inv, "algo.dynamic_filtering_enable")
            yield Finding(span, f"dynamic filtering needs a remote reward or an agent function ({inv.about_version})",
                          related=related)


@rule("O018", "deepspeed-batch-mismatch", Severity.ERROR, kinds=SHELL, fixable=True)
def deepspeed_batch_mismatch(ctx):
    """The train batch is not a multiple of micro batch × GPUs of a DeepSpeed group: DeepSpeed asserts.

    ## What it does
    OpenRLHF hands DeepSpeed `train_batch_size = train.batch_size × ring_attn_size × tensor_parallel_size` and
    `train_micro_batch_size_per_gpu = train.micro_batch_size`; DeepSpeed derives the accumulation steps from the
    group's world size and asserts `train_batch == micro × accumulation × world`. The check is made for the actor
    and critic groups of train_ppo_ray (and, from v0.10.2, the reference and reward groups, which get the same
    keys), and for the launcher's world size of SFT/DPO/RM. Skipped with dynamic batching.

    ## Why it matters
    "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 256 != 2 * 18 * 7"
    (issue #346) comes after every model was loaded.

    ## Example
    `--train.batch_size 128 --train.micro_batch_size 4` with 6 actor GPUs.

    ## Fix
    An unsafe fix rounds the train batch to the nearest multiple of micro batch × world size.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/issues/346
    - https://github.com/OpenRLHF/OpenRLHF/issues/397
    - https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/config.py
    """
    from rlhf_lint.frameworks.openrlhf import _generic_settings, critic_in_use

    k = _k()
    for inv in _invocations(ctx):
        if inv.cli in (None, "serve_rm", "lora_combiner", "batch_inference", "interactive_chat"):
            continue
        if k.check_applies("deepspeed_batch_divisible", inv.tag) is None or _on(inv, "train.dynamic_batch_enable"):
            continue
        b, m = _num(inv, "train.batch_size"), _num(inv, "train.micro_batch_size")
        ring, tp = _num(inv, "ds.ring_attn_size") or 1, _num(inv, "ds.tensor_parallel_size") or 1
        if b is None or m is None or m <= 0:
            continue
        groups = []
        if inv.cli in ("train_ppo_ray",):
            groups.append(("actor", _world(inv, "actor")))
            if critic_in_use(inv) and (inv.get("critic.model_name_or_path") or inv.get("reward.model_name_or_path")):
                groups.append(("critic", _world(inv, "critic")))
            if inv.tag >= k.index("v0.10.2"):
                kl = _num(inv, "algo.kl.init_coef")
                if kl is not None and kl > 0 and not _on(inv, "train.colocate_actor_ref"):
                    groups.append(("ref", _world(inv, "ref")))
                if inv.get("reward.model_name_or_path") and not _remote_reward(inv) \
                        and not _on(inv, "train.colocate_critic_reward"):
                    groups.append(("reward", _world(inv, "reward")))
        elif inv.cli == "train_ppo":
            continue
        else:
            world = _generic_settings(inv.command, ctx.source, ctx.project).value("topology.world_size")
            groups.append(("training", world if isinstance(world, int) and not isinstance(world, bool) else None))
        total = int(b) * int(ring) * int(tp)
        # the fix must satisfy every group at once, or fixing one group's batch breaks another's (no convergence)
        import math

        common = math.lcm(*(int(m) * w for _, w in groups if w is not None and w > 0)) if groups else 1
        for role, world in groups:
            if world is None or world <= 0:
                continue
            step = int(m) * world
            if total % step == 0 and total >= step:
                continue
            span, related = _where(inv, "train.batch_size", "train.micro_batch_size")
            scale = f" × ring {ring} × TP {tp}" if ring * tp > 1 else ""
            nearest = max(common, round(total / common) * common) // (int(ring) * int(tp))
            fix = None
            word = inv.values["train.batch_size"].word
            if word is not None and _literal_at(ctx.source, word.span, str(word.text)) and \
                    (nearest * int(ring) * int(tp)) % common == 0:
                fix = Fix(f"set {_flag_of(inv, 'train.batch_size')} to {nearest}", (Edit.replace(word.span, str(nearest)),),
                          Applicability.UNSAFE)
            shown = f"{b}{scale} = {total}" if scale else f"{b}"
            yield Finding(span, f"DeepSpeed needs the train batch ({shown}) to be a multiple of micro "
                                f"batch {m} × {world} GPUs of the {role} group = {step} ({inv.about_version})",
                          fix=fix, related=related)
            break


@rule("O019", "vlm-restriction", Severity.ERROR, kinds=SHELL)
def vlm_restriction(ctx):
    """Vision-language training (`--data.max_images_per_prompt > 0`) with a critic or with packing.

    ## What it does
    From v0.10.0 OpenRLHF asserts that VLM training uses no critic (choose an estimator other than GAE) and no
    sample packing.

    ## Why it matters
    The assertion fires at start-up.

    ## Example
    `--data.max_images_per_prompt 1 --ds.packing_samples`.

    ## Fix
    Use a critic-free estimator and drop packing for VLM runs.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_ppo_ray.py#L618-L627
    """
    from rlhf_lint.frameworks.openrlhf import critic_in_use

    k = _k()
    for inv in _invocations(ctx, PPO):
        images = _num(inv, "data.max_images_per_prompt")
        if k.check_applies("vlm_restrictions", inv.tag) is None or images is None or images <= 0:
            continue
        if critic_in_use(inv):
            span, related = _where(inv, "algo.advantage.estimator", "data.max_images_per_prompt")
            yield Finding(span, f"VLM training does not support a critic; the estimator is "
                                f"{_value_text(inv, 'algo.advantage.estimator')} ({inv.about_version})", related=related)
        if _on(inv, "ds.packing_samples"):
            span, related = _where(inv, "ds.packing_samples", "data.max_images_per_prompt")
            yield Finding(span, f"VLM training does not support sample packing ({inv.about_version})", related=related)


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
            yield Finding(span, f"vLLM sleep mode is switched off by OpenRLHF without colocate_all "
                                f"({inv.about_version})", related=related)
        if ppo and k.check_applies("colocate_all_async_only_deepspeed", inv.tag) and _on(inv, "train.colocate_all") \
                and _on(inv, "train.async_enable"):
            span, related = _where(inv, "train.colocate_all", "train.async_enable")
            yield Finding(span, f"with async training colocate_all only colocates the DeepSpeed models; vLLM gets its "
                                f"own GPUs ({inv.about_version})", related=related)
        if ppo and _on(inv, "ds.packing_samples") is False:
            reason = _packing_reason(inv, k)
            if reason is not None:
                span, related = _where(inv, reason[0])
                yield Finding(span, f"{reason[1]}: OpenRLHF switches sample packing on ({inv.about_version})",
                              related=related)
        packing = _on(inv, "ds.packing_samples") or (ppo and _packing_reason(inv, k) is not None)
        if packing and k.check_applies("packing_forces_flash_attention", inv.tag) and inv.cli in (
                "train_ppo_ray", "train_sft", "train_dpo", "train_rm"):
            attn = inv.get("ds.attn_implementation")
            if inv.given("ds.attn_implementation") and isinstance(attn, str) and "flash_attention" not in attn:
                span, related = _where(inv, "ds.attn_implementation", "ds.packing_samples")
                yield Finding(span, f"sample packing switches the attention implementation `{attn}` to "
                                    f"flash_attention_2 ({inv.about_version})", related=related)


@rule("O021", "legacy-topology-assert", Severity.ERROR, kinds=SHELL)
def legacy_topology_assert(ctx):
    """Topology assertions of older train_ppo_ray releases (power-of-two actors, divisibility by vLLM engines).

    ## What it does
    Applies the start-up assertions older releases made, only to scripts targeting them: actor/critic world size a
    power of two (up to v0.5.5); actor world divisible by the critic's (up to v0.7.0.post1); ZeRO-3 only with vLLM
    (v0.1.0..v0.7.0.post1); actor world >= vLLM engines (v0.4.6..v0.5.0); rollout batch divisible by the actor
    world, and actor world and engine count dividing one another (v0.5.5.post1..v0.7.0.post1).

    ## Why it matters
    These assertions confused users (issues #441, #760); later releases dropped them, so a script can be valid on
    one release and fail on the one pinned.

    ## Example
    6 actor GPUs with OpenRLHF v0.5.0.

    ## Fix
    Change the topology, or upgrade to a release without the restriction.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/issues/441
    - https://github.com/OpenRLHF/OpenRLHF/issues/760
    """
    from rlhf_lint.frameworks.openrlhf import critic_in_use

    k = _k()
    for inv in _invocations(ctx, PPO):
        actor, critic = _world(inv, "actor"), _world(inv, "critic")
        engines = _num(inv, "vllm.num_engines")
        if actor is None:
            continue
        checks = []
        if k.check_applies("actor_world_power_of_two", inv.tag):
            if actor & (actor - 1):
                checks.append((("actor.num_gpus_per_node", "actor.num_nodes"), f"the actor world size {actor} must be a power of 2"))
            if critic_in_use(inv) and critic is not None and critic & (critic - 1):
                checks.append((("critic.num_gpus_per_node", "critic.num_nodes"), f"the critic world size {critic} must be a power of 2"))
        if k.check_applies("actor_world_divisible_by_critic", inv.tag) and critic_in_use(inv) and critic and actor % critic:
            checks.append((("actor.num_gpus_per_node", "critic.num_gpus_per_node"),
                           f"the actor world size {actor} must be divisible by the critic's {critic}"))
        zero = _num(inv, "ds.zero_stage")
        if k.check_applies("zero3_needs_vllm", inv.tag) and zero == 3 and inv.get("vllm.num_engines") is not UNKNOWN \
                and not (engines and engines > 0):
            checks.append((("ds.zero_stage", "vllm.num_engines"), "ZeRO-3 is only supported with vLLM engines"))
        if engines and engines > 0:
            if k.check_applies("actor_world_at_least_engines", inv.tag) and actor < engines:
                checks.append((("vllm.num_engines",), f"the actor world size {actor} must be at least the {engines} vLLM engines"))
            if k.check_applies("actor_world_divisible_by_engines", inv.tag) and actor % engines and engines % actor:
                checks.append((("vllm.num_engines",), f"the actor world size {actor} and the {engines} vLLM engines must divide one another"))
        rb = _num(inv, "rollout.batch_size")
        if k.check_applies("rollout_batch_divisible_by_actor_world", inv.tag) and rb is not None and rb % actor:
            checks.append((("rollout.batch_size",), f"the rollout batch {rb} must be divisible by the actor world size {actor}"))
        for names, message in checks:
            span, related = _where(inv, *names)
            yield Finding(span, f"{message}; OpenRLHF asserts this at start-up ({inv.about_version})", related=related)


@rule("O022", "value-constraint", Severity.ERROR, kinds=SHELL)
def value_constraint(ctx):
    """Values OpenRLHF checks after parsing: ring attention without packing (SFT/DPO/RM), multi-turn without a chat
    template, dual clip not above 1, an inverted dynamic-filtering range.

    ## What it does
    `--ds.ring_attn_size > 1` requires `--ds.packing_samples` in train_sft/dpo/rm (v0.5.4+; train_ppo_ray switches
    it on instead); `--data.multiturn` requires `--data.apply_chat_template` (v0.5.7+); `--actor.dual_clip` must be
    above 1.0 (v0.8.6+); `--algo.dynamic_filtering_range` must be increasing (v0.8.1+).

    ## Why it matters
    Each is an assertion before or at the first step.

    ## Example
    `deepspeed --module openrlhf.cli.train_sft --ds.ring_attn_size 2`.

    ## Fix
    Add the required option or correct the value.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/cli/train_sft.py#L308-L322
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/openrlhf/models/loss.py#L147-L148
    """
    k = _k()
    for inv in _invocations(ctx):
        ring = _num(inv, "ds.ring_attn_size")
        if inv.cli in ("train_sft", "train_dpo", "train_rm") and ring and ring > 1 \
                and k.check_applies("ring_attention_needs_packing", inv.tag) and _on(inv, "ds.packing_samples") is False:
            span, related = _where(inv, "ds.ring_attn_size")
            yield Finding(span, f"ring attention needs {_flag_of(inv, 'ds.packing_samples')} in {inv.cli} "
                                f"({inv.about_version})", related=related)
        if inv.cli == "train_sft" and k.check_applies("multiturn_needs_chat_template", inv.tag) \
                and _on(inv, "data.multiturn") and _on(inv, "data.apply_chat_template") is False:
            span, related = _where(inv, "data.multiturn")
            yield Finding(span, f"multi-turn data needs {_flag_of(inv, 'data.apply_chat_template')} "
                                f"({inv.about_version})", related=related)
        if inv.cli == "train_ppo_ray":
            dual = _num(inv, "actor.dual_clip")
            if dual is not None and dual <= 1.0 and k.check_applies("dual_clip_above_one", inv.tag):
                span, related = _where(inv, "actor.dual_clip")
                yield Finding(span, f"dual clip must be above 1.0, got {dual} ({inv.about_version})", related=related)
            rng = inv.get("algo.dynamic_filtering_range")
            if _on(inv, "algo.dynamic_filtering_enable") and isinstance(rng, list) and len(rng) == 2 \
                    and all(isinstance(x, (int, float)) for x in rng) and not rng[0] < rng[1] \
                    and k.check_applies("dynamic_filtering", inv.tag):
                span, related = _where(inv, "algo.dynamic_filtering_range")
                yield Finding(span, f"the dynamic filtering range must be increasing, got {rng[0]} {rng[1]} "
                                    f"({inv.about_version})", related=related)
