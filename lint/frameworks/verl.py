"""verl: Hydra trainer configs and the ``key=value`` overrides of launch scripts, as Jobs.

The effective value of a key is, last one winning: the release default (schemas/verl/ppo_trainer_defaults.json),
a YAML config of the repository, then the command-line overrides. Interpolations (``${oc.select:a.b,1}``,
``${.x}``) are resolved when the key they name is known; anything else is UNKNOWN.
"""
from __future__ import annotations

import functools
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.startup.records import field, record
from rlhf_lint.frameworks.jobs import Job, job_builder
from rlhf_lint.model import UNKNOWN, Setting, Settings, Span, in_range, is_known
from rlhf_lint.readers.source import Source
from rlhf_lint.startup.lazyre import lazy_compile

SECTION = "section"  # marker value for a key that only holds other keys


def _defaults() -> dict:
    from rlhf_lint.schemas import load

    return load("verl/ppo_trainer_defaults.json")


def _placement() -> dict:
    from rlhf_lint.schemas import load

    return load("verl/placement.json")


def vllm_support() -> list[dict]:
    from rlhf_lint.schemas import load

    return load("verl/vllm_support.json")["rows"]


def _release_order(name: str):
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(name))
    except InvalidVersion:
        return (1, None)  # "main" sorts last


@functools.lru_cache(maxsize=16)
def schema_keys(version: str | None, config_name: str = "ppo_trainer") -> tuple[str, dict, bool]:
    """(release label, {key: default}, exact) for the release of ``version``'s minor series in the table, else the
    newest release at or before it. Without a version
    the union of every release is used (exact False): a key is unknown only if no release knows it."""
    from packaging.version import Version

    from rlhf_lint.frameworks.edge import table_release

    data = _defaults()
    if config_name == "ppo_megatron_trainer":
        return _megatron_keys(data["megatron"], version)
    if config_name != "ppo_trainer":
        return "", {}, False
    releases = data["releases"]
    numbered = [r for r in releases if r != "main"]
    # the same minor series when the table has one (0.2.0 -> 0.2.0.post2, 0.4.0 -> 0.4.1): a gap in the table must
    # not send a release back to an older series' keys
    best = table_release(numbered, version) if version else None
    if best is not None:
        newest = max(numbered, key=Version)
        wanted = Version(version)
        same_series = Version(best).release[:2] == wanted.release[:2]
        label = best if same_series or best != newest or wanted <= Version(newest) or "main" not in releases \
            else "main"
        return label, releases[label]["keys"], True
    union: dict = {}
    for name in sorted(releases, key=_release_order):
        union.update(releases[name]["keys"])
    return "any release", union, False


def model_engine_choices(release: str) -> tuple[str, ...]:
    """The ``model_engine`` config-group choices of a release of the table (0.7.1 on; none before), or of any
    release for the union label."""
    releases = _defaults()["releases"]
    rows = releases.values() if release not in releases else (releases[release],)
    return tuple(sorted({c for row in rows for c in row.get("model_engines", ())}))


def _checkout_engines(root: str) -> tuple[str, ...]:
    """The model_engine choices of a verl checkout (the files of its config/model_engine/)."""
    try:
        names = os.listdir(os.path.join(root, "verl", "trainer", "config", "model_engine"))
    except OSError:
        return ()
    return tuple(sorted(n[: -len(".yaml")] for n in names if n.endswith(".yaml")))


# main_ppo.py's @hydra.main(config_path="config"): a relative --config-path is read from main_ppo.py's folder
# (https://hydra.cc/docs/advanced/hydra-command-line-flags/), so `--config-path=config` names verl's own configs
MAIN_PPO_CONFIG_PATH = "config"
# model_engine choices whose config rlhf-lint reads: dp composes ppo_trainer, megatron ppo_megatron_trainer
ENGINE_CONFIGS = {"dp": "ppo_trainer", "megatron": "ppo_megatron_trainer"}


def _megatron_keys(tables: dict, version: str | None) -> tuple[str, dict, bool]:
    """The Megatron trainer's keys of the newest release at or before ``version``; for no version, or one older
    than every release read, the union of all (exact False): never the keys of a release it does not target."""
    from packaging.version import InvalidVersion, Version

    try:
        wanted = Version(version) if version else None
    except InvalidVersion:
        wanted = None
    if wanted is not None:
        candidates = [r for r in tables if Version(r) <= wanted]
        if candidates:
            best = max(candidates, key=Version)
            return best, tables[best]["keys"], True
    union: dict = {}
    for name in sorted(tables, key=Version):
        union.update(tables[name]["keys"])
    return "any release", union, False


def releases_having(key: str, config_name: str = "ppo_trainer") -> list[str]:
    """The releases whose trainer config (FSDP or Megatron) has ``key``, oldest first."""
    data = _defaults()
    tables = data["megatron"] if config_name == "ppo_megatron_trainer" else \
        data["releases"] if config_name == "ppo_trainer" else {}
    return sorted((r for r, t in tables.items() if key in t["keys"]), key=_release_order)


def close_key(key: str, keys: dict) -> str | None:
    """The one key ``key`` likely means: the same leaf one section deeper (``actor.dtype`` ->
    ``actor.fsdp_config.dtype``), else a close spelling; never a section (renaming a value onto one breaks it)."""
    import difflib

    leaves = [k for k, v in keys.items() if v != {} and v != SECTION]
    parent, _, leaf = key.rpartition(".")
    deeper = [k for k in leaves if parent and k.startswith(parent + ".") and k.endswith("." + leaf)
              and k.count(".") == key.count(".") + 1]
    if len(deeper) == 1:
        return deeper[0]
    matches = difflib.get_close_matches(key, leaves, n=1, cutoff=0.88)
    return matches[0] if matches else None


