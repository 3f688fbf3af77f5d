"""ms-swift launches: `swift sft|pt|rlhf --flag value ...` (HF Trainer and TRL trainers underneath) and ms-swift's
`megatron sft|pt|rlhf` (Megatron-Core: its layout, recompute and optimizer fields, sized by
rlhf_lint.memory.megatron).

The flags map to the common settings through schemas/swift/arguments.json; what a launch leaves unset takes the
defaults of the ms-swift release the repository pins (schemas/swift/releases.json, the newest release when nothing
pins it), and `--deepspeed zero3` / `--fsdp fsdp2` the facts of the preset that release ships. The world size is
launchers.launch_topology's (`_swift_topology`: torchrun only with NPROC_PER_NODE or NNODES). Three things ms-swift
does differently from a plain HF Trainer launch are kept: `max_length` only truncates (batches are padded to their
longest sample), a process that sees several GPUs per process splits its model over them (device_map), and the
torch_dtype left unset is the checkpoint's.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rlhf_lint.readers.commands import Command
    from rlhf_lint.readers.source import Source

from rlhf_lint.frameworks.jobs import Job
from rlhf_lint.model import UNKNOWN, Setting, Settings


def arguments() -> dict:
    from rlhf_lint.schemas import load

    return load("swift/arguments.json")


def releases() -> dict:
    from rlhf_lint.schemas import load

    return load("swift/releases.json")["releases"]


def release_row(project) -> tuple[str, dict, str | None]:
    """(label, row of schemas/swift/releases.json, assumption or None) for the ms-swift release the repository
    targets: edge.table_release's row (its minor series, else the nearest older), the oldest row for a release older
    than all, the newest row when nothing pins ms-swift."""
    from rlhf_lint.frameworks.deepspeed import version_tuple
    from rlhf_lint.frameworks.edge import table_release, target_version

    rows = releases()
    order = sorted(rows, key=version_tuple)
    target = target_version(project, "ms-swift") if project is not None else None
    if target is None:
        newest = order[-1]
        return newest, rows[newest], (f"ms-swift release not pinned: the defaults of the newest release in the "
                                      f"tables, {newest}")
    want = version_tuple(target.version)
    label = table_release(order, target.version) or order[0]
    if version_tuple(label)[:2] == want[:2]:
        return label, rows[label], None
    if want > version_tuple(order[-1]):
        edge = "newer than"
    else:
        edge = "older than" if want < version_tuple(order[0]) else "not among"
    return label, rows[label], (f"ms-swift {target.version} ({target.origin}) is {edge} the releases in the tables: "
                                f"the defaults of {label}")


def _field_value(value, row: dict):
    from rlhf_lint.frameworks.hf import coerce, mapped

    out = mapped(coerce(value, row["type"]), row)
    return UNKNOWN if out is None else out


def _given(command: "Command") -> dict:
    """name -> (text or UNKNOWN or True for a bare switch, path, span, origin) of every flag, the last one winning."""
    out = {}
    for arg in command.args:
        name = arg.flag.lstrip("-").replace("-", "_")
        word = arg.value
        if word is None:
            out[name] = (True, command.path, arg.flag_span, arg.flag)
        elif len(arg.values) > 1 and all(w.known for w in arg.values):
            out[name] = (",".join(w.text for w in arg.values), word.path, word.span, word.origin or arg.flag)
        else:
            out[name] = (word.text if word.known else UNKNOWN, word.path, word.span, word.origin or arg.flag)
    return out


def interpret(command: "Command", source: "Source", project) -> list[Job]:
    from rlhf_lint.frameworks import hf
    from rlhf_lint.frameworks.launchers import _topology, swift_script_command

    settings = Settings()
    assumptions: list[str] = []
    entry = command.entry
    script = command.launcher not in ("swift", "swift-megatron")  # swift/cli/sft.py under accelerate, torchrun
    sub = swift_script_command(entry.text) if script else entry.text.replace("_", "-")
    megatron = command.launcher == "swift-megatron"
    program = f"{'megatron' if megatron else 'swift'} {sub}"
    settings.add(Setting("job.entry", program, entry.path, entry.span, entry.origin))
    settings.add(Setting("framework", "swift", command.path, command.span))
    table = arguments()
    label, row, note = release_row(project)
    argfile, entries, unread = _read_argument_file(command, project, table["argument_file"], label)
    # parse_yaml_args sets the argument file's ENV before get_torchrun_args reads NPROC_PER_NODE and NNODES
    command.env.update(_env_words(command, argfile, entries, table["argument_file"]))
    _topology(command, settings, assumptions, source, project)
    if script and command.launcher == "accelerate":
        from rlhf_lint.frameworks.launchers import accelerate_launch_settings

        accelerate_launch_settings(command, settings)
    line = source.position(command.span.start).line if command.path == source.path else 0
    job = Job(name=f"{os.path.basename(command.path)}:{line} {program}", path=command.path, span=command.span,
              framework="swift", settings=settings, assumptions=assumptions, hardware=dict(command.hardware))
    given = _given(command)
    if unread:
        job.assumptions.append(unread)
    # parse_yaml_args serves `megatron` too (cli/main.py cli_main)
    given = {**_argument_given(command, job, argfile, entries, table["argument_file"]), **given}  # flags win
    if "model" in given and isinstance(given["model"][0], str):
        value, path, span, origin = given["model"]
        settings.add(Setting("model.policy.path", value, path, span, origin))
    elif "model" in given and given["model"][0] is UNKNOWN:  # `--model $ROOT/Qwen2.5-7B`: the known end names it
        word = next((a.value for a in reversed(command.args) if a.flag.lstrip("-") == "model" and a.value), None)
        settings.add(Setting("model.policy.path", UNKNOWN, *given["model"][1:], tail=word.suffix if word else ""))
    if megatron:
        settings.add(Setting("train.strategy", "megatron", entry.path, entry.span,
                             f"`{program}`: ms-swift's Megatron-Core path ({table['megatron_commands']['source']})"))
        _megatron(settings, job, given, row, label, note, sub, table)
        return [job]
    if note:
        assumptions.append(note)
    command_row = row["commands"]["rlhf" if sub == "rlhf" else "sft"]
    defaults = command_row["fields"]
    value_of = _values(given, defaults, label)

    rl_only = set(table["rl_only_fields"]["names"])
    for name, field in table["fields"].items():
        if name == "model":
            continue
        found = given.get(name) if name in rl_only else value_of(name)
        if found is None or found[0] is None:
            continue
        value, path, span, origin = found
        typed = _field_value(value, field)
        if typed is UNKNOWN and field["type"] == "bool" and value is True:
            typed = True
        settings.add(Setting(field["key"], typed, path, span, origin))
    _job_type(settings, job, given, value_of, sub, table)
    _tuner(settings, job, given, value_of, table)
    _quantization(settings, job, given, table)
    _deepspeed(settings, job, given, row, label)
    _fsdp(settings, job, given, row)
    _length(settings, job, given, table)
    _dtype(settings, given, table)
    hw = project.config.hardware_for(command.hardware) if project is not None and \
        getattr(project, "config", None) is not None else None
    _layout(settings, job, table, getattr(hw, "gpus_per_node", None))
    _task_type(settings, given, table)
    hf._derive(settings, "hf", command.path)
    if script:
        hf._accelerate_plugin(job, project)  # an accelerate config's DeepSpeed or FSDP plugin
    hf._sharding(settings, command.path)
    note = hf._precision_and_defaults(settings, "hf")
    if note:
        assumptions.append(note)
    settings.add(Setting("hf.certain", True, command.path, None))
    return [job]


def _values(given: dict, defaults: dict, label: str):
    """name -> (value, path, span, origin) as given, else the release default (path None), else None."""
    def value_of(name: str):
        if name in given:
            return given[name]
        if name in defaults:
            d = defaults[name]
            return (d["default"], None, None, f"ms-swift {label} default {name} {d['default']} ({d['source']})")
        return None

    return value_of


def _megatron(settings: Settings, job: Job, given: dict, row: dict, label: str, note: str | None, sub: str,
              table: dict) -> None:
    """`megatron sft|pt|rlhf`: the layout, recompute, optimizer and batch fields (megatron_fields), the release's
    Megatron defaults for what the launch leaves unset (releases.json megatron_commands)."""
    spec = table["megatron_commands"]
    command_row = (row.get("megatron_commands") or {}).get("rlhf" if sub == "rlhf" else "sft")
    entry = job.settings.get("job.entry")
    if command_row is None:
        settings.add(Setting("job.unmodelled", f"`megatron {sub}` of ms-swift {label} (no Megatron argument defaults "
                                               f"in the tables)", entry.path, entry.span))
        return
    if note:
        job.assumptions.append(note)
    value_of = _values(given, command_row["fields"], label)
    for name, field in table["megatron_fields"].items():
        found = value_of(name)
        if found is None or found[0] is None:
            continue
        value, path, span, origin = found
        typed = _field_value(value, field)
        settings.add(Setting(field["key"], typed, path, span, origin))
    optimizer = value_of("optimizer")
    if optimizer is not None and optimizer[0] not in spec["optimizers"]["modelled"]:
        name = optimizer[0] if isinstance(optimizer[0], str) else "?"
        settings.add(Setting("job.unmodelled", f"Megatron optimizer {name}", optimizer[1], optimizer[2]))
    _job_type(settings, job, given, value_of, sub, table)
    # Megatron-SWIFT trained every parameter until its tuner fields came (3.7): full unless a release says
    _tuner(settings, job, given, value_of, table, default="full")
    _megatron_dtype(settings, given, spec)
    _task_type(settings, given, table)


def _task_type(settings: Settings, given: dict, table: dict) -> None:
    task = given.get("task_type")
    if task is not None and task[0] in table["task_types"]["without_lm_logits"]:
        settings.add(Setting("model.lm_logits", False, task[1], task[2],
                             f"task_type {task[0]}: a classification / embedding head, no vocabulary logits"))


def _megatron_dtype(settings: Settings, given: dict, spec: dict) -> None:
    """The weights' dtype: --fp16 / --bf16 as given, else torch_dtype, else the checkpoint's (bf16)."""
    from rlhf_lint.frameworks.hf import coerce

    for flag, dtype in (("fp16", "fp16"), ("bf16", "bf16")):
        if flag in given and coerce(given[flag][0], "bool") is True:
            settings.add(Setting("precision.param_dtype", dtype, given[flag][1], given[flag][2], f"--{flag}"))
            return
    loaded = settings.get("hf.torch_dtype")
    if loaded is not None and loaded.value in ("bf16", "fp16", "fp32"):
        settings.add(Setting("precision.param_dtype", loaded.value, loaded.path, loaded.span, "torch_dtype"))
        return
    settings.add(Setting("precision.param_dtype", "bf16", None, None,
                         f"{spec['dtype_unset']['note']} ({spec['dtype_unset']['source']})"))


def _job_type(settings: Settings, job: Job, given: dict, value_of, sub: str, table: dict) -> None:
    entry = job.settings.get("job.entry")
    if sub != "rlhf":
        settings.add(Setting("job.type", table["commands"]["train"][sub], entry.path, entry.span, f"swift {sub}"))
        return
    found = value_of("rlhf_type")
    kind = found[0] if found is not None else "dpo"
    row = table["rlhf_types"]["types"].get(kind) if isinstance(kind, str) else None
    path, span = (found[1], found[2]) if found is not None else (None, None)
    if row is None:
        settings.add(Setting("job.unmodelled", f"rlhf_type {kind if isinstance(kind, str) else '(not known)'}",
                             path, span))
        return
    settings.add(Setting("job.type", row["job_type"], path, span, found[3] if found else ""))
    if "unmodelled" in row:
        settings.add(Setting("job.unmodelled", row["unmodelled"], path, span))


def _tuner(settings: Settings, job: Job, given: dict, value_of, table: dict, default: str = "lora") -> None:
    """full / LoRA from tuner_type (train_type before 4.0); the reference model DPO and KTO load with full tuning.
    ``default``: the tuner when neither the launch nor the release's defaults name one."""
    names = table["tuner_fields"]["names"]
    found = next((given[n] for n in names if n in given), None) or next(
        (value_of(n) for n in names if value_of(n) is not None and value_of(n)[0] is not None), None)
    tuner = found[0] if found is not None else default
    path, span, origin = (found[1], found[2], found[3]) if found is not None else (None, None, "")
    kind = table["tuners"]["kinds"].get(tuner) if isinstance(tuner, str) else None
    if kind is None:
        settings.add(Setting("job.unmodelled", f"ms-swift tuner_type {tuner if isinstance(tuner, str) else '?'}",
                             path, span))
        return
    if kind == "full":
        settings.add(Setting("train.lora_rank", 0, path, span, origin or "tuner_type full"))
    for flag, spec in table["unmodelled_flags"]["flags"].items():
        value = given.get(flag, (False,))[0]
        if value is True or value is UNKNOWN or (
                isinstance(value, str) and value.strip().lower() not in ("", "0", "false", "none")):
            settings.add(Setting("job.unmodelled", spec["what"], *given[flag][1:3]))
    kind_type = str(settings.value("job.type", ""))
    rlhf = table["rlhf_types"]["types"]
    wants_ref = any(r.get("ref_when_full") and r["job_type"] == kind_type for r in rlhf.values())
    if kind_type in {r["job_type"] for r in rlhf.values()}:
        # swift sets job roles itself: the reference copy only where rlhf_args.py loads one
        job.roles = ("policy", "ref") if wants_ref and kind == "full" else ("policy",)
        if wants_ref and kind == "lora":
            job.assumptions.append(f"{kind_type} with LoRA: the reference is the model with its adapter disabled, "
                                   f"no second copy ({table['rlhf_types']['source'].split(';')[0]})")


