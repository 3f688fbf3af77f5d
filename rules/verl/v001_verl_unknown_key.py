"""V001 verl-unknown-key: an override names a key the trainer config does not have, and Hydra refuses it without `+`."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import _cfg


@rule("V001", "verl-unknown-key", Severity.ERROR, scope="job", frameworks=("verl",), fixable=True)
def verl_unknown_key(ctx):
    """An override names a key the trainer config does not have, and Hydra refuses it without `+`.

    ## What it does
    Checks every `key=value` override of a `verl.trainer.main_ppo` command against the keys of verl's trainer config
    (the release given by `verl-version`, else a `verl==` pin, else any release) and the repository's own YAML config.
    A recipe launch (`python -m recipe.dapo.main_dapo`) is checked against the trainer config plus the recipe's own
    config: the repository's file when it is among the checked files, else the recipe of the targeted release
    (schemas/verl/recipes.json; a warning when only another release's recipe is known).
    An error only when the targeted release is within the table; with no release known, or one newer than the
    newest release the table covers, the finding is a warning that says so and offers no rename. With no release
    known, a key that only releases before the newest have (a removed key) is a warning too.
    `model_engine=megatron` (verl 0.8 on) selects the Megatron trainer's keys; a `model_engine` choice the release
    lacks is an error. Hydra's own settings (`hydra.searchpath=...`) are not keys, and the keys of a package that a
    config-group override swaps in from another file (`actor@actor_rollout_ref.actor=my_actor`, or an engine such
    as `model_engine=veomni`) are not checked: that file is not read. Words the launch forwards unread (`"$@"`)
    may change values but cannot make a key exist; a key only the Megatron config has is then a warning, since they
    may select it.

    ## Why it matters
    Hydra stops with "Could not override 'x'. Key 'x' is not in struct" before anything starts; a misspelt key in a
    long script is easy to miss, and a script written for one release breaks on another.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.gpu_memory_utilisation=0.6
    ```

    ## Fix
    When one known key is very close and the targeted release is known to the table, the fix renames the override
    (unsafe: check that it is the key you meant).
    A key that is meant to be new is written `+key=value`.

    ## References
    https://hydra.cc/docs/advanced/override_grammar/basic/
    https://github.com/verl-project/verl/blob/main/docs/faq/faq.rst
    """
    cfg = _cfg(ctx)
    if cfg is None or not cfg.defaults:
        return
    yield from _model_engine_choice(cfg)
    if cfg.partial:
        return
    from rlhf_lint.frameworks.verl import close_key, releases_having  # past the early return: a non-verl job need not import it (~2 ms)

    for o in cfg.overrides:
        if o.op in ("+", "++") or cfg.unread(o.key) or o.key.startswith("hydra."):
            continue  # hydra.*: Hydra's own settings (hydra.run.dir, hydra.searchpath), not the trainer's
        if cfg.exists(o.key):
            if not cfg.exact and cfg.fork is None:
                yield from _removed_key(o, cfg)
            continue
        if cfg.is_group_choice(o.key):
            continue
        if o.op == "~":
            message = f"`~{o.key}` deletes a key the config does not have"
            yield Finding(o.key_span or o.span, message, path=o.path)
            continue
        where = f"verl {cfg.release}" if cfg.exact else "any verl release rlhf-lint knows"
        near = close_key(o.key, cfg.defaults)
        fix, severity = None, None
        if cfg.recipe is not None:
            where += f" with {cfg.recipe.entry}'s {cfg.recipe.config_name}"
        message = f"unknown key `{o.key}` (not in the trainer config of {where})"
        if cfg.past_edge:  # the key may be new in a release the table lacks
            from rlhf_lint.frameworks.edge import edge_note

            message += f", but {edge_note('verl', cfg.target.version, cfg.target.origin)}: that release may define it"
            severity = Severity.WARNING
        elif not cfg.exact:  # no release targeted: a newer one may define it
            message += ("; the verl version is unknown (set verl-version or pin verl): Hydra refuses it in every "
                        "release rlhf-lint knows")
            severity = Severity.WARNING
        elif cfg.fork is not None:
            message = message[:-1] + f", {cfg.fork_origin}): Hydra refuses it"
        else:
            message = message[:-1] + (f", {cfg.target.origin})" if cfg.target.version == cfg.release
                                       else f"; {cfg.about_version})") + ": Hydra refuses it"
        if cfg.recipe is not None and not cfg.recipe.exact and cfg.exact:  # another release's recipe was read
            message += f"; the recipe's keys come from {cfg.recipe.origin}, and the targeted release's may add it"
            severity = Severity.WARNING
        engine_may_have = severity is None and cfg.open_words and _other_engine_has(o.key, cfg)
        if engine_may_have:
            # an unread word ("$@") may select that engine (model_engine=megatron), whose config has the key
            message += "; but the Megatron trainer config has it, and a word of the launch that cannot be read " \
                       "(such as \"$@\") may select it"
            severity = Severity.WARNING
        others = releases_having(o.key, cfg.config_name) if cfg.exact and cfg.fork is None else []
        if others:  # a key of another release: the release decides, not a rename
            shown = others[0] if len(others) == 1 else f"{others[0]} .. {others[-1]}"
            message += f"; verl {shown} {'has' if len(others) == 1 else 'have'} it"
        elif near:
            message += f"; did you mean `{near}`?"
            # a rename only on the word of the targeted release's own table: never rewrite a key a newer one may have
            if o.key_span is not None and severity is None:
                start = o.key_span.start + len(o.op)
                fix = Fix(f"rename to {near}", (Edit(start, o.key_span.end, near),), Applicability.UNSAFE)
        elif o.key.endswith(".model_engine") and cfg.model_engines:
            # a group of the defaults list, not a key of a section: `+` would not select the engine's config
            message += (f"; model_engine is a top-level config group: write `model_engine="
                        f"{o.value if isinstance(o.value, str) else '...'}`")
        elif not engine_may_have:
            message += "; write `+" + o.key + "=...` to add a new key"
        yield Finding(o.key_span or o.span, message, fix=fix, path=o.path, severity=severity)