# -- overrides ---------------------------------------------------------------------------------------------------
# a key, or a config-group choice ``group@package`` (``actor@actor_rollout_ref.actor=megatron_actor``)
_OVERRIDE = lazy_compile(r"^(?P<op>\+\+|\+|~)?(?P<key>(?:[A-Za-z_][\w\-/]*@)?[A-Za-z_][\w\-]*(?:\.[\w\-]+)*)"
                         r"(?:=(?P<value>.*))?$", re.DOTALL)


def parse_value(text: str) -> Any:
    """A Hydra override value: numbers, booleans, null, quoted strings, lists; other text stays a string."""
    t = text.strip()
    if t == "":
        return ""
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none") and t in ("null", "None", "NULL", "none"):
        return None
    for conv in (int, float):
        try:
            number = conv(t.replace("_", "")) if conv is int else conv(t)
        except ValueError:
            continue
        # a 4,300-digit integer or inf: sums and messages over it would fail (str() refuses > 4,300 digits)
        return number if in_range(number) else UNKNOWN
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if t.startswith("[") and t.endswith("]"):
        items = [i for i in t[1:-1].split(",") if i.strip()]
        return [parse_value(i) for i in items]
    if "${" in t:
        return UNKNOWN
    return t


@record
class Override:
    op: str  # "", "+", "++", "~"
    key: str
    value: Any
    text: str  # the word's expanded text
    path: str
    span: Span  # the word as written
    key_span: Span | None  # the key (with its operator) as written, when it can be located
    value_span: Span | None  # the value as written, when it can be located
    tail: str = ""  # an unknown value's known end (``model.path=$HOME/models/Qwen3-8B``: ``/models/Qwen3-8B``)


def split_override(word, source_text: str | None) -> Override | None:
    """A Word ``[op]key[=value]`` as an Override, with spans of key and value located in the written token (they
    can be located when the token is written literally, possibly quoted)."""
    text = word.text
    if not isinstance(text, str):
        # `key=$(cmd)` or `key=${UNSET}`: the key is still written in the token, the value is unknown
        if source_text is None:
            return None
        written = source_text[word.span.start:word.span.end].strip("'\"")
        m = re.match(r"^(\+\+|\+)?([A-Za-z_][\w\-]*(?:\.[\w\-]+)*)=", written)
        if not m:
            return None
        start = source_text.find(m.group(0), word.span.start)
        key_span = Span(start, start + len(m.group(0)) - 1) if start >= 0 else None
        return Override(m.group(1) or "", m.group(2), UNKNOWN, written, word.path, word.span, key_span, None,
                        word.suffix)
    m = _OVERRIDE.match(text)
    if not m or (m.group("value") is None and m.group("op") != "~"):
        return None
    op, key, raw_value = m.group("op") or "", m.group("key"), m.group("value")
    key_span = value_span = None
    if source_text is not None:
        written = source_text[word.span.start:word.span.end]
        head = op + key
        at = written.find(head)
        quoted = written[:at].strip() in ("", "'", '"') if at >= 0 else False
        if at >= 0 and quoted:
            key_span = Span(word.span.start + at, word.span.start + at + len(head))
            if raw_value is not None:
                rest = written[at + len(head):]
                stripped = rest.rstrip("'\"") if written[:at] else rest
                if stripped.startswith("=") and stripped[1:] == raw_value:
                    vstart = key_span.end + 1
                    value_span = Span(vstart, vstart + len(raw_value))
        # `key=$VAR` or `key=${VAR:-8}`: the value is fixed where the variable (or the default) was written
        origin_span = word.origin_span_of(len(text) - len(raw_value), len(text)) if raw_value else None
        if value_span is None and origin_span is not None:
            assigned = source_text[origin_span.start:origin_span.end]
            inner = assigned.strip("'\"")
            if inner == raw_value:
                offset = assigned.find(inner)
                value_span = Span(origin_span.start + offset, origin_span.start + offset + len(inner))
    value = parse_value(raw_value) if raw_value is not None else None
    return Override(op, key, value, text, word.path, word.span, key_span, value_span)


# -- YAML configs ------------------------------------------------------------------------------------------------
@record
class YamlEntry:
    key: str
    value: Any
    node: Any  # the value node (a ScalarNode for scalars)
    path: str


def looks_like_verl_yaml(root) -> bool:
    import yaml

    if not isinstance(root, yaml.MappingNode):
        return False
    keys = {k.value for k, _ in root.value if isinstance(k, yaml.ScalarNode)}
    return "actor_rollout_ref" in keys or {"data", "trainer", "algorithm"} <= keys


def _in_range(value: Any) -> Any:
    """``value`` with every number out of range (model.in_range) made UNKNOWN, in lists and mappings too."""
    if isinstance(value, list):
        return [_in_range(v) for v in value]
    if isinstance(value, dict):
        return {k: _in_range(v) for k, v in value.items()}
    return value if in_range(value) else UNKNOWN


def _scalar(node) -> Any:
    import yaml

    loader = yaml.SafeLoader("")
    try:
        return _in_range(loader.construct_object(node, deep=True))
    except yaml.YAMLError:
        return UNKNOWN
    finally:
        loader.dispose()


def flatten_yaml(root, path: str) -> dict[str, YamlEntry]:
    import yaml

    out: dict[str, YamlEntry] = {}

    def walk(node, prefix: str, depth: int):
        if depth > 32:
            return
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                continue
            key = f"{prefix}{k.value}"
            if key == "defaults" or key == "hydra" or key.startswith("hydra."):
                continue
            if isinstance(v, yaml.MappingNode) and v.value:
                out[key] = YamlEntry(key, SECTION, v, path)
                walk(v, key + ".", depth + 1)
            else:
                value = _scalar(v) if not isinstance(v, yaml.ScalarNode) or v.tag != "!" else UNKNOWN
                if isinstance(value, str) and "${" in value:
                    value = _Interp(value)
                out[key] = YamlEntry(key, value, v, path)

    walk(root, "", 0)
    return out