def _quantization(settings: Settings, job: Job, given: dict, table: dict) -> None:
    method = given.get("quant_method")
    if settings.get("train.quantization") is None or method is None:
        return
    if isinstance(method[0], str) and method[0] not in table["quant_methods"]:
        job.assumptions.append(f"quant_method {method[0]}: its weights are sized as bitsandbytes' of the same bits")


def _deepspeed(settings: Settings, job: Job, given: dict, row: dict, label: str) -> None:
    """`--deepspeed zero0..zero3_offload`: the preset's stage and offload; any other value is a ds_config path
    (or JSON text) the project reads like any launch's."""
    found = given.get("deepspeed")
    if found is None:
        return
    value, path, span, origin = found
    if value is UNKNOWN or not isinstance(value, str):
        settings.add(Setting("deepspeed.config_unread", "(its value is not known)", path, span,
                             "the --deepspeed value is not known"))
        return
    preset = row["deepspeed_presets"].get(value)
    if preset is None:
        if value.lstrip().startswith("{"):
            settings.add(Setting("deepspeed.config_unread", "(inline JSON)", path, span, "--deepspeed JSON text"))
        else:
            settings.add(Setting("deepspeed.config_path", value, path, span, origin))
        return
    why = f"--deepspeed {value}: ms-swift {label}'s preset ({preset['source']})"
    settings.add(Setting("zero.stage", int(preset["stage"]), path, span, why))
    settings.add(Setting("offload.optimizer", preset["offload_optimizer"], path, span, why))
    settings.add(Setting("offload.param", preset["offload_param"], path, span, why))
    if isinstance(preset.get("overlap_comm"), bool):
        settings.add(Setting("deepspeed.overlap_comm", preset["overlap_comm"], path, span, why))
    for key in ("deepspeed.offload_optimizer_pin_memory", "deepspeed.offload_param_pin_memory"):
        if isinstance(preset.get(key.partition(".")[2]), bool):
            settings.add(Setting(key, preset[key.partition(".")[2]], path, span, why))
    from rlhf_lint.frameworks.deepspeed import zero_sizes

    sizes, auto = zero_sizes(preset.get)
    for key, elements in sizes.items():
        settings.add(Setting(key, elements, path, span, why))
    if auto:
        settings.add(Setting("deepspeed.auto_sizes", auto, path, span, why))