def _model_engine_choice(cfg):
    """``model_engine=x`` where the targeted release (from 0.7.1 on) has no config ``model_engine/x.yaml``."""
    if not cfg.exact or not cfg.model_engines:
        return
    for o in cfg.overrides:
        if o.key == "model_engine" and o.op != "~" and isinstance(o.value, str) and o.value not in cfg.model_engines:
            yield Finding(o.value_span or o.span, f"`model_engine={o.value}`: verl {cfg.release} has no such "
                          f"model_engine config (its choices: {', '.join(cfg.model_engines)}); Hydra refuses it",
                          path=o.path)


def _other_engine_has(key: str, cfg) -> bool:
    """Whether the other trainer config rlhf-lint reads (FSDP <-> Megatron) has ``key`` in some release."""
    from rlhf_lint.frameworks.verl import releases_having

    other = "ppo_megatron_trainer" if cfg.config_name == "ppo_trainer" else "ppo_trainer"
    return bool(releases_having(key, other))


def _removed_key(o, cfg):
    """With no release known, a key only older releases have: a warning, since the newest refuses it."""
    from rlhf_lint.frameworks.edge import newest_known
    from rlhf_lint.frameworks.verl import releases_having

    if o.key in cfg.yaml or o.op == "~":
        return
    having = releases_having(o.key, cfg.config_name)
    newest = newest_known("verl")
    if not having or newest in having or _other_engine_has(o.key, cfg):
        return
    shown = having[0] if len(having) == 1 else f"{having[0]} .. {having[-1]}"
    yield Finding(o.key_span or o.span,
                  f"`{o.key}` is a key of verl {shown} only: the releases after {having[-1]} (up to {newest}, the "
                  f"newest rlhf-lint knows) refuse it, so Hydra stops if a newer verl is installed; the verl version "
                  f"is unknown (set verl-version or pin verl)", path=o.path, severity=Severity.WARNING)