class _Interp(str):
    """A string value holding an interpolation, resolved at lookup time."""


# -- the effective config ----------------------------------------------------------------------------------------
@record
class VerlConfig:
    release: str
    defaults: dict
    exact: bool  # defaults are those of one release (known version)
    config_name: str = "ppo_trainer"
    yaml: dict[str, YamlEntry] = field(default_factory=dict)
    yaml_path: str | None = None
    overrides: list[Override] = field(default_factory=list)
    partial: bool = False  # composed from a YAML that was not read: keys and values beyond ours are unknown
    # the launch has a word that cannot be read (``"$@"``): it may override any value, so no default is certain
    open_words: bool = False
    # packages a config-group override swaps in from a file not read (``actor@actor_rollout_ref.actor=x``): their
    # keys and values are unknown, the rest of the config is not
    unread_packages: tuple[str, ...] = ()
    model_engine: Any = None  # the model_engine choice a launch selects (None: the release's default, dp)
    model_engines: tuple[str, ...] = ()  # the choices of the targeted release (empty: it has no such group)
    target: Any = None  # edge.Target: the release configured or pinned (None: unknown)
    past_edge: bool = False  # the target is newer than every release the key table covers
    fork: str | None = None  # the checkout named by verl-source, whose keys were read instead of the table
    fork_origin: str = "set by verl-source"  # or vendored in the repository
    fork_root: str | None = None  # that checkout's folder (its code is read, never run)
    recipe: Any = None  # RecipeConfig of a `python -m recipe.<name>.<module>` launch

    @property
    def about_version(self) -> str:
        """``verl 0.4.1, pinned in requirements.txt:3`` / ``verl version unknown``."""
        if self.fork is not None:
            return f"verl checkout {self.fork}, {self.fork_origin}"
        return self.target.phrase if self.target is not None else "verl version unknown"

    def where(self, key: str):
        """The Override, YamlEntry or None (release default) that sets ``key`` last."""
        for o in reversed(self.overrides):
            if o.key == key and o.op != "~":
                return o
            if o.key == key and o.op == "~":
                return None
        return self.yaml.get(key)

    def raw(self, key: str) -> Any:
        found = self.where(key)
        if isinstance(found, Override):
            return found.value
        if isinstance(found, YamlEntry):
            return found.value
        if self.values_unknown or self.unread(key):
            return UNKNOWN  # the unread YAML or an unknown word may set it
        if key in self.defaults:
            value = self.defaults[key]
            if isinstance(value, str) and "${" in value:
                return _Interp(value)
            return value
        return None

    def get(self, key: str, depth: int = 0) -> Any:
        value = self.raw(key)
        if isinstance(value, _Interp):
            return self._resolve(key, value, depth)
        if value == "???":
            return UNKNOWN
        return value

    def _resolve(self, key: str, text: str, depth: int) -> Any:
        if depth > 8:
            return UNKNOWN
        m = re.fullmatch(r"\$\{oc\.select:([\w.]+),([^}]*)\}", text.strip())
        if m:
            target = m.group(1)
            got = self.get(target, depth + 1) if self._is_set(target) else None
            return got if got is not None else parse_value(m.group(2))
        m = re.fullmatch(r"\$\{(\.*)([\w.]+)\}", text.strip())
        if m:
            dots, target = m.group(1), m.group(2)
            if dots:
                parent = key.split(".")[: -len(dots)]
                target = ".".join(parent + [target])
            return self.get(target, depth + 1)
        return UNKNOWN

    def _is_set(self, key: str) -> bool:
        return self.where(key) is not None or key in self.defaults

    @property
    def values_unknown(self) -> bool:
        """No release default is certain: an unread YAML or an unknown word of the launch may change it."""
        return self.partial or self.open_words

    def unread(self, key: str) -> bool:
        """Whether ``key`` lies in a package a config-group override composed from a file not read."""
        return any(key == p or key.startswith(p + ".") for p in self.unread_packages)

    def is_group_choice(self, key: str) -> bool:
        """A Hydra config-group selection rather than a key: ``group@package`` or a group of the defaults list."""
        return "@" in key or (key == "model_engine" and bool(self.model_engines))

    def exists(self, key: str) -> bool:
        """Whether Hydra would find ``key`` in the composed config (release schema or the repository's YAML)."""
        return key in self.defaults or key in self.yaml

    def known_int(self, key: str):
        value = self.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None


def config_name_of(command) -> tuple[str, str | None]:
    """--config-name / --config-path of a verl command (Hydra flags), defaulting to ppo_trainer."""
    name, cpath = "ppo_trainer", None
    for arg in command.args:
        if arg.flag in ("--config-name", "-cn") and arg.value is not None:
            name = str(arg.value.text) if arg.value.known else None
        if arg.flag in ("--config-path", "-cp") and arg.value is not None:
            cpath = str(arg.value.text) if arg.value.known else ""
    return (name.removesuffix(".yaml") if name is not None else None), cpath


def override_words(command) -> list:
    """The words that may be Hydra overrides; an unknown word is one (``"$@"``, ``"${ARGS[@]}"``): a caller that
    cannot read it as ``key=value`` must treat every key as possibly overridden."""
    words = list(command.positionals)
    for arg in command.args:
        values = arg.values[1:] if arg.flag in ("--config-name", "-cn", "--config-path", "-cp") else arg.values
        words.extend(w for w in values if not isinstance(w.text, str) or "=" in w.text or w.text.startswith("~"))
    return words


# -- common vocabulary -------------------------------------------------------------------------------------------
_CONVERT = {  # how a row of schemas/verl/settings_map.json converts the verl value ("convert")
    None: None,
    "cpu_if_true": lambda v: "cpu" if v else "none",
    "bool": bool,
    "lower": lambda v: str(v).lower(),
    "recompute": lambda v: str(v).lower() if v else "none",  # null: Megatron-Core recomputes nothing
    "tuple": lambda v: tuple(str(x) for x in v) if isinstance(v, (list, tuple)) else v,
}