def _fsdp(settings: Settings, job: Job, given: dict, row: dict) -> None:
    from rlhf_lint.frameworks import hf

    found = given.get("fsdp")
    if found is None or settings.get("zero.stage") is not None or settings.get("deepspeed.config_path") is not None:
        return
    value, path, span, origin = found
    preset = row["fsdp_presets"].get(value) if isinstance(value, str) else None
    text = preset["fsdp"] if preset is not None else value
    if isinstance(text, str) and hf._fsdp_options(text):
        where = f"--fsdp {value}" + (f" (preset {preset['source']})" if preset else "")
        hf._add_trainer_fsdp(settings, job.assumptions, text, path, span, where)
        if preset is not None and preset.get("fsdp_version") == 2 and settings.value("train.strategy") == "fsdp":
            settings.add(Setting("train.strategy", "fsdp2", path, span, where))
        if preset is not None and preset.get("activation_checkpointing") is True:
            settings.add(Setting("train.gradient_checkpointing", True, path, span, f"{where}: activation_checkpointing"))
        return
    settings.add(Setting("train.strategy", UNKNOWN, path, span, "--fsdp names a config the linter does not read"))
    job.assumptions.append(f"--fsdp {value if isinstance(value, str) else '?'}: an FSDP config file, not read")


def _length(settings: Settings, job: Job, given: dict, table: dict) -> None:
    settings.add(Setting("seq.max_len_truncates", True, None, None, table["max_length_unset"]["note"]))
    settings.add(Setting("batch.pairs_packed_together", True, None, None,
                         f"ms-swift packs each pair whole ({table['packing_pairs']['source'].split(' ')[0]})"))
    if settings.get("seq.max_len") is None:
        job.assumptions.append("max_length unset: ms-swift truncates at the model's max_model_len; the figures use "
                               "the estimate's default length, as a bound")


