"""V002 verl-append-existing-key."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.verl._common import _cfg


@rule("V002", "verl-append-existing-key", Severity.ERROR, scope="job", frameworks=("verl",), fixable=True)
def verl_append_existing_key(ctx):
    """An override `+key=value` adds a key that the config already has, which Hydra refuses.

    ## What it does
    Reports `+key=value` overrides whose key exists in the trainer config (release defaults or the YAML) with a
    value: Hydra appends over a key whose value is null and merges a dict or list value, so those pass.

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
        if o.op == "+" and cfg.exists(o.key) and not _append_accepted(cfg, o):
            fix = None
            if o.key_span is not None:
                fix = Fix("drop the +", (Edit(o.key_span.start, o.key_span.start + 1, ""),), Applicability.SAFE)
            if cfg.past_edge:  # a newer release may have dropped the key: then the + is right
                from rlhf_lint.frameworks.edge import edge_note

                yield Finding(o.key_span or o.span, f"`+{o.key}` appends a key verl {cfg.release} has, but "
                              f"{edge_note('verl', cfg.target.version, cfg.target.origin)}: that release may differ",
                              severity=Severity.WARNING, path=o.path)
                continue
            yield Finding(o.key_span or o.span, f"`+{o.key}` appends a key verl {cfg.release} already has: Hydra "
                                                "refuses it (drop the + to set it)", fix=fix, path=o.path)


def _append_accepted(cfg, o) -> bool:
    """Hydra appends over an existing key whose value is null (or missing, `???`), and merges a dict or list value
    into it (hydra/_internal/config_loader_impl.py, `_apply_overrides_to_config`: `OmegaConf.select(cfg, key) is None
    or isinstance(value, (dict, list))`). An interpolated default may resolve to null: not known, so accepted."""
    if isinstance(o.value, (dict, list)) or (isinstance(o.value, str) and o.value.strip()[:1] == "{"):
        return True  # a Hydra dict ({k: v}) is merged into what is there
    found = cfg.yaml.get(o.key)
    default = found.value if found is not None else cfg.defaults.get(o.key)
    return default is None or default == "???" or (isinstance(default, str) and "${" in default)
