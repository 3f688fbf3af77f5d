"""Hugging Face Trainer launches: TRL (`trl grpo ...`, `-m trl.scripts.X`, scripts given `--config recipe.yaml`),
LLaMA-Factory (`llamafactory-cli train x.yaml`), open-r1 recipes and plain `train.py --deepspeed ds.json` scripts.

Their TrainingArguments come from command-line flags and the recipe YAML a launch names (flags win, as in TRL's
TrlParser and LLaMA-Factory's read_args); each field maps to a common setting (schemas/hf/training_args.json), its
span kept. A recipe YAML no launch of the project names is a job of its own (its world size left open).
"""
from __future__ import annotations

import functools
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rlhf_lint.frameworks.hf_script import ScriptFacts
    from rlhf_lint.readers.commands import Command
    from rlhf_lint.readers.source import Source

from rlhf_lint.frameworks.jobs import Job, job_builder, not_checked
from rlhf_lint.model import UNKNOWN, Setting, Settings
from rlhf_lint.startup.lazyre import lazy_compile

TRUE = {"true", "yes", "1", "on"}
FALSE = {"false", "no", "0", "off"}


def table() -> dict:
    from rlhf_lint.schemas import load

    return load("hf/training_args.json")


def coerce(value, kind: str):
    """A flag's text or a YAML scalar as the field's type; UNKNOWN when it is not one."""
    if value is UNKNOWN or value is None:
        return UNKNOWN
    if kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        return True if text in TRUE else False if text in FALSE else UNKNOWN
    if kind == "int":
        if isinstance(value, bool):
            return UNKNOWN
        if isinstance(value, int):
            return value
        text = str(value).strip()
        return int(text) if text.isascii() and text.isdigit() else UNKNOWN
    if kind == "float":
        if isinstance(value, bool):
            return UNKNOWN
        try:
            return float(value)
        except (TypeError, ValueError):
            return UNKNOWN
    if kind == "list":
        if isinstance(value, (list, tuple)):
            return tuple(str(v) for v in value)
        return tuple(p.strip() for p in str(value).split(",") if p.strip())
    return value if isinstance(value, str) else UNKNOWN


# -- recipe YAML ----------------------------------------------------------------------------------------------------
def recipe_entries(source: "Source") -> dict | None:
    """{field: (value, key node, value node)} of a YAML's (or a small JSON's) top-level mapping, or None when it is
    no mapping. A recipe is a file a launch names, so it is read whatever its keys (named_yaml_docs)."""
    import yaml

    from rlhf_lint.readers.yaml import named_yaml_docs

    docs = named_yaml_docs(source)
    if not docs or not isinstance(docs[0], yaml.MappingNode):
        return None
    loader = yaml.SafeLoader("")  # one constructor for every scalar of the file (one per scalar costs ~0.2 ms)

    def _scalar(node):
        try:
            return loader.construct_object(node, deep=True)
        except yaml.YAMLError:
            return UNKNOWN

    out = {}
    for k, v in docs[0].value:
        if isinstance(k, yaml.ScalarNode):
            if isinstance(v, yaml.ScalarNode):
                value = _scalar(v)
            elif isinstance(v, yaml.SequenceNode):
                value = [_scalar(i) for i in v.value if isinstance(i, yaml.ScalarNode)]
            else:
                value = UNKNOWN
            out[k.value] = (value, k, v)
    loader.dispose()
    return out


def recipe_kind(entries: dict | None) -> str | None:
    """"trl" | "llamafactory" | "hf" when the YAML is a TrainingArguments recipe, else None."""
    if not entries or "distributed_type" in entries or "compute_environment" in entries:
        return None
    sig = table()["recipe_signature"]
    if not any(k in entries for k in sig["model"]) or not any(k in entries for k in sig["keys"]):
        return None
    if any(k in entries for k in sig["llamafactory_only"]):
        return "llamafactory"
    if any(k in entries for k in sig["trl_only"]):
        return "trl"
    return "hf"


def mapped(typed, row: dict):
    """A typed field value through its row's map (map_default for the values the map does not list); None when
    neither says. A row without a map, or an unknown value, passes as it is."""
    mapping = row.get("map")
    if mapping is None or typed is UNKNOWN:
        return typed
    return mapping.get(str(typed).lower(), row.get("map_default"))


def _add_field(settings: Settings, name: str, value, path, span, origin: str = "", tail: str = "") -> None:
    row = table()["fields"].get(name)
    if row is None:
        return
    typed = coerce(value, row["type"])
    out = mapped(typed, row)
    if out is not None:
        typed = out
    elif row["type"] == "bool" and typed is False:
        return  # load_in_4bit: false says nothing about the other quantization flags
    else:
        typed = "none" if row["type"] == "int" else UNKNOWN
    if typed == "no" and settings.value(row["key"]) in ("bf16", "fp16"):
        return  # `fp16: false` beside `bf16: true` leaves bf16 on
    if name == "stage" and isinstance(typed, str):
        typed = {"pt": "pretrain"}.get(typed, typed)
    raw = value if isinstance(value, str) else None
    settings.add(Setting(row["key"], typed, path, span, origin, raw=raw, tail=tail if typed is UNKNOWN else ""))


def _add_recipe(settings: Settings, entries: dict, path: str) -> None:
    from rlhf_lint.readers.yaml import node_span

    for name, (value, _key, node) in entries.items():
        _add_field(settings, name, value, path, node_span(node), f"{name} in {os.path.basename(path)}")