# the actor's optimizer constructor arguments a launch adds (verl >= 0.6: optim.override_optimizer_config)
OPTIMIZER_OVERRIDES = "actor_rollout_ref.actor.optim.override_optimizer_config"


def _optimizer_foreach(cfg: VerlConfig) -> Setting | None:
    """train.optimizer_foreach from the override's ``fused`` / ``foreach`` (a dict value or +key.fused=... overrides):
    torch's AdamW takes the fused kernel for fused=True and the per-parameter loop for foreach=False."""
    whole = cfg.get(OPTIMIZER_OVERRIDES)
    for arg in ("fused", "foreach"):
        key = f"{OPTIMIZER_OVERRIDES}.{arg}"
        value = cfg.get(key) if cfg.where(key) is not None else (whole.get(arg) if isinstance(whole, dict) else None)
        if isinstance(value, bool) and (arg == "foreach" or value):
            found = setting_for(cfg, "train.optimizer_foreach", key if cfg.where(key) is not None
                                else OPTIMIZER_OVERRIDES)
            return Setting("train.optimizer_foreach", value if arg == "foreach" else False, found.path, found.span,
                           origin=found.origin)
    return None


def _settings_map() -> dict:
    from rlhf_lint.schemas import load

    return load("verl/settings_map.json")


def _mapping() -> list[dict]:
    """(common key, verl key, convert) rows: schemas/verl/settings_map.json, each with the verl config it comes from."""
    return _settings_map()["rows"]


def setting_for(cfg: VerlConfig, common: str, key: str, convert=None, source_for=None) -> Setting:
    value = cfg.get(key)
    if convert is not None and is_known(value) and value is not None:
        value = convert(value)
    found = cfg.where(key)
    path = span = None
    origin = f"verl {cfg.release} default of {key}"
    if isinstance(found, Override):
        path, span, origin = found.path, found.value_span or found.span, f"override {key}"
    elif isinstance(found, YamlEntry):
        from rlhf_lint.readers.yaml import node_span

        path, span, origin = found.path, node_span(found.node), f"{key} in {found.path}"
    tail = found.tail if isinstance(found, Override) and value is UNKNOWN else ""
    return Setting(common, UNKNOWN if value is None and common.startswith(("vllm.", "batch.")) else value,
                   path, span, origin=origin, tail=tail)