def _dtype(settings: Settings, given: dict, table: dict) -> None:
    loaded = settings.get("hf.torch_dtype")
    rule = table["mixed_precision_from_dtype"]
    if loaded is not None and settings.get("hf.mixed_precision") is None and loaded.value in rule["map"]:
        settings.add(Setting("hf.mixed_precision", rule["map"][loaded.value], loaded.path, loaded.span,
                             f"bf16/fp16 unset: ms-swift sets them from torch_dtype {loaded.value} "
                             f"({rule['source']})"))
    if loaded is None and settings.get("train.quantization") is None:
        settings.add(Setting("hf.torch_dtype", "auto", None, None,
                             "ms-swift loads the model config's torch_dtype when none is given "
                             f"({table['fields']['torch_dtype']['source'].split(' ')[0]})"))


def _layout(settings: Settings, job: Job, table: dict, node_gpus: int | None) -> None:
    """A process that sees at least twice its share of the node's GPUs splits its model over them (is_mp):
    CUDA_VISIBLE_DEVICES says how many it sees, else the hardware profile's gpus-per-node."""
    per = settings.value("topology.gpus_per_node")
    visible = settings.value("topology.visible_gpus")
    if visible is None and node_gpus:
        visible = node_gpus
    source = table["device_map"]["source"].split(" ")[0]
    if type(per) is not int or per <= 0:
        return
    plain = settings.get("deepspeed.config_path") is None and settings.get("zero.stage") is None \
        and settings.get("train.strategy") is None
    if type(visible) is int and visible // per >= 2:
        if not plain:  # DeepSpeed and FSDP refuse a device_map: the run stops before it sizes anything
            settings.add(Setting("job.unmodelled", f"a model split over {visible // per} GPUs per process by "
                                                   f"device_map beside DeepSpeed or FSDP ({source})", None, None))
            return
        seen = "CUDA_VISIBLE_DEVICES" if settings.value("topology.visible_gpus") is not None else \
            "the hardware profile's gpus-per-node"
        settings.add(Setting("topology.model_split", visible // per, None, None,
                             f"each process sees {visible // per} GPUs ({seen}: {visible} for {per} processes) and "
                             f"splits its model over them by device_map ({source})"))
        return
    if visible is None and per == 1 and plain:
        # DeepSpeed and FSDP refuse device_map (sft_args.py _init_deepspeed / _init_fsdp): only a plain run splits
        job.settings.add(Setting("topology.layout_guess",
                                 "each process holds the whole model (without CUDA_VISIBLE_DEVICES, a process that "
                                 "sees several GPUs splits it over them by device_map)", None, None, source))