def _flag_name(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _add_flags(settings: Settings, command: "Command") -> set[str]:
    """Every TrainingArguments flag of the command as a setting; the names given."""
    fields = table()["fields"]
    given = set()
    for arg in command.args:
        name = _flag_name(arg.flag)
        negated = name.startswith("no_") and name[3:] in fields and fields[name[3:]]["type"] == "bool"
        if negated:
            name = name[3:]
        if name not in fields:
            continue
        given.add(name)
        word = arg.value
        if fields[name]["type"] == "bool" and (word is None or (word.known and word.text.lower() not in TRUE | FALSE)):
            _add_field(settings, name, not negated, command.path, arg.flag_span, arg.flag)
            continue
        if word is None:
            continue
        _add_field(settings, name, word.text if word.known else UNKNOWN, word.path, word.span, word.origin,
                   word.suffix)
    # llamafactory-cli train x.yaml key=value (OmegaConf overrides)
    for word in command.positionals:
        if word.known and "=" in word.text and not word.text.startswith("="):
            name, _, value = word.text.partition("=")
            if name in fields:
                given.add(name)
                _add_field(settings, name, value, word.path, word.span, word.origin)
    return given


def _add_script(settings: Settings, facts: "ScriptFacts", path: str) -> None:
    """The literal arguments a training script builds in Python (rlhf_lint.frameworks.hf_script)."""
    for name, (value, span, origin) in facts.entries.items():
        _add_field(settings, name, value, path, span, origin)
    if facts.job_type is not None and settings.get("job.type") is None:
        settings.add(Setting("job.type", facts.job_type, path, facts.type_span,
                             "the trainer or config the script calls"))


def _release_defaults(settings: Settings, assumptions: list, project, kind: str) -> None:
    """What the launch leaves unset, from the TRL release's config (or TrainingArguments) defaults."""
    from rlhf_lint.frameworks.trl_defaults import unset_defaults

    filled, what, note = unset_defaults(settings, project, kind)
    for name, value in filled:
        _add_field(settings, name, value, None, None, what)
    if note:
        assumptions.append(note)


def _script_fields(facts: "ScriptFacts | None", path: str) -> dict:
    """A LoraConfig the script applies is TRL's use_peft true: {field: (value, path, span)} as _finetuning takes."""
    if facts is None or "lora_r" not in facts.entries:
        return {}
    return {"use_peft": (True, path, facts.entries["lora_r"][1])}


def _derive(settings: Settings, framework: str, path: str) -> None:
    """Settings the fields imply: the training dtype, LoRA rank defaults."""
    mp = settings.get("hf.mixed_precision")
    if mp is not None and mp.value in ("bf16", "fp16"):
        settings.add(Setting("precision.param_dtype", mp.value, mp.path, mp.span, mp.value))


def _finetuning(settings: Settings, framework: str, fields_given: dict) -> None:
    """LoRA or full: TRL's use_peft (default false, lora_r 16), LLaMA-Factory's finetuning_type (default lora,
    lora_rank 8)."""
    rank = settings.get("train.lora_rank")
    if framework == "trl":
        use_peft = fields_given.get("use_peft")
        if use_peft is None or use_peft[0] is False:
            settings.add(Setting("train.lora_rank", 0, use_peft[1] if use_peft else None,
                                 use_peft[2] if use_peft else None, "TRL default use_peft false: full fine-tuning"))
        elif use_peft[0] is True and rank is None:
            settings.add(Setting("train.lora_rank", 16, use_peft[1], use_peft[2], "TRL ModelConfig default lora_r 16"))
    elif framework == "llamafactory":
        if settings.get("train.gradient_checkpointing") is None:
            settings.add(Setting("train.gradient_checkpointing", True, None, None,
                                 "LLaMA-Factory default (disable_gradient_checkpointing: false)"))
        ft = fields_given.get("finetuning_type")
        kind = ft[0] if ft is not None else "lora"
        if kind in ("full", "freeze"):
            settings.add(Setting("train.lora_rank", 0, ft[1], ft[2], f"finetuning_type {kind}"))
        elif kind == "lora" and rank is None:
            settings.add(Setting("train.lora_rank", 8, ft[1] if ft else None, ft[2] if ft else None,
                                 "LLaMA-Factory default lora_rank 8"))
        elif kind == "oft" and rank is None:
            # PEFT's OFT adapters (adapter.py routes oft with lora): block-diagonal rotations of d x (b - 1) / 2
            # parameters per matrix, about what LoRA rank 8 adds (16 d for a square one): only adapters train
            settings.add(Setting("train.lora_rank", 8, ft[1], ft[2],
                                 "finetuning_type oft: PEFT OFT adapters, sized as LoRA rank 8"))
        _methods(settings, fields_given)
        trains = fields_given.get("do_train")
        runs = [fields_given.get(n) for n in ("do_predict", "do_eval")]
        if (trains is None or trains[0] is False) and any(r is not None and r[0] is True for r in runs):
            # workflow.py trains only with do_train and loads the model frozen otherwise (load_model(is_trainable=
            # do_train)): a predict or eval run, which the training estimate does not describe
            where = next(r for r in runs if r is not None and r[0] is True)
            settings.add(Setting("train.strategy", "inference", where[1], where[2],
                                 "do_predict / do_eval without do_train: no optimizer, no gradients"))


def _methods(settings: Settings, given: dict) -> None:
    """LLaMA-Factory's freeze tuning, GaLore, APOLLO and BAdam as settings: for each method that is on, what it sets
    and its fields as given or at LLaMA-Factory's defaults (schemas/hf/training_args.json llamafactory_methods)."""
    for method in table()["llamafactory_methods"]["methods"].values():
        switches = [given.get(name) for name in method["when"]]
        if not all(s is not None and s[0] == want for s, want in zip(switches, method["when"].values())):
            continue
        _value, path, span = switches[0]
        for row in method.get("set", ()):
            settings.add(Setting(row["key"], row["value"], path, span, row["why"]))
        for name, row in method["fields"].items():
            if name in given:
                value, fpath, fspan = given[name]
                settings.add(Setting(row["key"], value, fpath, fspan, name))
            else:
                default = row["default"]
                settings.add(Setting(row["key"], tuple(default) if isinstance(default, list) else default, path, span,
                                     f"LLaMA-Factory default {name} {default}"))


@functools.lru_cache(maxsize=1)
def _extra_kinds() -> dict:
    """name -> type of the fields that are no setting themselves but decide others: TRL's use_peft, LLaMA-Factory's
    finetuning_type and its methods' switches and fields."""
    kinds = {"use_peft": "bool", "finetuning_type": "str", "do_train": "bool", "do_predict": "bool", "do_eval": "bool"}
    for method in table()["llamafactory_methods"]["methods"].values():
        kinds.update({name: "bool" if type(want) is bool else "str" for name, want in method["when"].items()})
        kinds.update({name: row["type"] for name, row in method["fields"].items()})
    return kinds


def _extra_fields(entries: dict | None, command: "Command | None", path: str) -> dict:
    """The fields of _extra_kinds the recipe, the flags and key=value overrides give (flags and overrides win, as in
    LLaMA-Factory's read_args): name -> (value, path, span)."""
    from rlhf_lint.readers.yaml import node_span

    kinds = _extra_kinds()
    out = {}
    for name, (value, _k, node) in (entries or {}).items():
        if name in kinds:
            out[name] = (coerce(value, kinds[name]), path, node_span(node))
    if command is None:
        return out
    for arg in command.args:
        name = _flag_name(arg.flag)
        kind = kinds.get(name)
        if kind is None:
            continue
        word = arg.value
        if kind == "bool" and (word is None or not word.known or word.text.lower() not in TRUE | FALSE):
            out[name] = (True, command.path, arg.flag_span)
        elif word is not None:
            out[name] = (coerce(word.text if word.known else UNKNOWN, kind), word.path, word.span)
    for word in command.positionals:  # llamafactory-cli train x.yaml key=value (OmegaConf overrides)
        if word.known and "=" in word.text and not word.text.startswith("="):
            name, _, value = word.text.partition("=")
            if name in kinds:
                out[name] = (coerce(value, kinds[name]), word.path, word.span)
    return out


def _type_from_fields(settings: Settings, entries: dict | None, command: "Command | None", path: str) -> None:
    """job.type grpo when nothing else typed the job and the recipe or the flags hold a field only GRPOConfig (or
    open-r1's GRPO script) declares (schemas/hf/training_args.json job_type_fields)."""
    if settings.get("job.type") is not None:
        return
    from rlhf_lint.readers.yaml import node_span

    grpo = table()["job_type_fields"]["grpo"]
    for name in grpo:
        if entries and name in entries:
            settings.add(Setting("job.type", "grpo", path, node_span(entries[name][1]),
                                 f"{name}: a field only GRPOConfig declares"))
            return
    for arg in (command.args if command is not None else ()):
        if _flag_name(arg.flag) in grpo:
            settings.add(Setting("job.type", "grpo", command.path, arg.flag_span,
                                 f"{arg.flag}: a field only GRPOConfig declares"))
            return


def _grpo_liger(settings: Settings, entries: dict | None, command: "Command | None") -> None:
    """GRPO computes its log-probs from model(...).logits without labels, and Liger's patched forward then builds the
    full logits (liger_kernel/transformers/model/qwen2.py lce_forward: the fused loss only when training with
    labels): use_liger_kernel does not fuse GRPO's loss; only GRPOConfig.use_liger_loss does."""
    fused = settings.get("train.fused_loss")
    if settings.value("job.type") != "grpo" or fused is None or fused.value is not True:
        return
    names = set(entries or ()) | {_flag_name(a.flag) for a in (command.args if command is not None else ())}
    if "use_liger_loss" in names:
        return
    settings.add(Setting("train.fused_loss", False, fused.path, fused.span,
                         "use_liger_kernel: GRPO passes no labels, so Liger's forward still builds the full logits"))


def _default_loaded_dtype(settings: Settings, project, kind: str, script_loads: bool) -> None:
    """The dtype the model loads in when the launch names none (schemas/hf/load_dtype.json): TRL's when TRL loads
    it (ModelConfig, a trainer given a model id) and its release says one, else transformers' default for the major
    releases the repository admits: fp32 before 5, the checkpoint's ("auto") from 5. Admitting both, or pinning
    nothing, leaves it open: "auto" here, which the estimate spans from fp32 down to 16 bits."""
    if settings.get("hf.torch_dtype") is not None or settings.get("train.quantization") is not None:
        return
    from packaging.specifiers import SpecifierSet

    from rlhf_lint.schemas import load

    table = load("hf/load_dtype.json")
    if kind == "trl" and not script_loads:
        from rlhf_lint.frameworks.trl_defaults import release_of, targeted_version

        label, _exact = release_of(targeted_version(project))
        row = next((r for r in table["trl"] if SpecifierSet(r["versions"]).contains(label)), None)
        if row is not None and row["default"] is not None:
            settings.add(Setting("hf.torch_dtype", row["default"], None, None,
                                 f"TRL {label} loads the model in {row['default']} when no dtype is given "
                                 f"({row['source'].split(' ')[0]})"))
            return
    majors = _transformers_majors(project)
    if majors and max(majors) < 5:
        return  # transformers 4 loads fp32: the estimate's reading of an unset dtype
    why = ("transformers 5 loads the checkpoint's dtype when none is given" if majors and min(majors) >= 5 else
           "transformers not held below 5: 4.x loads fp32, 5.x the checkpoint's dtype when none is given")
    settings.add(Setting("hf.torch_dtype", "auto", None, None, why))


def _transformers_majors(project) -> frozenset[int] | None:
    """The major transformers releases the repository targets: a configured version, else every one its pins admit
    (pooled over the install sets, not the one pin target_version prefers: two sets that disagree leave the dtype
    open rather than make its verdict an error)."""
    from rlhf_lint.frameworks.edge import target_version

    target = target_version(project, "transformers") if project is not None else None
    major = target.version.split(".")[0] if target is not None and target.how == "config" else ""
    if major.isdigit():
        return frozenset({int(major)})
    if project is None or not project.declares_pins():
        return None
    from rlhf_lint.frameworks.versions import admitted_majors

    try:
        return admitted_majors(project, "transformers")
    except Exception:  # a pin file the pin reader cannot use must not break the estimate
        return None


def _unmixed_dtype(settings: Settings) -> None:
    """bf16 and fp16 both off (as given, or a TRL / TrainingArguments default) and no DeepSpeed or accelerate
    precision: nothing autocasts, so the model computes in the dtype it was loaded in (fp32 when torch_dtype is unset,
    transformers' default before v5). torch_dtype auto (the checkpoint's, not recorded): fp32, with the 16-bit
    reading as the band's low end."""
    if settings.get("precision.param_dtype") is not None or settings.value("hf.mixed_precision") != "no" \
            or settings.get("deepspeed.config_path") is not None or settings.get("zero.stage") is not None:
        return
    loaded = settings.get("hf.torch_dtype")
    if loaded is None:
        settings.add(Setting("precision.param_dtype", "fp32", None, None,
                             "no mixed precision: the loaded dtype (fp32, torch_dtype unset)"))
    elif loaded.value in ("bf16", "fp16", "fp32"):
        settings.add(Setting("precision.param_dtype", loaded.value, loaded.path, loaded.span,
                             f"no mixed precision: the loaded dtype (torch_dtype {loaded.value})"))
    elif loaded.value == "auto":
        settings.add(Setting("precision.param_dtype", "fp32", loaded.path, loaded.span,
                             "no mixed precision: the checkpoint's dtype, fp32 at most"))
        _open_dtype(settings, loaded)


def _open_dtype(settings: Settings, loaded: Setting) -> None:
    if settings.get("precision.loaded_dtype_open") is None:
        settings.add(Setting("precision.loaded_dtype_open", "bf16", loaded.path, loaded.span,
                             f"{loaded.origin or 'torch_dtype auto'}: 16 bits at the band's low end"))


def _precision_and_defaults(settings: Settings, framework: str) -> str | None:
    """What every HF job ends with: the master and unmixed dtypes, then the defaults; _master_dtype's assumption."""
    note = _master_dtype(settings, framework)
    _unmixed_dtype(settings)
    _defaults(settings)
    return note


def _master_dtype(settings: Settings, framework: str) -> str | None:
    """Under DDP the HF Trainer trains the weights in the dtype they were loaded in and torch's AdamW keeps its
    moments in it (torch/optim/adamw.py: zeros_like(param)); nothing upcasts them. So torch_dtype is the master dtype
    there. DeepSpeed keeps its own fp32 master whatever it says, and accelerate's FSDP upcasts 16-bit parameters to
    fp32 when mixed precision is on (huggingface/accelerate@16cb6eb accelerator.py prepare_model, utils/fsdp_utils.py
    "FSDP upcast of low precision parameters"): neither changes. The assumption made, if any."""
    strategy = settings.value("train.strategy")
    if framework == "llamafactory":
        _llamafactory_master(settings, strategy)
        return None
    if framework not in ("trl", "hf") or strategy not in ("ddp", "fsdp", "fsdp2") \
            or settings.get("precision.master_dtype") is not None:
        return None
    loaded = settings.get("hf.torch_dtype")
    value = loaded.value if loaded is not None else None
    if strategy != "ddp":
        # FSDP: 16-bit weights are upcast to fp32 (the estimate's FSDP default) unless mixed precision is off
        if settings.value("precision.param_dtype") not in ("bf16", "fp16") and value in ("bf16", "fp16"):
            settings.add(Setting("precision.master_dtype", value, loaded.path, loaded.span,
                                 f"torch_dtype {value} under FSDP without mixed precision: no fp32 upcast"))
        return None
    if value in ("bf16", "fp16", "fp32"):
        settings.add(Setting("precision.master_dtype", value, loaded.path, loaded.span,
                             f"torch_dtype {value}: no DeepSpeed, so the weights train in the loaded dtype"))
        return None
    if value == "auto":
        _open_dtype(settings, loaded)
        return (f"torch_dtype auto ({loaded.origin or 'as given'}): the checkpoint's stored dtype, not recorded "
                f"here; fp32 weights and AdamW states in the figures, 16 bits at the low end of the band")
    return "torch_dtype unset: transformers 4 loads fp32, the fp32 weights are the master"


def _llamafactory_master(settings: Settings, strategy) -> None:
    """LLaMA-Factory upcasts the trainable parameters to fp32 (the estimate's default master) unless pure_bf16 or
    BAdam (precision.half_trainable; model/adapter.py init_adapter). Without DeepSpeed or FSDP torch's optimizer then
    updates the 16-bit parameters themselves: no master copy, gradients and moments in the compute dtype. DeepSpeed
    keeps its own fp32 partition whatever the module's dtype (stage_1_and_2.py single_partition_of_fp32_groups), and
    LLaMA-Factory refuses pure_bf16 under ZeRO-3 (hparams/parser.py), so only DDP changes."""
    half = settings.get("precision.half_trainable")
    if strategy != "ddp" or half is None or half.value is not True or settings.get("precision.master_dtype"):
        return
    dtype = settings.value("precision.param_dtype") or "bf16"
    settings.add(Setting("precision.master_dtype", dtype, half.path, half.span,
                         f"{half.origin or 'pure_bf16'}: no fp32 upcast, the optimizer updates the {dtype} weights"))


def _type_from_name(name: str) -> str | None:
    types = table()["trl_commands"]["types"]
    base = os.path.splitext(os.path.basename(name))[0].lower()
    if base in types:
        return types[base]
    for part in base.replace("-", "_").split("_"):
        if part in ("grpo", "dpo", "sft", "kto", "rloo", "orpo", "cpo", "ppo"):
            return part
    return None


# -- a launch ---------------------------------------------------------------------------------------------------------
# an import statement's names: a parenthesised list is bounded so that a hostile file cannot make each match scan on
_IMPORT = lazy_compile(r"^[ \t]*from[ \t]+(trl|transformers)(?:\.[\w.]+)?[ \t]+import[ \t]+(\([^)]{0,4000}\)|[^\n]*)",
                       re.MULTILINE)
MAX_SCRIPT_CHARS = 2_000_000  # a launched script read for its imports; a larger file is not scanned


def _trainer_fsdp(command: "Command"):
    """The Word of a `--fsdp` flag whose options are all TrainingArguments FSDPOption values, else None."""
    arg = command.last("--fsdp")
    if arg is None or arg.value is None or not arg.value.known:
        return None
    return arg.value if _fsdp_options(arg.value.text) else None


def _fsdp_options(text: str) -> bool:
    """Whether every word of a --fsdp value (or a recipe's fsdp field) is a TrainingArguments FSDPOption."""
    words = text.replace(",", " ").split()
    return bool(words) and all(w in table()["fsdp_options"]["options"] for w in words)


def _add_recipe_fsdp(settings: Settings, assumptions: list, entries: dict | None, path: str) -> None:
    """The `fsdp:` field of a recipe (TrainingArguments' own: a list or a string of FSDPOption values), read as the
    --fsdp flag is."""
    found = (entries or {}).get("fsdp")
    if found is None:
        return
    value, _key, node = found
    text = " ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else value
    if isinstance(text, str) and _fsdp_options(text):
        from rlhf_lint.readers.yaml import node_span

        _add_trainer_fsdp(settings, assumptions, text, path, node_span(node),
                          f"fsdp: {text} in {os.path.basename(path)}")


SRC_FSDP_EFFICIENT_ENV = ("https://github.com/huggingface/transformers/blob/v4.40.0/src/transformers/modeling_utils.py "
                          "(is_fsdp_enabled: ACCELERATE_USE_FSDP and FSDP_CPU_RAM_EFFICIENT_LOADING; from_pretrained "
                          "then loads on the meta device on every rank but local rank 0)")


def _efficient_loading_env(command: "Command", settings: Settings) -> None:
    """FSDP_CPU_RAM_EFFICIENT_LOADING set by the launch for a Trainer that shards with FSDP: only rank 0 reads the
    checkpoint into host RAM."""
    word = command.env.get("FSDP_CPU_RAM_EFFICIENT_LOADING")
    if word is None or settings.value("train.strategy") not in ("fsdp", "fsdp2") \
            or settings.get("train.fsdp_cpu_ram_efficient_loading") is not None:
        return
    value = word.text.strip().lower() in ("1", "true", "yes", "y", "on") if word.known else UNKNOWN
    settings.add(Setting("train.fsdp_cpu_ram_efficient_loading", value, word.path, word.span,
                         f"FSDP_CPU_RAM_EFFICIENT_LOADING in the launch's environment ({SRC_FSDP_EFFICIENT_ENV})"))


def _add_trainer_fsdp(settings: Settings, assumptions: list, text: str, path, span, where: str) -> None:
    """The FSDP settings a `--fsdp` value (or a recipe's `fsdp:`) implies: its sharding strategy (FULL_SHARD when it
    names none, accelerate's default) and offload (schemas/hf/training_args.json fsdp_options)."""
    options = table()["fsdp_options"]["options"]
    named = [options[w] for w in text.replace(",", " ").split()]
    strategy = next((o for o in named if o not in ("offload", "auto_wrap")), "FULL_SHARD")
    if _fsdp_sharding(settings, assumptions, strategy, where, path, span) and "offload" in named:
        _fsdp_offload(settings, path, span, where)


@functools.lru_cache(maxsize=1)
def _trl_script_patterns() -> tuple:
    """schemas/hf/training_args.json trl_scripts as patterns matching the end of a script path ({type}: a name)."""
    return tuple(re.compile(r"(?:^|/)" + re.escape(row["pattern"]).replace(re.escape("{type}"), r"(?P<type>[a-z0-9_]+)")
                            + "$") for row in table()["trl_scripts"]["paths"])


def _held_script(command: "Command", entry: str, project) -> "Source | None":
    """The launched Python script when the project holds it."""
    if project is None or not entry.endswith(".py"):
        return None
    return project.resolve(command.path, entry)


def _script_kind(entry: str, target) -> tuple[str | None, str | None]:
    """("trl" | "hf" | None, job type or None) of a launched Python script: a public TRL-based script by its path
    (schemas/hf/training_args.json trl_scripts), else the trainer the script imports when the project holds it
    (``target``; read as text, never imported)."""
    path = entry.replace("\\", "/")
    for pattern in _trl_script_patterns():
        found = pattern.search(path)
        if found and _type_from_name(found.group("type")):
            return "trl", _type_from_name(found.group("type"))
    text = getattr(target, "text", None)
    if not isinstance(text, str) or len(text) > MAX_SCRIPT_CHARS:
        return None, None
    imports = table()["script_imports"]
    kind, types = None, set()
    for package, names in _IMPORT.findall(text):
        names = {n.strip().split(" as ")[0].strip() for n in names.strip("()").replace("\n", ",").split(",")}
        if package == "trl" and names & set(imports["trl"]):
            kind = "trl"
            types |= {imports["trl"][n] for n in names if imports["trl"].get(n)}
        elif package == "transformers" and names & set(imports["transformers"]) and kind is None:
            kind = "hf"
    return kind, (types.pop() if len(types) == 1 else None)


def trl_script_name(command) -> str | None:
    """``sft`` of ``trl sft``, ``-m trl.scripts.sft`` or ``.../trl/scripts/sft.py``: the TRL script a launch runs
    (TRL's CLI runs trl/scripts/<command>.py with the same words; a checkout runs them as files)."""
    entry = command.entry.text if command.entry is not None and command.entry.known else ""
    if command.launcher == "trl" and entry:
        return entry
    if command.entry_kind == "module" and entry.startswith("trl.scripts."):
        return entry.rpartition(".")[2]
    path = "/" + entry.replace("\\", "/")
    if command.entry_kind == "script" and "/trl/scripts/" in path and path.endswith(".py"):
        return path.rpartition("/")[2][:-3]
    return None


def enrich(command: "Command", settings: Settings, assumptions: list, project, framework: str | None):
    """Read an HF Trainer launch into ``settings``; the job's framework ("trl" | "llamafactory" | "hf"), or
    ``framework`` unchanged when the command is no HF Trainer launch."""
    entry = command.entry.text if command.entry is not None and command.entry.known else ""
    certain = False
    kind = None
    job_type = None
    trl_script = trl_script_name(command)
    if command.launcher == "trl" or trl_script is not None:
        kind, certain = "trl", True
        job_type = table()["trl_commands"]["types"].get(trl_script or "")
    elif command.launcher == "llamafactory":
        kind, certain = "llamafactory", True
    script = facts = None
    if command.entry_kind == "script" and entry:
        script = _held_script(command, entry, project)
        if script is not None and script.kind == "python":
            from rlhf_lint.frameworks.hf_script import script_facts

            facts = script_facts(script)
    if kind is None and command.entry_kind == "script" and entry:
        # the import scan is only needed when the script's calls said nothing
        kind, job_type = _script_kind(entry, script if facts is None else None)
    if facts is not None and (kind is None or kind == "hf"):
        kind, job_type = facts.kind, job_type or facts.job_type
    fsdp = _trainer_fsdp(command)
    if kind is None and fsdp is not None:
        kind = "hf"  # `--fsdp "full_shard auto_wrap"` is TrainingArguments' own switch
    # the recipe: --config FILE (TrlParser, open-r1), llamafactory-cli's first positional YAML, a script's first
    # positional YAML or JSON (HfArgumentParser.parse_yaml_file, alignment-handbook's H4ArgumentParser)
    config_word = None
    if command.launcher == "llamafactory" or command.entry_kind == "script":
        config_word = next((w for w in command.positionals[:1 if command.entry_kind == "script" else None]
                            if w.known and w.text.endswith((".yaml", ".yml", ".json")) and "=" not in w.text), None)
    if config_word is None:
        arg = command.last("--config")
        config_word = arg.value if arg is not None else None
    entries = recipe_path = None
    if config_word is not None and config_word.known and project is not None:
        target = project.resolve(command.path, config_word.text)
        if target is None and config_word.text.endswith((".yaml", ".yml")):
            assumptions.append(not_checked(config_word.text, "the recipe"))
        if target is not None and target.kind in ("yaml", "json"):  # parse_json_file, TrlParser's yaml.safe_load
            entries = recipe_entries(target)
            recipe = recipe_kind(entries)
            if recipe is None and kind is None:
                entries = None
            else:
                recipe_path = target.path
                kind = kind or recipe
    surely_trainer = kind is not None  # a TRL entry, a script calling or importing a trainer, a recipe, --fsdp
    if kind is None and framework == "hf":
        kind = "hf"
    if kind is None:
        # TrainingArguments-like flags alone do not make an HF Trainer (`run_glue_no_trainer.py` parses the same
        # names with argparse): such a launch stays what its launcher says
        return framework
    if config_word is not None and config_word.known and (entries is not None or command.launcher == "llamafactory"):
        settings.add(Setting("hf.config_path", config_word.text, config_word.path, config_word.span,
                             config_word.origin))
    if facts is not None:
        _add_script(settings, facts, script.path)
        assumptions.extend(facts.notes)
    if entries is not None:
        _add_recipe(settings, entries, recipe_path)
    if facts is None or facts.parses_args:
        _add_flags(settings, command)
    elif any(_flag_name(a.flag) in table()["fields"] for a in command.args):
        assumptions.append(f"{entry} parses no command line (no HfArgumentParser, TrlParser or argparse): its "
                           "flags are ignored, the values it writes are read")
    if fsdp is not None:
        _add_trainer_fsdp(settings, assumptions, fsdp.text, fsdp.path, fsdp.span, f"--fsdp {fsdp.text}")
    elif entries is not None:
        _add_recipe_fsdp(settings, assumptions, entries, recipe_path)
    _efficient_loading_env(command, settings)
    if kind == "hf" and entries is None and settings.get("trl.num_generations") is not None:
        kind = "trl"
    if job_type is None and settings.get("job.type") is None:
        if kind == "llamafactory":
            job_type = "sft"  # LLaMA-Factory's default stage
        elif kind in ("trl", "hf") and entry:
            job_type = _type_from_name(entry)
    if job_type is not None and settings.get("job.type") is None:
        span = command.entry.span if command.entry is not None else None
        settings.add(Setting("job.type", job_type, command.path, span, "the TRL command or script name"))
    if kind in ("trl", "hf"):
        _type_from_fields(settings, entries, command, recipe_path or command.path)
        _grpo_liger(settings, entries, command)
    if surely_trainer and kind in ("trl", "hf"):
        _release_defaults(settings, assumptions, project, kind)
    if kind in ("trl", "hf"):
        _default_loaded_dtype(settings, project, kind, facts is not None and facts.loads_model)
    _derive(settings, kind, command.path)
    _finetuning(settings, kind, {**_extra_fields(entries, command, recipe_path or command.path),
                                 **_script_fields(facts, script.path if script is not None else command.path)})
    if config_word is not None and entries is None:
        certain = False  # a recipe the project does not hold: its values are unknown
    settings.add(Setting("hf.certain", certain, command.path, None))
    if not certain:
        assumptions.append("TrainingArguments read from the script's flags: the script is taken to parse them with "
                           "HfArgumentParser")
    return kind


def interpret(command: "Command", source: "Source", project) -> list[Job]:
    """Any launch no framework interpreter claims: the launcher's topology and config files
    (launchers.interpret_generic), then the HF Trainer's arguments when the program is one."""
    from rlhf_lint.frameworks.launchers import interpret_generic

    jobs = interpret_generic(command, source, project)
    for job in jobs:
        framework = enrich(command, job.settings, job.assumptions, project, job.framework)
        if framework in ("hf", "trl", "llamafactory"):
            if framework != job.framework:
                job.framework = framework
                job.settings.add(Setting("framework", framework, command.path, command.span))
            _accelerate_plugin(job, project)
            _sharding(job.settings, job.path)
            note = _precision_and_defaults(job.settings, framework)
            if note:
                job.assumptions.append(note)
    return jobs


def _defaults(settings: Settings) -> None:
    for key, row in table()["defaults"].items():
        if key != "note" and settings.get(key) is None:
            settings.add(Setting(key, row["value"], None, None, row["origin"]))


def _sharding(settings: Settings, path: str) -> None:
    """No ds_config and no accelerate DeepSpeed plugin: DDP or FSDP, decided by a launcher or config the linter
    does not see; the memory estimate (ZeRO and FSDP only) then gives no verdict rather than a wrong one."""
    if settings.get("deepspeed.config_path") is None and settings.get("zero.stage") is None \
            and settings.get("train.strategy") is None and settings.get("accelerate.config_unread") is None:
        settings.add(Setting("train.strategy", "ddp", path, None,
                             "no DeepSpeed config: DDP, or FSDP from a launcher config the linter does not see"))


def _accelerate_plugin(job: Job, project) -> None:
    """The ZeRO stage and precision of the accelerate config an HF launch names, where nothing else sets them
    (accelerate's DeepSpeed plugin: its zero_stage, default 2, unless a ds_config file decides)."""
    acc = job.settings.get("accelerate.config_path")
    if acc is None or not isinstance(acc.value, str) or acc.path is None or project is None:
        return
    from rlhf_lint.frameworks.accelerate import read
    from rlhf_lint.frameworks.precision import accelerate_dtype
    from rlhf_lint.readers.yaml import node_span

    target = project.resolve(acc.path, acc.value)
    if target is None:
        job.assumptions.append(not_checked(acc.value, "the accelerate config"))
        job.settings.add(Setting("accelerate.config_unread", acc.value, acc.path, acc.span,
                                 "the accelerate config the launch names was not read"))
    cfg = read(target) if target is not None and target.kind in ("yaml", "json") and target.tree is not None else None
    if cfg is None:
        return
    stage = cfg.zero_stage() if cfg.uses_deepspeed else None
    if type(stage) is int and job.settings.get("zero.stage") is None:
        entry = cfg.deepspeed.get("zero_stage")
        job.settings.add(Setting("zero.stage", stage, target.path, node_span(entry.value_node) if entry else None,
                                 "" if entry else "accelerate's DeepSpeed plugin default"))
    mp = cfg.top.get("mixed_precision")
    dtype = accelerate_dtype(mp.value) if mp is not None else None
    if dtype is not None and job.settings.get("precision.param_dtype") is None:
        job.settings.add(Setting("precision.param_dtype", dtype, target.path, node_span(mp.value_node),
                                 "mixed_precision of the accelerate config"))
    if cfg.uses_fsdp and job.settings.get("deepspeed.config_path") is None and job.settings.get("zero.stage") is None:
        _accelerate_fsdp(job, cfg, target.path)


def fsdp_keys() -> dict:
    from rlhf_lint.schemas import load

    return load("accelerate/fsdp_keys.json")


def _fsdp2(cfg) -> bool:
    version = cfg.fsdp.get("fsdp_version")
    return version is not None and str(version.value) == "2"


def _fsdp_strategy(cfg) -> tuple[str, object]:
    """(sharding strategy name, its entry) accelerate's FullyShardedDataParallelPlugin runs: FSDP1 takes
    fsdp_sharding_strategy (a name or its 1-based index; launch exports FULL_SHARD when unset), FSDP2
    fsdp_reshard_after_forward (false: SHARD_GRAD_OP's behaviour). UNKNOWN when the value is none of them."""
    names = fsdp_keys()["sharding_strategies"]["names"]
    if _fsdp2(cfg):
        entry = cfg.fsdp.get("fsdp_reshard_after_forward")
        reshard = coerce(entry.value, "bool") if entry is not None else True
        return ("FULL_SHARD" if reshard is True else "SHARD_GRAD_OP" if reshard is False else UNKNOWN), entry
    entry = cfg.fsdp.get("fsdp_sharding_strategy") or cfg.fsdp.get("fsdp_reshard_after_forward")
    if entry is None:
        return "FULL_SHARD", None
    text = str(entry.value).strip().upper()
    if text.isdigit() and 1 <= int(text) <= len(names):
        return names[int(text) - 1], entry
    return (text, entry) if text in names else (UNKNOWN, entry)


def _fsdp_sharding(settings: Settings, assumptions: list, strategy, where: str, path, span, kind: str = "fsdp",
                   kind_span=None, kind_origin: str = "") -> bool:
    """The estimate's settings for one of accelerate's FSDP sharding strategies (FULL_SHARD, SHARD_GRAD_OP,
    HYBRID_SHARD, HYBRID_SHARD_ZERO2, NO_SHARD; UNKNOWN: none of them), from an accelerate config or the Trainer's
    --fsdp; ``where`` names the value. False when the launch is not (readably) sharded."""
    if strategy is UNKNOWN:
        settings.add(Setting("train.strategy", UNKNOWN, path, span, f"{where}: no FSDP sharding strategy"))
        assumptions.append(f"FSDP {where}: not a sharding strategy accelerate knows")
        return False
    if strategy == "NO_SHARD":
        settings.add(Setting("train.strategy", "ddp", path, span, f"{where}: replicated states, as DDP"))
        return False
    settings.add(Setting("train.strategy", kind, path, kind_span or span, kind_origin or where))
    if strategy.startswith("HYBRID_SHARD"):
        per = settings.get("topology.gpus_per_node")
        nodes = settings.get("topology.nodes")
        if per is not None and type(per.value) is int and per.value > 0:
            settings.add(Setting("train.fsdp_size", per.value, path, span,
                                 f"{where}: sharded within each node's {per.value} GPUs, replicated across nodes"))
        elif nodes is None or nodes.value != 1:
            # the shard group is one node whose size the launch does not give: no figure rather than a low one
            settings.add(Setting("train.strategy", UNKNOWN, path, span,
                                 f"{where}: sharded within a node, and the launch gives no GPUs per node"))
            assumptions.append(f"FSDP {where}: each node is one shard group and the launch gives no GPUs per node")
            return False
    if strategy in ("SHARD_GRAD_OP", "HYBRID_SHARD_ZERO2"):
        settings.add(Setting("train.fsdp_reshard_after_forward", False, path, span,
                             f"{where}: the gathered parameters stay from forward to backward"))
    return True


def _fsdp_offload(settings: Settings, path, span, origin: str) -> None:
    """CPUOffload(offload_params=True): parameters and gradients live in host RAM, the optimizer steps there."""
    for key in ("offload.param", "offload.optimizer"):
        if settings.get(key) is None:
            settings.add(Setting(key, "cpu", path, span, origin))


def _accelerate_fsdp(job: Job, cfg, path: str) -> None:
    """distributed_type FSDP: the plugin's sharding, CPU offload and activation checkpointing as the estimate's FSDP
    settings (schemas/accelerate/fsdp_keys.json)."""
    from rlhf_lint.readers.yaml import node_span

    settings = job.settings

    def span(entry):
        return node_span(entry.value_node) if entry is not None else None

    version = cfg.fsdp.get("fsdp_version")
    v2 = _fsdp2(cfg)
    strategy, entry = _fsdp_strategy(cfg)
    where = (f"accelerate config {entry.key}: {entry.value}" if entry is not None
             else "accelerate's default FULL_SHARD")
    if not _fsdp_sharding(settings, job.assumptions, strategy, where, path, span(entry), "fsdp2" if v2 else "fsdp",
                          span(version or cfg.top["distributed_type"]),
                          "accelerate config distributed_type FSDP" + (", fsdp_version 2" if v2 else "")):
        return
    offload = cfg.fsdp.get("fsdp_offload_params")
    if offload is not None and coerce(offload.value, "bool") is True:
        _fsdp_offload(settings, path, span(offload), "fsdp_offload_params: true")
    eff = cfg.fsdp.get("fsdp_cpu_ram_efficient_loading")
    settings.add(Setting("train.fsdp_cpu_ram_efficient_loading",
                         eff is not None and coerce(eff.value, "bool") is True, path,
                         span(eff), "" if eff is not None else "accelerate default cpu_ram_efficient_loading false"))
    ckpt = cfg.fsdp.get("fsdp_activation_checkpointing")
    if ckpt is not None and coerce(ckpt.value, "bool") is True \
            and settings.value("train.gradient_checkpointing") is not True:
        # FSDP wraps the decoder layers in checkpoint wrappers whatever TrainingArguments say
        settings.add(Setting("train.gradient_checkpointing", True, path, span(ckpt),
                             "fsdp_activation_checkpointing: true"))


# -- a recipe YAML on its own -------------------------------------------------------------------------------------------
def _named_by_launch(source: "Source", project) -> bool:
    return os.path.realpath(source.path) in _named_recipes(project)


def _named_recipes(project) -> frozenset:
    """Real paths of the YAML files the project's launches name (`--config`, a positional YAML) and of the scripts
    they run: found once per project, not once per file (LLaMA-Factory holds a hundred recipes and as many
    scripts)."""
    named = getattr(project, "_hf_named_recipes", None)
    if named is not None:
        return named
    from rlhf_lint.frameworks.launchers import commands_of

    out = set()
    for shell in project.of_kind("shell"):
        try:
            commands = commands_of(shell, project)
        except Exception:  # a script the launch reader cannot take must not hide the recipes' own jobs
            continue
        for command in commands:
            words = [a.value for a in command.args if a.flag == "--config" and a.value is not None]
            words += [w for w in command.positionals if w.known and w.text.endswith((".yaml", ".yml"))]
            if command.entry_kind == "script" and command.entry is not None and command.entry.known:
                words.append(command.entry)  # the script a launch runs: that launch's job reads it
            for word in words:
                target = project.resolve(command.path, word.text) if word.known else None
                if target is not None:
                    out.add(os.path.realpath(target.path))
    project._hf_named_recipes = named = frozenset(out)
    return named


@job_builder(kinds={"yaml"})
def build_recipe_jobs(source: "Source", project) -> list[Job]:
    """A TRL / open-r1 / LLaMA-Factory recipe YAML as a job, unless a launch of the project names it (that launch's
    job reads it, with the launch's world size)."""
    entries = recipe_entries(source)
    kind = recipe_kind(entries)
    if kind is None or (project is not None and _named_by_launch(source, project)):
        return []
    from rlhf_lint.readers.yaml import node_span

    settings = Settings()
    _add_recipe(settings, entries, source.path)
    assumptions = ["the recipe's world size is not given by any launch of the project"]
    _add_recipe_fsdp(settings, assumptions, entries, source.path)  # TrainingArguments' own field: the Trainer shards
    if kind == "llamafactory" and settings.get("job.type") is None:
        settings.add(Setting("job.type", "sft", source.path, None, "LLaMA-Factory default stage sft"))
    if kind in ("trl", "hf"):
        _type_from_fields(settings, entries, None, source.path)
        _grpo_liger(settings, entries, None)
        _release_defaults(settings, assumptions, project, kind)
        _default_loaded_dtype(settings, project, kind, False)
    _derive(settings, kind, source.path)
    _finetuning(settings, kind, _extra_fields(entries, None, source.path))
    settings.add(Setting("hf.certain", kind != "hf", source.path, None))
    settings.add(Setting("framework", kind, source.path, None))
    _sharding(settings, source.path)
    note = _precision_and_defaults(settings, kind)
    docs = source.tree
    name = f"{os.path.basename(source.path)} ({kind} recipe)"
    return [Job(name=name, path=source.path, span=node_span(docs[0]), framework=kind, settings=settings,
                assumptions=assumptions + ([note] if note else []))]


# -- a training script on its own -------------------------------------------------------------------------------------
@job_builder(kinds={"python"})
def build_script_jobs(source: "Source", project) -> list[Job]:
    """A training script that builds its TrainingArguments (or TRL config) in Python and names its model literally,
    as a job, unless a launch of the project runs it (that launch's job reads it, with the launch's world size)."""
    from rlhf_lint.frameworks.hf_script import script_facts

    base = os.path.basename(source.path)
    if base == "conftest.py" or base.startswith("test_") or base.endswith("_test.py"):
        return []  # a test module builds configs to test a trainer, not to launch one
    facts = script_facts(source)
    model = facts.entries.get("model_name_or_path", (None,))[0] if facts is not None else None
    if facts is None or facts.span is None or not isinstance(model, str) or not model.strip():
        return []  # no model named in the script: nothing to estimate, and its launch (if any) says the rest
    if project is not None and _named_by_launch(source, project):
        return []
    settings = Settings()
    _add_script(settings, facts, source.path)
    kind = facts.kind
    assumptions = ["the script's world size is not given by any launch of the project"] + facts.notes
    _release_defaults(settings, assumptions, project, kind)
    _default_loaded_dtype(settings, project, kind, facts.loads_model)
    _derive(settings, kind, source.path)
    _finetuning(settings, kind, _script_fields(facts, source.path))
    settings.add(Setting("hf.certain", False, source.path, None))
    settings.add(Setting("framework", kind, source.path, None))
    _sharding(settings, source.path)
    note = _precision_and_defaults(settings, kind)
    if facts.parses_args:
        assumptions.append("the script also parses a command line: only the values it writes literally are read")
    from rlhf_lint.readers.shell import parse_hardware  # the `# rlhf-lint: hardware ...` comment reads the same here

    hardware, _span = parse_hardware(source.text)
    name = f"{os.path.basename(source.path)} ({kind} script)"
    return [Job(name=name, path=source.path, span=facts.span, framework=kind, settings=settings,
                assumptions=assumptions + ([note] if note else []), hardware=dict(hardware))]