def _global_micro_batches(cfg: VerlConfig) -> list[Setting]:
    """Per-GPU micro batches from the job-wide keys (schemas/verl/settings_map.json global_micro_batches): the
    workers divide them by the world size over the Ulysses group."""
    nodes, per_node = cfg.known_int("trainer.nnodes"), cfg.known_int("trainer.n_gpus_per_node")
    sp = cfg.known_int("actor_rollout_ref.actor.ulysses_sequence_parallel_size") or 1
    if not nodes or not per_node or sp < 1:
        return []
    out = []
    for row in _settings_map()["global_micro_batches"]["rows"]:
        value = cfg.known_int(row["key"])
        if value is None or value < 1 or (cfg.where(row["key"]) is None and cfg.known_int(row["per_gpu"])):
            continue  # unset, or only a release default beside a per-GPU size the launch writes
        divisor = max(1, nodes * per_node // (1 if row["key"].startswith("critic.") else sp))
        found = setting_for(cfg, row["setting"], row["key"])
        out.append(Setting(row["setting"], max(1, value // divisor), found.path, found.span,
                           origin=f"{row['key']} {value} / {divisor} GPUs (verl divides the job-wide size)"))
    return out


def settings_from(cfg: VerlConfig) -> Settings:
    settings = Settings()
    settings.add(Setting("framework", "verl"))
    if cfg.release and cfg.exact:
        settings.add(Setting("framework.version", cfg.release))
    written = []  # what the launch or its YAML sets goes last, so it wins over the default of another spelling
    for row in _mapping():  # (a setting with two rows: a key verl moved, critic.fsdp.* in 0.8.0)
        key = row["key"]
        if cfg.where(key) is not None:
            written.append(setting_for(cfg, row["setting"], key, _CONVERT[row["convert"]]))
        elif cfg.exists(key):
            settings.add(setting_for(cfg, row["setting"], key, _CONVERT[row["convert"]]))
        elif "before" in row and cfg.exact and not cfg.partial:
            # a release (or checkout) older than the key: it behaves as the key's "before" value (padded micro
            # batches in 0.1)
            settings.add(Setting(row["setting"], row["before"], origin=f"verl {cfg.release} has no {key}"))
    for setting in written:
        settings.add(setting)
    foreach = _optimizer_foreach(cfg)
    if foreach is not None:
        settings.add(foreach)
    settings.items += _global_micro_batches(cfg)
    nodes, per_node = cfg.known_int("trainer.nnodes"), cfg.known_int("trainer.n_gpus_per_node")
    if nodes and per_node:
        # verl's resource pool: one STRICT_PACK placement group of n_gpus_per_node GPUs on each of nnodes nodes
        settings.add(setting_for(cfg, "topology.nodes", "trainer.nnodes"))
        settings.add(setting_for(cfg, "topology.gpus_per_node", "trainer.n_gpus_per_node"))
        settings.add(Setting("topology.world_size", nodes * per_node, origin="trainer.nnodes x trainer.n_gpus_per_node"))
    strategy = cfg.get("actor_rollout_ref.actor.strategy")
    placement = _placement()
    pool = cfg.recipe is not None and cfg.recipe.rollout_pool
    if pool:
        # one_step_off_policy, fully_async_policy: the rollout has GPUs of its own (rollout.nnodes x
        # rollout.n_gpus_per_node); the trainer's workers hold the other roles
        settings.add(Setting("topology.colocate_all", False, origin=f"{cfg.recipe.entry}: rollout on its own GPUs"))
        for key, setting in (("rollout.n_gpus_per_node", "topology.vllm.gpus_per_node"),
                             ("rollout.nnodes", "topology.vllm.nodes")):
            if cfg.known_int(key):
                settings.add(setting_for(cfg, setting, key))
        settings.add(Setting("topology.shared_process", tuple(r for r in placement["shared_process"]["roles"]
                                                              if r != "vllm"),
                             origin=f"{cfg.recipe.entry}: the trainer's workers hold every model but the rollout"))
    else:
        # verl's hybrid engine: every role on the same GPUs, in one process per GPU (schemas/verl/placement.json)
        settings.add(Setting("topology.colocate_all", True,
                             origin="verl hybrid engine (every role on the same GPUs)"))
        settings.add(Setting("topology.shared_process", tuple(placement["shared_process"]["roles"]),
                             origin="verl hybrid engine (one worker process per GPU holds every role)"))
    if strategy == "megatron":
        _megatron_layout(cfg, settings)
    # the rollout's memory is modelled beside the FSDP and Megatron workers
    engine = cfg.get("actor_rollout_ref.rollout.name")
    if engine is UNKNOWN:  # `rollout.name=$ENGINE`: some engine runs all the same; vLLM assumed (make_job says so)
        engine = None
    if engine in ("vllm", "sglang", None) and strategy in ("fsdp", "fsdp2", "megatron"):
        tp = cfg.known_int("actor_rollout_ref.rollout.tensor_model_parallel_size") or 1
        gpus = (cfg.known_int("rollout.nnodes") or 0) * (cfg.known_int("rollout.n_gpus_per_node") or 0) if pool \
            else (nodes or 0) * (per_node or 0)
        if gpus and tp > 0:
            # one rollout engine per tensor-parallel group, inside the workers of those GPUs
            how = "rollout.nnodes x rollout.n_gpus_per_node" if pool else "verl hybrid engine: world size"
            settings.add(Setting("vllm.num_engines", gpus // tp, origin=f"{how} / rollout tensor_model_parallel_size"))
        if engine == "sglang":
            sglang = placement["sglang_rollout"]
            origin = f"verl's SGLang rollout ({sglang['source'][1]})"
            settings.add(Setting("rollout.engine", "sglang", origin=origin))
            # the memory saver releases weights and KV pool after every generation; the weights come back from
            # the actor at the next sync, so nothing is parked in host RAM
            settings.add(Setting("vllm.enable_sleep", True, origin=origin))
            settings.add(Setting("vllm.sleep_level", 2, origin=origin))
        else:
            sleeps = placement["rollout_sleeps"]
            value = cfg.get(sleeps["key"]) if cfg.exists(sleeps["key"]) else sleeps["default"]
            if isinstance(value, bool):
                settings.add(Setting("vllm.enable_sleep", value, origin=f"{sleeps['key']} (verl frees the "
                                                                          "rollout's memory after generation)"))
        _max_model_len(cfg, settings, placement["rollout_max_model_len"])
    forced = placement["inference_cpu_offload"]
    if strategy in ("fsdp", "fsdp2") and cfg.exact and cfg.fork is None and _release_order(cfg.release)[0] == 0:
        from packaging.version import Version

        settings.add(Setting("verl.inference_cpu_offload", Version(cfg.release) >= Version(forced["since"]),
                             origin=f"verl {cfg.release}: the reference and reward models' CPUOffload"))
    elif strategy in ("fsdp", "fsdp2") and cfg.fork_root is not None:
        # a checkout's version file may lag its code (rllm's says 0.1): its workers' code says what it does
        from rlhf_lint.frameworks.forks import checkout_text

        code = checkout_text(cfg.fork_root, forced["code_file"])
        if code is not None:
            settings.add(Setting("verl.inference_cpu_offload", forced["code_marker"] in code,
                                 origin=f"verl {cfg.about_version}: {forced['code_file']}"))
    if strategy in ("fsdp", "fsdp2"):
        settings.add(Setting("zero.stage", 3, origin="FSDP full sharding (ZeRO-3 equivalent)"))
        # fsdp_workers.py loads every model with attn_implementation flash_attention_2 unless overridden
        settings.add(Setting("train.flash_attn", True, origin="verl's FSDP workers use flash_attention_2"))
    adv = cfg.get("algorithm.adv_estimator")
    roles = ["actor", "ref", "vllm"]
    if adv == "gae":
        roles.append("critic")
    if cfg.get("reward_model.enable") is True:
        roles.append("reward")
        settings.add(setting_for(cfg, "model.reward.path", "reward_model.model.path"))
    settings.add(Setting("job.type", "ppo" if adv == "gae" else (adv if isinstance(adv, str) else UNKNOWN)))
    return settings


def _megatron_layout(cfg: VerlConfig, settings: Settings) -> None:
    """The Megatron actor's layout is the job's (the reference follows it; the critic has its own, critic.megatron);
    a recompute granularity left null is Megatron-Core's: none."""
    for key in ("megatron.recompute", "megatron.critic.recompute"):
        if settings.get(key) is None or settings.value(key) is None:
            settings.add(Setting(key, "none", origin="recompute_granularity null: Megatron-Core recomputes nothing "
                                                     "(TransformerConfig default)"))


def _max_model_len(cfg: VerlConfig, settings: Settings, table: dict) -> None:
    """vllm.max_model_len: the length verl gives vLLM, by release (schemas/verl/placement.json); the marker
    "max_position_embeddings" leaves it to the model's config. With no release known the newest rule is taken and
    vllm.max_model_len_assumed says so (a verdict must not rest on it)."""
    from packaging.version import Version

    known = cfg.exact and cfg.fork is None and _release_order(cfg.release)[0] == 0
    rows = [r for r in table["releases"] if not known or Version(r["since"]) <= Version(cfg.release)]
    row = rows[-1]
    written = cfg.get(table["key"]) if cfg.exists(table["key"]) else None
    release = f"verl {cfg.release}" if known else "verl's newest release"
    if row["rule"] == "max_position_embeddings":
        why = f"{release} gives vLLM the model's max_position_embeddings whatever {table['key']} says"
    elif row["rule"] == "config_or_max_position_embeddings" and written is None:
        why = f"{table['key']} unset: {release} gives vLLM the model's max_position_embeddings"
    else:
        why = None
    if why is not None:
        settings.add(Setting("vllm.max_model_len", "max_position_embeddings", origin=f"{why} ({row['source']})"))
    elif isinstance(written, int) and not isinstance(written, bool) and written > 0:
        settings.add(setting_for(cfg, "vllm.max_model_len", table["key"]))
    if not known:
        settings.add(Setting("vllm.max_model_len_assumed", True, origin=row["source"]))


@record
class VerlJob(Job):
    verl: VerlConfig | None = None


def _roles(cfg: VerlConfig) -> tuple[str, ...]:
    """The models the trainer builds (main_ppo.py, v0.7.0 L252-L254; ray_trainer.py L343-L347): a reference only
    when a KL term uses it and LoRA does not make the actor without adapters the reference; a critic for GAE; a
    reward model when enabled. A value that cannot be read keeps the model (more memory, not less)."""
    roles = ["actor"]
    kl_reward, kl_loss = cfg.get("algorithm.use_kl_in_reward"), cfg.get("actor_rollout_ref.actor.use_kl_loss")
    lora = cfg.get("actor_rollout_ref.model.lora_rank")
    uses_kl = not cfg.exists("algorithm.use_kl_in_reward") or kl_reward is not False or kl_loss is not False
    if uses_kl and not (isinstance(lora, int) and not isinstance(lora, bool) and lora > 0):
        roles.append("ref")
    roles.append("vllm")
    if cfg.get("algorithm.adv_estimator") == "gae":
        roles.append("critic")
    if cfg.get("reward_model.enable") is True:
        roles.append("reward")
    return tuple(roles)


def make_job(cfg: VerlConfig, name: str, path: str, span: Span | None) -> VerlJob:
    settings = settings_from(cfg)
    roles = _roles(cfg)
    assumptions = []
    if not cfg.exact:
        assumptions.append("verl version unknown: defaults of the newest release, keys of any release")
    if cfg.recipe is not None:
        assumptions.append(f"{cfg.recipe.entry} composes {cfg.recipe.config_name} over verl's {cfg.recipe.base}: "
                           f"{cfg.recipe.origin}" + ("" if cfg.recipe.exact else " (the targeted release's recipe "
                                                     "is not in the table)"))
    if cfg.get("actor_rollout_ref.rollout.name") is UNKNOWN:
        assumptions.append("actor_rollout_ref.rollout.name cannot be read: a vLLM rollout assumed (its reservation "
                           "is counted rather than dropped)")
    return VerlJob(name=name, path=path, span=span, framework="verl", settings=settings, roles=roles,
                   assumptions=assumptions, verl=cfg)


def _fork_source(project) -> tuple[str | None, str]:
    """(checkout, how it was chosen): verl-source, else a verl package vendored in the repository."""
    sources = getattr(getattr(project, "config", None), "sources", None) or {}
    if sources.get("verl"):
        return sources["verl"], "set by verl-source"
    vendored = _vendored_verl(project)
    return vendored, "vendored in the repository"


_MAIN_PPO = os.path.join("verl", "trainer", "main_ppo.py")


def _vendored_verl(project) -> str | None:
    """The root of a verl package the repository carries (TinyZero, rllm, PRIME...: `verl/trainer/main_ppo.py` and
    its config among the checked files, in exactly one place): `python3 -m verl.trainer.main_ppo` run there imports
    it, not a release. Found once per project."""
    if project is None or not hasattr(project, "sources"):
        return None
    cached = getattr(project, "_vendored_verl", False)
    if cached is not False:
        return cached
    from rlhf_lint.frameworks.forks import verl_config_files

    roots = set()
    for path in project.sources:
        if path == _MAIN_PPO or path.endswith(os.sep + _MAIN_PPO):
            root = path[: -len(_MAIN_PPO)].rstrip(os.sep) or "."
            if verl_config_files(root, "ppo_trainer"):
                roots.add(os.path.realpath(root))
    found = roots.pop() if len(roots) == 1 else None
    project._vendored_verl = found
    return found


def new_config(project, config_name: str = "ppo_trainer") -> VerlConfig:
    from rlhf_lint.frameworks.edge import is_past, newest_known, target_version

    source, how = _fork_source(project)
    if source is not None:  # a checkout named by verl-source or vendored: its own keys, read statically
        from rlhf_lint.frameworks.forks import verl_keys

        keys = verl_keys(source, config_name)
        if keys is not None:
            shown = os.path.relpath(source, project.config.root)
            return VerlConfig(release=f"checkout {shown}", defaults=keys, exact=True, config_name=config_name,
                              fork=shown, fork_origin=how, fork_root=source)
    target = target_version(project, "verl") if project is not None else None  # configuration > pin
    version = target.version if target is not None else None
    release, keys, exact = schema_keys(version, config_name)
    past = target is not None and is_past(version, newest_known("verl"))
    return VerlConfig(release=release, defaults=keys, exact=exact, config_name=config_name, target=target,
                      past_edge=past)


def interpret(command, source, project) -> list[Job] | None:
    """A ``python -m verl.trainer.main_ppo key=value ...`` command as a verl Job (other entries read other configs:
    main_generation, SFT; they are not checked against the PPO trainer keys), or one of a verl recipe
    (``python -m recipe.dapo.main_dapo``: the trainer config with what the recipe's own config adds)."""
    entry = command.entry.text if command.entry is not None else ""
    if isinstance(entry, str) and entry.startswith("recipe."):
        return _interpret_recipe(command, source, project, entry)
    if not isinstance(entry, str) or entry != "verl.trainer.main_ppo":
        return []
    name, cpath = config_name_of(command)
    if cpath and os.path.normpath(cpath) == MAIN_PPO_CONFIG_PATH:
        cpath = None  # Hydra reads --config-path relative to main_ppo.py: verl's own config folder, the default
    overrides, unknown_word = _overrides(command, source)
    base = new_config(project, "ppo_trainer")
    engines = model_engine_choices(base.release) if base.fork_root is None else _checkout_engines(base.fork_root)
    engine = next((o.value for o in reversed(overrides) if o.key == "model_engine" and o.op != "~"), None)
    if name == "ppo_trainer" and cpath is None and engines and engine in ENGINE_CONFIGS and engine in engines:
        name = ENGINE_CONFIGS[engine]  # `model_engine=megatron` composes what ppo_megatron_trainer.yaml does
    known_name = name if name in ("ppo_trainer", "ppo_megatron_trainer") else "ppo_trainer"
    cfg = base if known_name == "ppo_trainer" else new_config(project, known_name)
    cfg.model_engine, cfg.model_engines = engine, engines
    if engine is not None and engines and engine not in ENGINE_CONFIGS:
        # another engine's actor, reference and critic configs (veomni, torchtitan), not read; a choice the
        # targeted release lacks is V001's error, and the run stops there
        cfg.partial = True
    cfg.unread_packages = tuple(o.key.split("@", 1)[1] for o in overrides if "@" in o.key and o.op != "~")
    if cpath is not None or name != known_name:
        target = None
        if project is not None and cpath and name is not None:
            target = project.resolve(command.path, os.path.join(cpath, name + ".yaml"))
        if target is not None and isinstance(target.tree, list) and target.tree:
            cfg.yaml = flatten_yaml(target.tree[0], target.path)
            cfg.yaml_path = target.path
        else:
            cfg.partial = True  # a config of the repository that is not among the checked files
    return [_job(command, source, cfg, overrides, unknown_word, entry)]


def _overrides(command, source) -> tuple[list[Override], bool]:
    """(the command's readable overrides, whether a word could not be read)."""
    text = source.text if source is not None and source.path == command.path else None
    words = override_words(command)
    read = [split_override(w, text if w.path == command.path else None) for w in words]
    return [o for o in read if o is not None], any(o is None and not isinstance(w.text, str)
                                                   for w, o in zip(words, read))


def _job(command, source, cfg: VerlConfig, overrides: list[Override], unknown_word: bool, entry: str) -> VerlJob:
    cfg.overrides.extend(overrides)
    text = source.text if source is not None and source.path == command.path else None
    label = f"{os.path.basename(command.path)}:{(source.position(command.span.start).line if text else 0)} {entry}"
    job = make_job(cfg, label, command.path, command.span)
    # an unknown word may override any key, so rules must not take a release default as certain; the estimate
    # (settings, roles) keeps the defaults, the likeliest values: unknowns there are filled pessimistically
    cfg.open_words = unknown_word
    job.hardware = dict(command.hardware)
    return job


# -- recipes: python -m recipe.<name>.<module> -------------------------------------------------------------------
def _recipe_table() -> dict:
    from rlhf_lint.schemas import load

    return load("verl/recipes.json")["releases"]


@record
class RecipeConfig:
    """What a recipe entry composes: the trainer config (``base``) and the recipe's own config over it."""
    entry: str
    config_name: str
    base: str = "ppo_trainer"
    keys: dict = field(default_factory=dict)  # from the recipe table (empty when the repository's file is read)
    source: Any = None  # the repository's config file, when it is among the checked files
    origin: str = ""  # where the config came from, for the assumptions
    exact: bool = True  # the keys are those of the targeted release's recipe
    rollout_pool: bool = False  # the rollout runs on GPUs of its own (rollout.n_gpus_per_node)
    validates: bool | None = None  # runs verl's start-up validation (None: not known)
    module: str | None = None  # the repository's recipe module, when read from there
    yaml: dict = field(default_factory=dict)  # that config flattened (flatten_yaml)


def _given_config_name(command) -> str | None:
    """The ``--config-name`` a recipe launch gives (it picks another config of the recipe's folder)."""
    if not any(a.flag in ("--config-name", "-cn") for a in command.args):
        return None
    return config_name_of(command)[0]


def _recipe_from_repository(command, project, entry: str) -> RecipeConfig | None:
    """The recipe module and its config, when both are among the checked files: the decorator
    ``@hydra.main(config_path=..., config_name=...)`` is read from the module's text, never run."""
    if project is None:
        return None
    module = project.resolve(command.path, entry.replace(".", "/") + ".py")
    if module is None:
        return None
    from rlhf_lint.schemas.build.verl_recipes import hydra_main_of

    found = hydra_main_of(module.text)
    if found is None or found[0] is None:
        return None
    name = _given_config_name(command) or found[1]
    target = project.resolve(module.path, os.path.join(found[0], f"{name}.yaml"))
    if target is None or not isinstance(target.tree, list) or not target.tree:
        return None
    from rlhf_lint.schemas.build.verl_recipes import TRAINER_CONFIGS, defaults_names

    # the builder's reading of a recipe config: its defaults list names the trainer config it composes
    base = next((n for n in defaults_names(_scalar(target.tree[0])) if n in TRAINER_CONFIGS), None)
    if base is None:
        return None
    keys = flatten_yaml(target.tree[0], target.path)
    return RecipeConfig(entry=entry, config_name=name, base=base, source=target, origin=f"{target.path}",
                        rollout_pool="rollout.n_gpus_per_node" in keys, module=module.path, yaml=keys)


def _python_beside(project, path: str) -> list[Source]:
    """The Python sources of the project in the folder ``path`` names."""
    return [s for p, s in project.sources.items() if p.endswith(".py") and s.kind == "python"
            and os.path.dirname(os.path.abspath(p)) == path]


def _validates(project, module: str, release: str) -> bool | None:
    """Whether the recipe's own code (the Python files of its folder) runs verl's start-up validation at
    ``release`` (None when the release, and so what its RayPPOTrainer does, is not known)."""
    from rlhf_lint.schemas.build.verl_recipes import validates

    code = "".join(s.text for s in _python_beside(project, os.path.dirname(os.path.abspath(module))))
    if validates(code, False):
        return True
    row = _recipe_table().get(release)
    return None if row is None else validates(code, row["trainer_validates"])


def _recipe_from_table(command, entry: str, release: str, exact: bool) -> RecipeConfig | None:
    """The recipe of the targeted release in schemas/verl/recipes.json; with no release known (or one the table
    lacks), that of the newest release shipping it, marked inexact."""
    table = _recipe_table()
    row = table.get(release, {}).get("entries", {}).get(entry) if exact else None
    label, any_release = release, not exact
    if row is None:
        having = sorted((r for r in table if entry in table[r]["entries"]), key=_release_order)
        if not having:
            return None
        label, row, exact = having[-1], table[having[-1]]["entries"][entry], False
    name = _given_config_name(command) or row["config_name"]
    conf = row.get("configs", {}).get(name)
    if conf is None:
        return None
    keys = conf["keys"]
    if any_release:  # no release targeted: a key of any release's recipe
        keys = {}
        for r in sorted(table, key=_release_order):
            keys.update(table[r]["entries"].get(entry, {}).get("configs", {}).get(name, {}).get("keys", {}))
    return RecipeConfig(entry=entry, config_name=name, base=conf["base"], keys=keys,
                        origin=f"verl {label}'s recipe ({conf['source']})", exact=exact,
                        rollout_pool=conf["rollout_pool"], validates=row["validates"] if exact else None)


def _interpret_recipe(command, source, project, entry: str) -> list[Job] | None:
    """``python -m recipe.<name>.<module>``: a verl recipe when the repository's module composes a trainer config,
    or the recipe table knows the entry; anything else is an ordinary program."""
    recipe = _recipe_from_repository(command, project, entry)
    base_name = recipe.base if recipe is not None else "ppo_trainer"
    cfg = new_config(project, base_name)
    if recipe is None:
        recipe = _recipe_from_table(command, entry, cfg.release, cfg.exact)
        if recipe is not None and recipe.base != base_name:
            cfg = new_config(project, recipe.base)
    if recipe is None:
        return None  # not a verl recipe: the next interpreter (an ordinary program) reads it
    if recipe.source is not None:
        cfg.yaml, cfg.yaml_path = recipe.yaml, recipe.source.path
        recipe.validates = _validates(project, recipe.module, cfg.release)
    else:
        cfg.defaults = {**cfg.defaults, **recipe.keys}
    cfg.recipe = recipe
    overrides, unknown_word = _overrides(command, source)
    cfg.unread_packages = tuple(o.key.split("@", 1)[1] for o in overrides if "@" in o.key and o.op != "~")
    return [_job(command, source, cfg, overrides, unknown_word, entry)]


@job_builder(kinds={"yaml"})
def build_verl_yaml_jobs(source: Source, project) -> list[Job]:
    """A repository's own verl trainer YAML (a Hydra config with actor_rollout_ref/data/trainer sections)."""
    docs = source.tree if isinstance(source.tree, list) else []
    if not docs or not looks_like_verl_yaml(docs[0]):
        return []
    vendored = _vendored_verl(project)
    if vendored is not None and os.path.realpath(source.path).startswith(
            os.path.join(vendored, "verl", "trainer", "config") + os.sep):
        return []  # the defaults of the verl package the repository carries, not an experiment of its own
    if _is_recipe_config(source, project):
        return []  # a recipe's defaults: its launches (python -m recipe.x.main_x) read it, it runs nothing itself
    cfg = new_config(project)
    cfg.yaml = flatten_yaml(docs[0], source.path)
    cfg.yaml_path = source.path
    from rlhf_lint.readers.yaml import node_span

    return [make_job(cfg, f"{os.path.basename(source.path)} (verl config)", source.path, node_span(docs[0]))]


def _is_recipe_config(source: Source, project) -> bool:
    """A YAML that a recipe module of the folder above it names in ``@hydra.main(config_path=..., config_name=...)``
    (verl's ``recipe/<name>/config/<name>_trainer.yaml``), when a launch script of the project runs that module
    (``python -m recipe.<name>.<module>``): that launch reads it. Without one the YAML stays a launch of its own."""
    if project is None or not hasattr(project, "sources"):
        return False
    folder, name = os.path.split(os.path.abspath(source.path))
    stem, above = name.rsplit(".", 1)[0], os.path.dirname(folder)
    modules = [s for s in _python_beside(project, above) if stem in s.text]
    if not modules:
        return False
    from rlhf_lint.schemas.build.verl_recipes import hydra_main_of

    for module in modules:
        found = hydra_main_of(module.text)
        if found is not None and found[1] == stem and found[0] is not None and os.path.abspath(
                os.path.join(os.path.dirname(module.path), found[0])) == folder and _launched(module.path, project):
            return True
    return False


def _launched(module_path: str, project) -> bool:
    """Whether a shell script of the project names the module as a recipe entry (``recipe.<name>.<module>``)."""
    parts = os.path.abspath(module_path)[:-len(".py")].split(os.sep)
    if "recipe" not in parts:
        return False
    dotted = ".".join(parts[len(parts) - 1 - parts[::-1].index("recipe"):])
    return any(s.kind == "shell" and dotted in s.text for s in project.sources.values())