def _read_argument_file(command: "Command", project, spec: dict, label: str) -> tuple:
    """(file, its top-level entries, why it is not read) for the argument file `swift sft FILE.yaml|.json` names
    (ms-swift 4.1+; parse_yaml_args: yaml.safe_load, or json.load for a .json); (None, None, None) without one."""
    from rlhf_lint.frameworks.deepspeed import version_tuple
    from rlhf_lint.frameworks.hf import recipe_entries
    from rlhf_lint.frameworks.jobs import not_checked

    word = command.positionals[0] if command.positionals else None
    if word is None or not word.known or not word.text.endswith((".yaml", ".yml", ".json")):
        return None, None, None
    if version_tuple(label) < version_tuple(spec["since"]):
        return None, None, f"ms-swift {label} reads no argument file ({word.text}): from {spec['since']} on"
    target = project.resolve(command.path, word.text) if project is not None else None
    if target is None:
        return None, None, not_checked(word.text, "the ms-swift argument file")
    entries = recipe_entries(target)
    if entries is None:
        return None, None, f"the ms-swift argument file {word.text} is not a mapping rlhf-lint reads"
    return target, entries, None


def _argument_given(command: "Command", job: Job, argfile, entries: dict | None, spec: dict) -> dict:
    """The argument file's keys as _given's entries (its ENV aside: _env_words)."""
    from rlhf_lint.readers.yaml import node_span

    if argfile is None:
        return {}
    name = os.path.basename(argfile.path)
    out = {}
    for key, (value, _key_node, node) in entries.items():
        if key == "ENV":
            continue
        text = ",".join(str(v) for v in value) if isinstance(value, list) else value
        out[key] = (text, argfile.path, node_span(node), f"{key} in {name}")
    set_there = [k for k in spec["topology_env"] if k in _env_nodes(entries) and k not in command.env]
    if set_there:  # an ENV value that is no plain scalar: the processes it would set are not read
        job.settings.add(Setting("topology.layout_guess",
                                 f"the ENV of {name} ({', '.join(set_there)}) does not change the processes read "
                                 "from the launch", argfile.path, None, spec["source"].split(" ")[0]))
    return out


def _env_nodes(entries: dict | None) -> dict:
    """name -> value node of the argument file's top-level ENV mapping."""
    import yaml

    env = (entries or {}).get("ENV")
    if env is None or not isinstance(env[2], yaml.MappingNode):
        return {}
    return {k.value: v for k, v in env[2].value if isinstance(k, yaml.ScalarNode)}


def _env_words(command: "Command", argfile, entries: dict | None, spec: dict) -> dict:
    """The GPU-selecting variables (NPROC_PER_NODE, NNODES, CUDA_VISIBLE_DEVICES) the argument file's ENV sets and
    the launch does not: ms-swift's parse_yaml_args exports each one the environment lacks, as str(value)."""
    import yaml

    from rlhf_lint.readers.commands import Word
    from rlhf_lint.readers.yaml import node_span

    if argfile is None:
        return {}
    name = os.path.basename(argfile.path)
    return {key: Word(str(node.value), node_span(node), argfile.path, origin=f"ENV {key} in {name}")
            for key, node in _env_nodes(entries).items()
            if key in spec["topology_env"] and key not in command.env and isinstance(node, yaml.ScalarNode)}
