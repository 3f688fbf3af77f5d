"""accelerate config YAML (``accelerate launch --config_file``): its DeepSpeed section as a Job in the common
vocabulary, with the ds_config file it names linked through ``deepspeed.config_path``."""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.startup.records import field, record
from rlhf_lint.frameworks.jobs import Job, job_builder
from rlhf_lint.model import Setting, Settings
from rlhf_lint.readers.source import Source

SIGNATURE_KEYS = ("compute_environment", "distributed_type")


def deepspeed_keys() -> dict:
    from rlhf_lint.schemas import load

    return load("accelerate/deepspeed_keys.json")


@record
class Entry:
    key: str
    key_node: Any
    value_node: Any
    value: Any


@record
class AccelerateConfig:
    path: str
    root: Any
    top: dict[str, Entry] = field(default_factory=dict)
    deepspeed: dict[str, Entry] = field(default_factory=dict)
    deepspeed_node: Any = None  # the deepspeed_config mapping node
    fsdp: dict[str, Entry] = field(default_factory=dict)  # the fsdp_config section

    def value(self, key: str, default=None):
        e = self.deepspeed.get(key)
        return default if e is None else e.value

    @property
    def uses_deepspeed(self) -> bool:
        return str(self.top["distributed_type"].value).upper() == "DEEPSPEED" if "distributed_type" in self.top \
            else bool(self.deepspeed)

    @property
    def uses_fsdp(self) -> bool:
        return "distributed_type" in self.top and str(self.top["distributed_type"].value).upper() == "FSDP"

    def count(self, key: str) -> Entry | None:
        """The top-level entry ``key`` (num_processes, num_machines) when it is a whole number above zero (a YAML
        ``true`` is no count)."""
        entry = self.top.get(key)
        if entry is None or type(entry.value) is not int or entry.value <= 0:
            return None
        return entry

    def zero_stage(self):
        """The stage accelerate runs: the YAML's, or the plugin default 2 (unknown with a ds_config file)."""
        stage = self.value("zero_stage")
        if stage is None and "deepspeed_config_file" not in self.deepspeed:
            return deepspeed_keys()["plugin_defaults"]["zero_stage"]
        return stage


def _entries(node) -> dict[str, Entry]:
    import yaml

    from rlhf_lint.frameworks.verl import _scalar

    out = {}
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode):
            out[k.value] = Entry(k.value, k, v, _scalar(v) if isinstance(v, yaml.ScalarNode) else None)
    return out


# accelerate also loads a config written as JSON (commands/config/config_args.py: from_json_file); such a file is
# composed as YAML when it is small and names accelerate's keys, once for whatever reads it (readers.yaml
# named_yaml_docs)


def _json_docs(source: Source) -> list:
    from rlhf_lint.readers.yaml import named_yaml_docs

    return named_yaml_docs(source) if any(f'"{k}"' in source.text for k in SIGNATURE_KEYS) else []


def read(source: Source) -> AccelerateConfig | None:
    """The config when the YAML (or JSON) is an accelerate config (top-level compute_environment /
    distributed_type)."""
    import yaml

    docs = _json_docs(source) if source.kind == "json" else source.tree if isinstance(source.tree, list) else []
    if not docs or not isinstance(docs[0], yaml.MappingNode):
        return None
    top = _entries(docs[0])
    if not any(k in top for k in SIGNATURE_KEYS):
        return None
    cfg = AccelerateConfig(source.path, docs[0], top)
    ds = top.get("deepspeed_config")
    if ds is not None and isinstance(ds.value_node, yaml.MappingNode):
        cfg.deepspeed_node = ds.value_node
        cfg.deepspeed = _entries(ds.value_node)
    fsdp = top.get("fsdp_config")
    if fsdp is not None and isinstance(fsdp.value_node, yaml.MappingNode):
        cfg.fsdp = _entries(fsdp.value_node)
    return cfg


@record
class AccelerateJob(Job):
    accelerate: AccelerateConfig | None = None


@job_builder(kinds={"yaml"})
def build_accelerate_jobs(source: Source, project) -> list[Job]:
    from rlhf_lint.frameworks.precision import accelerate_dtype
    from rlhf_lint.readers.yaml import node_span

    cfg = read(source)
    if cfg is None:
        return []
    settings = Settings()
    settings.add(Setting("framework", "accelerate", source.path, None))

    def add(key: str, entry: Entry | None, value, origin: str = ""):
        span = node_span(entry.value_node) if entry is not None else None
        settings.add(Setting(key, value, source.path, span, origin=origin))

    if cfg.uses_deepspeed:
        stage = cfg.zero_stage()
        if stage is not None:
            add("zero.stage", cfg.deepspeed.get("zero_stage"), stage,
                "" if "zero_stage" in cfg.deepspeed else "accelerate's DeepSpeed plugin default")
        for name, row in deepspeed_keys()["settings"].items():  # key of deepspeed_config -> setting
            if name in cfg.deepspeed:
                add(row["key"], cfg.deepspeed[name], cfg.value(name))
    mp = cfg.top.get("mixed_precision")
    dtype = accelerate_dtype(mp.value) if mp is not None else None
    if dtype is not None:
        add("precision.param_dtype", mp, dtype)
    procs, machines = cfg.count("num_processes"), cfg.count("num_machines")
    if procs is not None:
        add("topology.world_size", procs, procs.value)
    if machines is not None:
        add("topology.nodes", machines, machines.value)
        if procs is not None and procs.value % machines.value == 0:
            settings.add(Setting("topology.gpus_per_node", procs.value // machines.value,
                                 origin="num_processes / num_machines"))
    name = f"{os.path.basename(source.path)} (accelerate config)"
    return [AccelerateJob(name=name, path=source.path, span=node_span(cfg.root), framework="accelerate",
                          settings=settings, roles=("policy",), accelerate=cfg)]
