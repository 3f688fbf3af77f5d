"""D: DeepSpeed ds_config checks. Facts come from schemas/ds_config_keys.json (built from ds_config_keys.tsv).

"auto" and HF: a value "auto" is legal only when Hugging Face Trainer or accelerate fill it. The file is taken as
consumed by HF when a launch that names it runs accelerate/TRL/transformers, or, with no such launch known, when it
already uses "auto" in a key those integrations fill (the file was written for them). A launch by plain `deepspeed`
or `torchrun` overrides that guess.
"""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import (assumed_version_note, ds_keys, normalise_dtype, precision_section, version_at_least)
from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JArray, JMember, JObject, JSONDocument, JValue
from rlhf_lint.model import Applicability, Edit, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule

KINDS = {"ds_config"}
HF_FRAMEWORKS = {"accelerate", "trl", "hf", "transformers", "llamafactory", "axolotl"}
TRUE_STRINGS = {"true", "yes", "on", "1", "t", "y"}
FALSE_STRINGS = {"false", "no", "off", "0", "f", "n"}


# -- helpers -----------------------------------------------------------------------------------------------------
def _doc(ctx) -> JSONDocument | None:
    tree = ctx.tree
    if isinstance(tree, JSONDocument) and isinstance(tree.root, JObject):
        return tree
    return None


def _member(obj, key: str) -> JMember | None:
    return obj.member(key) if isinstance(obj, JObject) else None


def _lookup_member(doc: JSONDocument, dotted: str) -> JMember | None:
    parent, _, name = dotted.rpartition(".")
    obj = doc.lookup(parent) if parent else doc.root
    return _member(obj, name)


def _section_mode(path: str, config) -> str:
    sec = ds_keys()["sections"].get(path)
    if sec is None:
        return "open"
    if sec.get("strict_since") and not version_at_least(config, sec["strict_since"]):
        return "lenient"
    return sec["mode"]


def _sections(doc: JSONDocument):
    """(dotted path, object) of every object that sits at a known section path ("" is the top level)."""
    sections = ds_keys()["sections"]
    stack = [("", doc.root)]
    while stack:
        path, obj = stack.pop()
        yield path, obj
        for m in obj.members:
            child = f"{path}.{m.key}" if path else m.key
            if isinstance(m.value, JObject) and child in sections:
                stack.append((child, m.value))


def _children(section: str) -> set[str]:
    data = ds_keys()
    section = "bf16" if section == "bfloat16" else section
    prefix = f"{section}." if section else ""
    names = set()
    for table in (data["keys"], data["sections"], data["aliases"]):
        for path in table:
            if path.startswith(prefix) and path and "." not in path[len(prefix):]:
                names.add(path[len(prefix):])
    return {n for n in names if f"{prefix}{n}" not in data["deprecated"]}


def _canonical(path: str) -> str:
    """The key table's name for a path: the legacy bfloat16 section reads like bf16, aliases map to their key."""
    if path.startswith("bfloat16."):
        path = "bf16." + path[len("bfloat16."):]
    return ds_keys()["aliases"].get(path, path)


def _known(path: str) -> bool:
    data = ds_keys()
    return any(path in data[t] or _canonical(path) in data[t] for t in ("keys", "sections", "aliases", "deprecated"))


def _truthy(value, config) -> bool | None:
    """How DeepSpeed reads an ``enabled`` flag: None for "auto" dropped by pydantic (>= 0.17.1)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if not version_at_least(config, "0.17.1"):
            return value != ""  # dict.get: any non-empty string is truthy, "false" and "auto" included
        low = value.strip().lower()
        return True if low in TRUE_STRINGS else False if low in FALSE_STRINGS else None
    if isinstance(value, (int, float)):
        return bool(value)
    return None


def _enabled(doc: JSONDocument, section: str, config):
    node = doc.lookup(f"{section}.enabled")
    return (None, None) if node is None else (_truthy(node.to_python(), config), node)


def _int_value(node) -> int | None:
    if isinstance(node, JValue) and not isinstance(node.value, bool):
        if isinstance(node.value, int):
            return node.value
        if isinstance(node.value, float) and node.value.is_integer():
            return int(node.value)
    return None


def _zero_stage(doc: JSONDocument) -> int | None:
    zero = doc.root.get("zero_optimization")
    if isinstance(zero, JValue) and isinstance(zero.value, bool):
        return 1 if zero.value else 0
    if zero is None:
        return 0
    node = doc.lookup("zero_optimization.stage")
    if node is None:
        return 0 if isinstance(zero, JObject) else None
    value = node.to_python()
    if isinstance(value, str) and value.strip().isdecimal():
        return int(value)
    return _int_value(node)


def _consumers(ctx) -> tuple[set[str], list]:
    refs = ctx.project.jobs_referencing(ctx.source.path)
    return {job.framework for job, _ in refs if job.framework}, refs


def _auto_fill_keys(which: str | None = None) -> set[str]:
    fill = ds_keys()["auto_fill"]
    if which:
        return set(fill[which]["keys"])
    return set(fill["hf_trainer"]["keys"]) | set(fill["accelerate"]["keys"])


def _is_auto(node) -> bool:
    return isinstance(node, JValue) and node.value == "auto"


# -- D001 / D002 unknown keys --------------------------------------------------------------------------------------
def _unknown_keys(ctx, strict: bool):
    doc = _doc(ctx)
    if doc is None:
        return
    data = ds_keys()
    for section, obj in _sections(doc):
        mode = _section_mode(section, ctx)
        if mode == "open" or (mode == "strict") != strict:
            continue
        present = set(obj.keys())
        for m in obj.members:
            path = f"{section}.{m.key}" if section else m.key
            if _known(path):
                continue
            if not strict and _is_comment_key(m.key):
                continue  # `"_comment": "..."` is how JSON files carry comments; ignoring it is the intent
            where = f"in {section!r}" if section else "at the top level"
            rejected = data["rejected"].get(path)
            suggestion = rejected["suggest"] if rejected else None
            if suggestion is None and not rejected:
                suggestion = _closest(m.key, _children(section))
            if strict:
                message = f"unknown key {m.key!r} {where}: DeepSpeed rejects it at start-up (ValidationError)"
            else:
                message = f"unknown key {m.key!r} {where} is silently ignored by DeepSpeed"
            if rejected:
                message += f"; {rejected['message']}"
            fix = None
            if suggestion:
                message += f"; did you mean {suggestion!r}?"
                if suggestion not in present:
                    fix = Fix(f"rename {m.key!r} to {suggestion!r}", (jfix.rename_key(m, suggestion),),
                              Applicability.SAFE if strict else Applicability.UNSAFE)
            if strict:
                message += f" ({assumed_version_note(ctx)}"
                message += "; strict since 0.17.1)" if section in ("fp16", "bf16", "bfloat16") else ")"
            yield Finding(m.key_span, message, fix=fix)


def _is_comment_key(key: str) -> bool:
    return key.startswith(("_", "//", "#")) or key.lower() in ("comment", "comments", "description", "note", "notes")


def _closest(key: str, candidates: set[str]) -> str | None:
    """The one candidate close enough to be the intended key, or None when none or several are."""
    import difflib  # only for unknown keys: difflib costs ~1 ms of every start

    scored = sorted(((difflib.SequenceMatcher(None, key.lower(), c.lower()).ratio(), c) for c in candidates),
                    reverse=True)
    if not scored or scored[0][0] < 0.8:
        return None
    if len(scored) > 1 and scored[1][0] >= scored[0][0] - 0.05:
        return None  # ambiguous
    return scored[0][1]


@rule("D001", "unknown-ds-config-key", Severity.ERROR, kinds=KINDS, fixable=True)
def unknown_strict_key(ctx):
    """A key DeepSpeed does not know, in a section it validates: the job fails at start-up.

    ## What it does
    Checks every key of the sections DeepSpeed parses with pydantic models that forbid extra fields
    (`zero_optimization` and its offload blocks, `fp16`/`bf16` since DeepSpeed 0.17.1, `tensorboard`, `wandb`,
    `compile`, `hybrid_engine`, `tensor_parallel`, ...) against the key table of DeepSpeed 0.19.6. Aliases
    (`stage3_prefetch_bucket_size` / `prefetch_bucket_size`) count as known. Keys DeepSpeed's own docs list but its
    code rejects (`grad_hooks`, `bf16.check_overflow`) are named as such.

    ## Why it matters
    `deepspeed.initialize()` raises `ValidationError ... Extra inputs are not permitted` after the model has been
    loaded, often minutes into a multi-node launch.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "overlap_com": true}}
    ```

    ## Fix
    When exactly one valid key is close to the typo, the fix renames it (safe: the file cannot run as it is).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config_utils.py
    https://github.com/deepspeedai/DeepSpeed/issues/1302
    https://github.com/deepspeedai/DeepSpeed/pull/6976
    """
    yield from _unknown_keys(ctx, strict=True)


@rule("D002", "ignored-ds-config-key", Severity.WARNING, kinds=KINDS, fixable=True)
def unknown_lenient_key(ctx):
    """A key DeepSpeed does not know, in a section it reads with `dict.get`: silently ignored.

    ## What it does
    Checks keys at the top level and in the sections DeepSpeed reads without validation (`optimizer`, `scheduler`,
    `data_types`, `aio`, `activation_checkpointing`, `flops_profiler`, `checkpoint`, ...) against DeepSpeed's key
    table. Free-form blocks (`optimizer.params`, `scheduler.params`, `pipeline`, `amp`, ...) are not checked, and
    neither are comment keys (`"_comment"`, `"//"`, `"description"`), the usual way to annotate a JSON file.

    ## Why it matters
    A typo such as `gradient_acumulation_steps` is never reported by DeepSpeed: the job runs with the default and
    the setting you wrote has no effect.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 4, "gradient_clipp1ng": 1.0}
    ```

    ## Fix
    When one valid key is close, the fix renames it. It is marked unsafe: the value starts to take effect.

    ## References
    https://github.com/deepspeedai/DeepSpeed/issues/653
    https://github.com/deepspeedai/DeepSpeed/issues/774
    https://github.com/deepspeedai/DeepSpeed/issues/1809
    """
    yield from _unknown_keys(ctx, strict=False)


# -- D003 hjson syntax, D004 duplicates ----------------------------------------------------------------------------
@rule("D003", "ds-config-not-strict-json", Severity.WARNING, kinds=KINDS, fixable=True)
def hjson_syntax(ctx):
    """A ds_config uses comments or trailing commas: DeepSpeed reads it, Hugging Face and accelerate do not.

    ## What it does
    Reports each comment and each trailing comma in a ds_config file.

    ## Why it matters
    DeepSpeed loads a config path with `hjson`, which accepts both. HF Trainer and accelerate open the same file with
    `json.load`, which fails with `JSONDecodeError`, so the config works with the `deepspeed` launcher and breaks the
    day it is passed to `--deepspeed` of a Trainer script.

    ## Example
    ```json
    {"train_batch_size": 32, // global
     "fp16": {"enabled": true,},}
    ```

    ## Fix
    Trailing commas are removed (safe). Comments must be moved out by hand (JSON has no comments).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py
    https://github.com/huggingface/accelerate/blob/main/src/accelerate/utils/deepspeed.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    for span in doc.comments:
        yield Finding(span, "comment in a ds_config: DeepSpeed's hjson loader accepts it, but json.load (HF Trainer, "
                            "accelerate) fails on it")
    for span in doc.trailing_commas:
        yield Finding(span, "trailing comma: DeepSpeed's hjson loader accepts it, but json.load (HF Trainer, "
                            "accelerate) fails on it", fix=Fix("remove the trailing comma", (Edit(span.start, span.end, ""),)))


def _objects(node):
    if isinstance(node, JObject):
        yield node
        for m in node.members:
            yield from _objects(m.value)
    elif isinstance(node, JArray):
        for item in node.items:
            yield from _objects(item)


@rule("D004", "duplicate-ds-config-key", Severity.ERROR, kinds=KINDS, fixable=True)
def duplicate_key(ctx):
    """The same key appears twice in one object of a ds_config.

    ## What it does
    Reports every member whose key is repeated later in the same object.

    ## Why it matters
    DeepSpeed raises `ValueError: Duplicate keys in DeepSpeed config` when it loads the file; HF Trainer and
    accelerate (`json.load`) silently keep the last value, so the first one never had an effect.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 4, "train_micro_batch_size_per_gpu": 8}
    ```

    ## Fix
    Deletes the earlier member (unsafe: under plain DeepSpeed the file failed, under HF the last value already won).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config_utils.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    for obj in _objects(doc.root):
        for i, m in enumerate(obj.members):
            later = [n for n in obj.members[i + 1:] if n.key == m.key]
            if not later:
                continue
            line = ctx.source.position(later[-1].key_span.start).line
            yield Finding(m.key_span, f"duplicate key {m.key!r} (again on line {line}): DeepSpeed raises ValueError; "
                                      "json.load (HF, accelerate) keeps the last value",
                          fix=Fix(f"delete this earlier {m.key!r}", jfix.delete_member(ctx.source.text, obj, m),
                                  Applicability.UNSAFE))


# -- D010 / D011 batch arithmetic ----------------------------------------------------------------------------------
def _batch(doc: JSONDocument):
    out = {}
    for short, key in (("tbs", "train_batch_size"), ("mbs", "train_micro_batch_size_per_gpu"),
                       ("gas", "gradient_accumulation_steps")):
        node = doc.root.get(key)
        if node is None:
            out[short] = (None, None)
        elif _is_auto(node) or _int_value(node) is None:
            out[short] = ("skip", node)
        else:
            out[short] = (_int_value(node), node)
    return out


def _elastic(doc: JSONDocument) -> bool:
    node = doc.lookup("elasticity.enabled")
    return isinstance(node, JValue) and node.value is True


def _world_sizes(ctx):
    """[(world size, Related or None)] from the launches naming this file, else from the configuration."""
    out = []
    _, refs = _consumers(ctx)
    for job, _setting in refs:
        ws = job.value("topology.world_size")
        if isinstance(ws, int) and not isinstance(ws, bool) and ws > 0:
            s = job.settings.get("topology.world_size")
            if s is not None and s.path not in (None, job.path) and s.span is not None:
                # the launch left it to a config file it names (accelerate's num_processes)
                out.append((ws, Related(s.path, s.span, f"world size {ws} of {job.name} comes from this file")))
                continue
            span = s.span if s is not None and s.path == job.path else None
            out.append((ws, Related(job.path, span, f"world size {ws} comes from this launch")))
    if not out and ctx.config.world_size:
        out.append((ctx.config.world_size, None))
    seen, unique = set(), []
    for ws, rel in out:
        if ws not in seen:
            seen.add(ws)
            unique.append((ws, rel))
    return unique


@rule("D010", "batch-size-mismatch", Severity.ERROR, kinds=KINDS)
def batch_size_mismatch(ctx):
    """The global batch size does not equal micro batch x accumulation steps x world size of the launch using it.

    ## What it does
    Redoes DeepSpeed's batch resolution (`_set_batch_related_parameters`, with its floor divisions) for each world
    size known: from the launch scripts that name this file (`deepspeed --num_gpus`, `torchrun --nproc_per_node`,
    ...) or from `world-size` in the configuration, divided by `sequence_parallel_size` when the config sets it
    (DeepSpeed then counts data-parallel ranks). The message shows the arithmetic; the related location is the
    launch that sets the world size.

    ## Why it matters
    DeepSpeed asserts `train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size` while
    building its config, after the model is loaded.

    ## Example
    ```json
    {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}
    ```
    launched with `deepspeed --num_gpus 4 train.py` (4 x 1 x 4 = 16, not 32).

    ## Fix
    Set train_batch_size to the product, drop one of the three keys and let DeepSpeed derive it, or use "auto" under
    HF Trainer / accelerate.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py
    https://github.com/CarperAI/trlx/issues/376
    https://github.com/Roblox/FAI-RL/pull/72
    """
    doc = _doc(ctx)
    if doc is None or _elastic(doc):
        return
    b = _batch(doc)
    if any(v == "skip" for v, _ in b.values()):
        return
    tbs, mbs, gas = b["tbs"][0], b["mbs"][0], b["gas"][0]
    if any(v is not None and v <= 0 for v in (tbs, mbs, gas)) or tbs is None:
        return  # nothing to compare, or D011's business
    anchor = b["tbs"][1]
    sp_node = doc.lookup("sequence_parallel_size")
    sp = sp_node.value if isinstance(sp_node, JValue) and isinstance(sp_node.value, int) \
        and not isinstance(sp_node.value, bool) and sp_node.value > 1 else 1
    for ws, rel in _world_sizes(ctx):
        where = " (world size from the configuration)" if rel is None else ""
        if sp > 1:  # Ulysses: DeepSpeed counts data-parallel ranks, world size / sequence_parallel_size
            where += f" (data-parallel ranks: {ws} processes / sequence_parallel_size {sp})"
            ws = max(1, ws // sp)
        if mbs is not None and gas is not None:
            if tbs != mbs * gas * ws:
                yield Finding(anchor.span, f"train_batch_size {tbs} != train_micro_batch_size_per_gpu {mbs} x "
                                           f"gradient_accumulation_steps {gas} x world size {ws} = {mbs * gas * ws}"
                                           f"{where}", related=(rel,) if rel else ())
            continue
        if mbs is not None:
            gas_d = tbs // mbs // ws
            derived = f"DeepSpeed derives gradient_accumulation_steps = {tbs} // {mbs} // {ws} = {gas_d}"
            bad = mbs * gas_d * ws != tbs
            check = f"{mbs} x {gas_d} x {ws} = {mbs * gas_d * ws} != {tbs}"
        elif gas is not None:
            mbs_d = tbs // ws // gas
            derived = f"DeepSpeed derives train_micro_batch_size_per_gpu = {tbs} // {ws} // {gas} = {mbs_d}"
            bad = mbs_d * gas * ws != tbs
            check = f"{mbs_d} x {gas} x {ws} = {mbs_d * gas * ws} != {tbs}"
        else:
            mbs_d = tbs // ws
            derived = f"DeepSpeed derives train_micro_batch_size_per_gpu = {tbs} // {ws} = {mbs_d}"
            bad = mbs_d * ws != tbs
            check = f"{mbs_d} x 1 x {ws} = {mbs_d * ws} != {tbs}"
        if bad:
            yield Finding(anchor.span, f"train_batch_size {tbs} does not divide over world size {ws}{where}: "
                                       f"{derived}, then {check}", related=(rel,) if rel else ())


@rule("D011", "invalid-batch-config", Severity.ERROR, kinds=KINDS)
def invalid_batch_config(ctx):
    """Batch keys DeepSpeed rejects whatever the world size: zero or negative, or not divisible.

    ## What it does
    Without knowing the world size: a batch key that is not positive; `train_batch_size` that is not a multiple of
    `train_micro_batch_size_per_gpu` x `gradient_accumulation_steps` (no world size can satisfy it); and, for a
    plain `deepspeed`/`torchrun` launch, neither `train_batch_size` nor `train_micro_batch_size_per_gpu` given.

    ## Why it matters
    DeepSpeed's `_batch_assertion` fails at start-up (`has to be greater than 0`, `train_batch_size is not equal to
    ...`, `Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided`).

    ## Example
    ```json
    {"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4}
    ```

    ## Fix
    Make train_batch_size a multiple of the micro batch size times the accumulation steps.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config.py
    https://github.com/deepspeedai/DeepSpeed/issues/17
    """
    doc = _doc(ctx)
    if doc is None or _elastic(doc):
        return
    b = _batch(doc)
    names = {"tbs": "train_batch_size", "mbs": "train_micro_batch_size_per_gpu", "gas": "gradient_accumulation_steps"}
    for short, (value, node) in b.items():
        if isinstance(value, int) and value <= 0:
            yield Finding(node.span, f"{names[short]} is {value}: DeepSpeed requires it to be greater than 0")
    if any(isinstance(v, int) and v <= 0 for v, _ in b.values()):
        return
    tbs, mbs, gas = b["tbs"][0], b["mbs"][0], b["gas"][0]
    if isinstance(tbs, int):
        step = (mbs if isinstance(mbs, int) else 1) * (gas if isinstance(gas, int) else 1)
        if (isinstance(mbs, int) or isinstance(gas, int)) and tbs % step:
            parts = " x ".join(f"{names[s]} {b[s][0]}" for s in ("mbs", "gas") if isinstance(b[s][0], int))
            yield Finding(b["tbs"][1].span, f"train_batch_size {tbs} is not a multiple of {parts} = {step}: no world "
                                            f"size satisfies train_batch_size = micro x accumulation x world size")
    if tbs is None and mbs is None:
        frameworks, refs = _consumers(ctx)
        plain = [job for job, _ in refs if job.framework in ("deepspeed", "torchrun")]
        if plain and not frameworks & HF_FRAMEWORKS:
            related = tuple(Related(s.path or job.path, s.span, "launched here by plain DeepSpeed") for job, s in refs
                            if job in plain)
            yield Finding(None, "neither train_batch_size nor train_micro_batch_size_per_gpu is set: DeepSpeed "
                                "asserts one of them is provided", related=related)


# -- D012 fp16 and bf16 --------------------------------------------------------------------------------------------
@rule("D012", "fp16-and-bf16-enabled", Severity.ERROR, kinds=KINDS)
def fp16_and_bf16(ctx):
    """Both fp16 and bf16 are enabled.

    ## What it does
    Reads `fp16.enabled` and `bf16.enabled` (or the legacy `bfloat16`) the way the DeepSpeed version in use does:
    before 0.17.1 they are read with `dict.get`, so any non-empty string - `"false"` and `"auto"` included - is
    true; from 0.17.1 pydantic turns `"false"` into false and drops `"auto"`.

    ## Why it matters
    `AssertionError: bfloat16 and fp16 modes cannot be simultaneously enabled` at start-up.

    ## Example
    ```json
    {"fp16": {"enabled": true}, "bf16": {"enabled": true}}
    ```

    ## Fix
    Keep the one your GPUs and model want (bf16 on A100/H100) and disable the other.

    ## References
    https://github.com/Snowflake-AI-Research/Arctic-Platform/pull/78
    https://github.com/hiyouga/LlamaFactory/issues/3493
    https://github.com/deepspeedai/DeepSpeed/pull/6976
    """
    doc = _doc(ctx)
    if doc is None:
        return
    fp16, fp16_node = _enabled(doc, "fp16", ctx)
    bf16, bf16_node = _enabled(doc, precision_section(doc), ctx)
    if fp16 and bf16:
        strings = [n for n in (fp16_node, bf16_node) if isinstance(n.value, str)]
        note = f" (string values are truthy before DeepSpeed 0.17.1; {assumed_version_note(ctx)})" if strings else ""
        yield Finding(bf16_node.span, "fp16 and bf16 are both enabled: DeepSpeed asserts they cannot be enabled "
                                      f"together{note}",
                      related=(Related(ctx.source.path, fp16_node.span, "fp16 enabled here"),))


# -- D013 deprecated, D014 both spellings --------------------------------------------------------------------------
@rule("D013", "deprecated-ds-config-key", Severity.WARNING, kinds=KINDS, fixable=True)
def deprecated_key(ctx):
    """A deprecated ds_config key: renamed, ignored, or removed.

    ## What it does
    Reports `zero_optimization.cpu_offload`, `cpu_offload_param`, `cpu_offload_use_pin_memory`,
    `stage3_gather_fp16_weights_on_model_save`, `legacy_stage1`, the legacy `bfloat16` section, the boolean form of
    `zero_optimization`, top-level `allgather_size`, and `aio.thread_count` (renamed `intra_op_parallelism` in 0.16.4
    and silently ignored since).

    ## Why it matters
    Some still work with a warning, some are silently ignored (`aio.thread_count`, `cpu_offload_use_pin_memory`,
    `bfloat16` next to `bf16`), and `legacy_stage1: true` raises at initialize().

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "cpu_offload": true}}
    ```

    ## Fix
    Safe rewrites where the meaning is unchanged: `cpu_offload: true` -> `"offload_optimizer": {"device": "cpu"}`,
    renames of `bfloat16` and `stage3_gather_fp16_weights_on_model_save`, deletion of keys with no effect. The
    `aio.thread_count` rename is unsafe (the value starts to take effect).

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/config.py
    https://github.com/deepspeedai/DeepSpeed/pull/7056
    """
    doc = _doc(ctx)
    if doc is None:
        return
    text = ctx.source.text
    zero = doc.root.get("zero_optimization")
    if isinstance(zero, JValue) and isinstance(zero.value, bool):
        yield Finding(zero.span, f"boolean zero_optimization is deprecated ({'true means stage 1' if zero.value else 'false means stage 0'}): "
                                 f"write {{\"stage\": {1 if zero.value else 0}}}",
                      fix=Fix("use the object form", (jfix.set_value(zero, {"stage": 1 if zero.value else 0}),)))
    for dotted, info in ds_keys()["deprecated"].items():
        member = _lookup_member(doc, dotted)
        if member is None:
            continue
        parent_path = dotted.rpartition(".")[0]
        parent = doc.lookup(parent_path) if parent_path else doc.root
        replacement = info.get("replacement")
        repl_member = _lookup_member(doc, replacement) if replacement else None
        message, fix, severity = f"{member.key!r}: {info['message']}", None, None
        value = member.value.to_python()
        if info.get("error_if_true"):
            if value is True:
                severity = Severity.ERROR
            else:
                fix = Fix(f"delete {member.key!r}", jfix.delete_member(text, parent, member))
        elif dotted == "bfloat16" and repl_member is not None:
            message = "'bfloat16' is ignored because 'bf16' is present (legacy name, read only when bf16 is absent)"
            fix = Fix("delete the ignored 'bfloat16' section", jfix.delete_member(text, parent, member))
        elif repl_member is not None:
            if dotted == "aio.thread_count":
                message += f"; {replacement.rpartition('.')[2]!r} is already set"
                fix = Fix(f"delete the ignored {member.key!r}", jfix.delete_member(text, parent, member))
            else:
                continue  # both spellings: D014 reports the conflict
        elif info["fix"] == "rename":
            new = replacement.rpartition(".")[2]
            fix = Fix(f"rename {member.key!r} to {new!r}", (jfix.rename_key(member, new),),
                      Applicability(info["applicability"]))
        elif info["fix"] == "offload_device" and isinstance(value, bool):
            new = replacement.rpartition(".")[2]
            if value:
                content = f"{jfix.dumps(new)}: {jfix.format_value({'device': 'cpu'}, '', '', '', False)}"
                fix = Fix(f"replace with \"{new}\": {{\"device\": \"cpu\"}}",
                          (Edit(member.key_span.start, member.value.span.end, content),))
            else:
                fix = Fix(f"delete {member.key!r} (false is the default)", jfix.delete_member(text, parent, member))
        elif info["fix"] == "delete":
            fix = Fix(f"delete {member.key!r}", jfix.delete_member(text, parent, member))
        yield Finding(member.key_span, message, fix=fix, severity=severity)


@rule("D014", "conflicting-ds-config-aliases", Severity.ERROR, kinds=KINDS, fixable=True)
def conflicting_aliases(ctx):
    """A setting is given under two names (a `stage3_*` alias and its field name, or a deprecated key and its heir).

    ## What it does
    Reports the bare spelling when both `stage3_prefetch_bucket_size` and `prefetch_bucket_size` (and the other
    `stage3_*` aliases, `tensor_parallel.tp` / `tensor_parallel`, `kernel_inject` / `replace_with_kernel_inject`) are
    set, and a deprecated key set together with its replacement (`cpu_offload` with `offload_optimizer`,
    `stage3_gather_fp16_weights_on_model_save` with `stage3_gather_16bit_weights_on_model_save`).

    ## Why it matters
    DeepSpeed rejects both: `ValidationError ... Extra inputs are not permitted` for the alias pair, and `AssertionError:
    Cannot provide deprecated parameter ... and replacing parameter ... together` for the deprecated pair.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 5e7, "prefetch_bucket_size": 5e7}}
    ```

    ## Fix
    When both carry the same value, the fix deletes the redundant spelling (safe). Otherwise pick one by hand.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/config.py
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/config_utils.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    text = ctx.source.text
    pairs = [(bare, canonical, "alias") for bare, canonical in ds_keys()["aliases"].items()]
    pairs += [(dep, info["replacement"], "deprecated") for dep, info in ds_keys()["deprecated"].items()
              if info.get("replacement") and dep not in ("bfloat16", "aio.thread_count", "allgather_size")]
    for extra, kept, kind in pairs:
        a, b = _lookup_member(doc, extra), _lookup_member(doc, kept)
        if a is None or b is None:
            continue
        parent_path = extra.rpartition(".")[0]
        parent = doc.lookup(parent_path) if parent_path else doc.root
        same = a.value.to_python() == b.value.to_python()
        if kind == "alias":
            message = (f"{a.key!r} and {b.key!r} are the same setting: DeepSpeed rejects the pair "
                       f"(ValidationError: {a.key} Extra inputs are not permitted)")
        else:
            message = (f"deprecated {a.key!r} and its replacement {b.key!r} are both set: DeepSpeed raises "
                       "AssertionError (Cannot provide deprecated parameter ... together)")
        fix = None
        if same and kind == "alias":
            fix = Fix(f"delete the redundant {a.key!r}", jfix.delete_member(text, parent, a))
        yield Finding(a.key_span, message, fix=fix,
                      related=(Related(ctx.source.path, b.key_span, f"{b.key!r} set here"),))


# -- D015..D018 ZeRO structure ----------------------------------------------------------------------------------
def _device(doc, what: str) -> tuple[str | None, object]:
    node = doc.lookup(f"zero_optimization.offload_{what}.device")
    if isinstance(node, JValue) and isinstance(node.value, str):
        return node.value.lower(), node
    return None, node


@rule("D015", "offload-param-without-zero3", Severity.WARNING, kinds=KINDS, fixable=True)
def offload_param_below_zero3(ctx):
    """The offload_param block is set under ZeRO stage 0, 1 or 2, where DeepSpeed ignores it.

    ## What it does
    Reports `zero_optimization.offload_param` with a device of cpu or nvme when the stage is a literal below 3.

    ## Why it matters
    Only ZeRO-3 partitions (and so can offload) parameters. DeepSpeed accepts the block without a word, so the
    memory plan that counted on it is wrong.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}
    ```

    ## Fix
    Deletes the block (safe: it had no effect). Use stage 3 if parameters must leave the GPU.

    ## References
    https://github.com/wenet-e2e/wenet/pull/2499
    https://github.com/deepspeedai/DeepSpeed/issues/2977
    """
    doc = _doc(ctx)
    if doc is None:
        return
    stage = _zero_stage(doc)
    device, node = _device(doc, "param")
    if stage is None or stage >= 3 or device not in ("cpu", "nvme"):
        return
    zero = doc.root.get("zero_optimization")
    member = zero.member("offload_param")
    yield Finding(member.key_span, f"offload_param (device {device}) has no effect at ZeRO stage {stage}: only "
                                   "stage 3 offloads parameters",
                  fix=Fix("delete offload_param", jfix.delete_member(ctx.source.text, zero, member)))


@rule("D016", "partial-offload-without-zero3", Severity.ERROR, kinds=KINDS)
def partial_offload(ctx):
    """Partial optimizer offload (offload_optimizer.ratio below 1) without ZeRO stage 3.

    ## What it does
    Reports a literal `ratio` < 1.0 in `offload_optimizer` when the stage is a literal other than 3.

    ## Why it matters
    DeepSpeed's model validator raises `Partial offloading only supported for ZeRO Stage 3.` at start-up.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    ```

    ## Fix
    Use stage 3, or remove `ratio` to offload the whole optimizer state.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/config.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    stage = _zero_stage(doc)
    node = doc.lookup("zero_optimization.offload_optimizer.ratio")
    if stage is None or stage == 3 or not isinstance(node, JValue):
        return
    if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and node.value < 1.0:
        yield Finding(node.span, f"offload_optimizer.ratio {node.value} needs ZeRO stage 3 (stage is {stage}): "
                                 "DeepSpeed raises 'Partial offloading only supported for ZeRO Stage 3.'")


@rule("D017", "nvme-offload-without-path", Severity.ERROR, kinds=KINDS)
def nvme_without_path(ctx):
    """An offload device of nvme with no `nvme_path`.

    ## What it does
    Reports `offload_param` / `offload_optimizer` with `"device": "nvme"` whose `nvme_path` is missing or null.

    ## Why it matters
    DeepSpeed fails when it sets up the swapper: `"nvme_path" in DeepSpeed Config cannot be None if remote device
    is nvme`.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}
    ```

    ## Fix
    Add `"nvme_path": "/local_nvme"` pointing at a fast local disk.

    ## References
    https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed/runtime/zero/partition_parameters.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    for what in ("param", "optimizer"):
        device, node = _device(doc, what)
        if device != "nvme":
            continue
        path = doc.lookup(f"zero_optimization.offload_{what}.nvme_path")
        if path is None or (isinstance(path, JValue) and path.value in (None, "")):
            yield Finding(node.span, f"offload_{what} uses nvme but sets no nvme_path: DeepSpeed raises "
                                     "'nvme_path ... cannot be None if remote device is nvme'")


_GATHER_KEYS = ("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                "stage3_gather_fp16_weights_on_model_save")


@rule("D018", "zero3-save-without-16bit-weights", Severity.WARNING, kinds=KINDS, fixable=True)
def zero3_no_gather(ctx):
    """ZeRO-3 without stage3_gather_16bit_weights_on_model_save true: saved models hold no usable weights.

    ## What it does
    Reports a ZeRO stage 3 config where the key is false or absent (absent is false; accelerate also fills false).

    ## Why it matters
    Under ZeRO-3 each GPU holds a shard. Without gathering, `save_16bit_model()` / HF `save_model()` writes nothing
    or empty tensors (`torch.Size([0])`, a 905 KB `pytorch_model.bin`), and the run's result has to be rebuilt with
    `zero_to_fp32.py`.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3}}
    ```

    ## Fix
    Sets it to true (unsafe: saving gathers the full 16-bit model, which costs time and memory at each save).

    ## References
    https://github.com/huggingface/transformers/issues/21482
    https://github.com/hiyouga/LlamaFactory/issues/253
    https://github.com/deepspeedai/DeepSpeed/issues/3841
    """
    doc = _doc(ctx)
    if doc is None or _zero_stage(doc) != 3:
        return
    zero = doc.root.get("zero_optimization")
    members = [m for m in (zero.member(k) for k in _GATHER_KEYS) if m is not None]
    if any(_is_auto(m.value) or (isinstance(m.value, JValue) and m.value.value is True) for m in members):
        return
    if members:
        m = members[-1]
        if not (isinstance(m.value, JValue) and m.value.value is False):
            return  # odd value: D023's business
        yield Finding(m.value.span, f"{m.key} is false under ZeRO-3: saved models get no consolidated weights "
                                    "(use zero_to_fp32.py, or set it to true)",
                      fix=Fix(f"set {m.key} to true", (jfix.set_value(m.value, True),), Applicability.UNSAFE))
        return
    stage = zero.member("stage")
    yield Finding(stage.value.span if stage else zero.span,
                  "ZeRO-3 without stage3_gather_16bit_weights_on_model_save (defaults to false): saved models get no "
                  "consolidated weights",
                  fix=Fix("add \"stage3_gather_16bit_weights_on_model_save\": true",
                          jfix.insert_member(ctx.source.text, doc, zero, "stage3_gather_16bit_weights_on_model_save",
                                             True), Applicability.UNSAFE))


# -- D020 "auto" -------------------------------------------------------------------------------------------------
@rule("D020", "unfilled-auto-value", Severity.ERROR, kinds=KINDS)
def unfilled_auto(ctx):
    """A value of "auto" that nothing will fill in.

    ## What it does
    DeepSpeed never resolves "auto"; only HF Trainer and accelerate replace it, and only for the keys they know
    (batch sizes, gradient clipping, optimizer/scheduler params, fp16/bf16 enabled, the three hidden-size buckets;
    accelerate also the ZeRO stage, offload devices and nvme paths from its own config). This rule reports "auto":
    in a key neither integration fills; and in any key when a plain `deepspeed`/`torchrun` launch uses the file.

    ## Why it matters
    In keys DeepSpeed reads with dict.get the string stays and fails later (`TypeError: '>' not supported between
    instances of 'str' and 'float'`). In validated keys pydantic drops it and uses the default silently: `"stage":
    "auto"` turns ZeRO off (stage 0), so it is an error, other validated keys a warning.

    ## Example
    ```json
    {"gradient_clipping": "auto", "zero_optimization": {"stage": 3, "sub_group_size": "auto"}}
    ```

    ## Fix
    Write the value. Keep "auto" only for keys HF / accelerate fill, in files only they read.

    ## References
    https://github.com/deepspeedai/DeepSpeed/issues/1270
    https://github.com/huggingface/trl/issues/2154
    https://github.com/Roblox/FAI-RL/pull/70
    https://github.com/huggingface/transformers/blob/main/src/transformers/integrations/deepspeed.py
    """
    doc = _doc(ctx)
    if doc is None:
        return
    data = ds_keys()
    frameworks, _ = _consumers(ctx)
    plain_launch = bool(frameworks) and not frameworks & HF_FRAMEWORKS
    accelerate_launch = "accelerate" in frameworks
    hf_fill, acc_fill = _auto_fill_keys("hf_trainer"), _auto_fill_keys("accelerate")
    for path, m in doc.walk():
        if not _is_auto(m.value):
            continue
        canonical = data["aliases"].get(path, path)
        entry = data["keys"].get(canonical, {})
        parent = path.rpartition(".")[0]
        strict = entry.get("mode") == "strict" and _section_mode(parent, ctx) == "strict"
        fillable = canonical in hf_fill | acc_fill
        if not fillable:
            if canonical in data["keys"]:
                if entry.get("type") == "any":
                    continue  # takes "auto" itself (zenflow intervals)
            elif _section_mode(parent, ctx) != "open" or parent not in ("optimizer.params", "scheduler.params",
                                                                               "amp"):
                continue  # an unknown key: D001/D002 report it
        if plain_launch:
            why = "this file is launched by plain DeepSpeed, which never fills \"auto\""
        elif canonical in hf_fill or (canonical in acc_fill and accelerate_launch):
            continue
        elif canonical in acc_fill:
            why = "only `accelerate launch` with a DeepSpeed plugin config fills it; HF Trainer alone does not"
        else:
            why = "neither HF Trainer nor accelerate fills this key"
        if canonical == "zero_optimization.stage":
            yield Finding(m.value.span, f"\"stage\": \"auto\" — {why}; DeepSpeed then drops it and runs ZeRO stage 0")
        elif strict:
            default = entry.get("default")
            yield Finding(m.value.span, f"{m.key}: \"auto\" — {why}; DeepSpeed drops it and silently uses the default "
                                        f"({jfix.dumps(default)})", severity=Severity.WARNING)
        else:
            yield Finding(m.value.span, f"{m.key}: \"auto\" — {why}; DeepSpeed keeps the string and fails when it "
                                        "uses it (TypeError)")


# -- D021 bf16 with fp32 accumulation -----------------------------------------------------------------------------
def grad_accum_bf16_fix(text: str, doc: JSONDocument) -> Fix:
    """The edit that makes gradient accumulation bf16 (adds data_types when absent). Also used by memory rules."""
    return Fix('set "data_types": {"grad_accum_dtype": "bf16"}',
               jfix.insert_path(text, doc, ["data_types", "grad_accum_dtype"], "bf16"), Applicability.UNSAFE)


@rule("D021", "fp32-grad-accum-under-bf16", Severity.WARNING, kinds=KINDS, fixable=True)
def fp32_grad_accum(ctx):
    """Training in bf16 accumulates gradients in fp32 (data_types.grad_accum_dtype fp32) under ZeRO.

    ## What it does
    Reports `grad_accum_dtype` fp32 (or float32/float) when bf16 is enabled and the ZeRO stage is 1-3. Without the
    key DeepSpeed accumulates in the model dtype under ZeRO, so an absent key is not reported.

    ## Why it matters
    The gradient partition and its buffers are kept at 4 bytes per element instead of 2: twice the gradient memory,
    on the GPU or, with optimizer offload, in pinned host RAM. OpenRLHF up to 0.5.3 wrote fp32 here by default; its
    maintainers recommend bf16 accumulation when host memory runs out (13B PPO killed with SIGKILL).

    ## Example
    ```json
    {"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}, "data_types": {"grad_accum_dtype": "fp32"}}
    ```

    ## Fix
    Sets `"grad_accum_dtype": "bf16"` (unsafe: accumulation loses precision; usually fine for bf16 training).

    ## References
    https://github.com/OpenRLHF/OpenRLHF/issues/277
    https://github.com/deepspeedai/DeepSpeed/pull/4713
    https://github.com/deepspeedai/DeepSpeed/issues/2352
    """
    doc = _doc(ctx)
    if doc is None:
        return
    bf16, _ = _enabled(doc, precision_section(doc), ctx)
    stage = _zero_stage(doc)
    node = doc.lookup("data_types.grad_accum_dtype")
    if not bf16 or stage is None or stage < 1 or not isinstance(node, JValue):
        return
    if normalise_dtype(node.value) == "fp32":
        yield Finding(node.span, f"gradients accumulate in fp32 under bf16 training (ZeRO-{stage}): twice the "
                                 "gradient memory of bf16 accumulation", fix=grad_accum_bf16_fix(ctx.source.text, doc))


# -- D022 offload with a client optimizer ----------------------------------------------------------------------------
@rule("D022", "offload-with-unsupported-optimizer", Severity.ERROR, kinds=KINDS)
def offload_client_optimizer(ctx):
    """ZeRO-Offload with an optimizer DeepSpeed cannot run on the CPU.

    ## What it does
    Reports `offload_optimizer.device` cpu/nvme (or `cpu_offload: true`) when `optimizer.type` names a torch
    optimizer or a DeepSpeed optimizer without a CPU implementation (lamb, the 1-bit ones), unless
    `zero_force_ds_cpu_optimizer` is false.

    ## Why it matters
    `ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer ... set
    <"zero_force_ds_cpu_optimizer": false>` at initialize().

    ## Example
    ```json
    {"optimizer": {"type": "SGD"}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Fix
    Use `"type": "AdamW"` (DeepSpeedCPUAdam), or set `zero_force_ds_cpu_optimizer` to false and accept the slow step.

    ## References
    https://github.com/deepspeedai/DeepSpeed/issues/7524
    https://github.com/OpenMOSS/MOSS/issues/272
    https://github.com/bitsandbytes-foundation/bitsandbytes/issues/596
    """
    doc = _doc(ctx)
    if doc is None:
        return
    device, _ = _device(doc, "optimizer")
    legacy = doc.lookup("zero_optimization.cpu_offload")
    offloaded = device in ("cpu", "nvme") or (isinstance(legacy, JValue) and legacy.value is True)
    type_node = doc.lookup("optimizer.type")
    force = doc.root.get("zero_force_ds_cpu_optimizer")
    if not offloaded or not isinstance(type_node, JValue) or not isinstance(type_node.value, str):
        return
    if isinstance(force, JValue) and force.value is False:
        return
    stage = _zero_stage(doc)
    if stage is not None and stage == 0:
        return
    opts = ds_keys()["optimizers"]
    name = type_node.value.lower()
    if name in opts["offload_capable"] or (name in opts["names"] and name.startswith("mu")):
        return
    yield Finding(type_node.span, f"optimizer {type_node.value!r} with ZeRO-Offload: DeepSpeed raises "
                                  "ZeRORuntimeException (only its CPU Adam/AdamW/Adagrad/Lion run offloaded) unless "
                                  "zero_force_ds_cpu_optimizer is false")


# -- D023 values DeepSpeed rejects ----------------------------------------------------------------------------------
def _check_value(entry: dict, value, config) -> str | None:
    """Why DeepSpeed rejects value for this key (pydantic lax coercion for strict keys), or None."""
    kind = entry["type"]
    if value is None:
        return None if entry.get("nullable") or kind == "any" else "null is not allowed"
    if kind == "int":
        if isinstance(value, bool):
            return None
        if isinstance(value, float):
            if not value.is_integer():
                if version_at_least(config, "0.15.0"):
                    return f"{value!r} has a fractional part but must be a whole number (int_from_float)"
                return None
            value = int(value)
        elif isinstance(value, str):
            text = value.strip()
            if not (text[1:] if text[:1] in ("+", "-") else text).isdecimal():  # what int() accepts
                return f"the string {value!r} is not a whole number (int_parsing); write it as a number"
            value = int(value)
        elif not isinstance(value, int):
            return f"expected a whole number, got {type(value).__name__}"
    elif kind == "float":
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return f"the string {value!r} is not a number"
        elif isinstance(value, (list, dict)):
            return "expected a number"
    elif kind == "bool":
        if isinstance(value, str) and value.strip().lower() not in TRUE_STRINGS | FALSE_STRINGS:
            return f"{value!r} is not a boolean"
        if isinstance(value, (list, dict)) or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                               and value not in (0, 1)):
            return f"{value!r} is not a boolean"
    elif kind == "enum":
        allowed = entry["enum"]
        probe = value
        if isinstance(value, str) and all(isinstance(a, int) for a in allowed) and value.strip().isdecimal():
            probe = int(value)
        if isinstance(value, float) and value.is_integer():
            probe = int(value)
        if entry.get("case_insensitive") and isinstance(value, str):
            ok = value.upper() in {str(a).upper() for a in allowed}
        else:
            ok = probe in allowed and not isinstance(probe, bool)
        if not ok:
            return f"{jfix.dumps(value)} is not one of {', '.join(jfix.dumps(a) for a in allowed)}"
        return None
    elif kind == "str":
        if not isinstance(value, str):
            return f"expected a string, got {jfix.dumps(value)}"
    elif kind == "list":
        if not isinstance(value, list):
            return "expected a list"
    if kind in ("int", "float") and isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in entry and value < entry["minimum"]:
            return f"{value} is below the minimum {entry['minimum']}"
        if "maximum" in entry and value > entry["maximum"]:
            return f"{value} is above the maximum {entry['maximum']}"
    return None


def _lenient_hazard(entry: dict, value) -> str | None:
    """What goes wrong with an unchecked (dict.get) key: a string where a number or a bool is read."""
    kind = entry["type"]
    if kind in ("int", "float") and isinstance(value, str):
        return f"the string {value!r} is used as is (a number is expected): comparisons and arithmetic fail later"
    if kind == "bool" and isinstance(value, str):
        return f"the string {value!r} is read as true (any non-empty string is)"
    if kind == "enum" and entry.get("validated"):
        return _check_value(entry, value, None)
    return None


@rule("D023", "invalid-ds-config-value", Severity.ERROR, kinds=KINDS)
def invalid_value(ctx):
    """A value of the wrong type or out of range for its key.

    ## What it does
    Checks each known key's value against the key table, applying DeepSpeed's own leniency: validated (pydantic)
    keys accept `"2"` for 2, `5e8` for 500000000 and `"true"` for true, but not `15099494.4` for an integer (since
    DeepSpeed 0.15.0), not the string `"5e8"`, not values outside an enum (`"device": "gpu"`, `"stage": 4`) or below
    a minimum. Keys DeepSpeed reads unchecked get a warning when a string stands where a number or boolean is read,
    and an error for enum values DeepSpeed validates at start-up (`communication_data_type`,
    `checkpoint.tag_validation`, ...).

    ## Why it matters
    Validated keys fail at start-up with a ValidationError; unchecked ones misbehave later (`"false"` is true).

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 15099494.4, "reduce_bucket_size": "5e8"}}
    ```

    ## Fix
    Write a whole number (`15099494`), a JSON number instead of a string, or one of the listed values.

    ## References
    https://github.com/deepspeedai/DeepSpeed/issues/6525
    https://github.com/hiyouga/LlamaFactory/issues/5252
    https://github.com/huggingface/accelerate/pull/2814
    https://github.com/deepspeedai/DeepSpeed/pull/5167
    """
    doc = _doc(ctx)
    if doc is None:
        return
    data = ds_keys()
    for section, obj in _sections(doc):
        mode = _section_mode(section, ctx)
        if mode == "open":
            continue
        for m in obj.members:
            path = f"{section}.{m.key}" if section else m.key
            canonical = _canonical(path)
            entry = data["keys"].get(canonical)
            if entry is None or canonical in data["sections"] or _is_auto(m.value):
                continue
            value = m.value.to_python()
            strict = entry["mode"] == "strict" and mode == "strict"
            if strict or (entry.get("validated") and entry["type"] == "enum"):
                why = _check_value(entry, value, ctx)
                if why:
                    what = "rejects it at start-up" if strict else "raises at start-up"
                    note = f" ({assumed_version_note(ctx)})" if "int_from_float" in why else ""
                    yield Finding(m.value.span, f"{m.key}: {why}; DeepSpeed {what}{note}")
            else:
                why = _lenient_hazard(entry, value)
                if why:
                    yield Finding(m.value.span, f"{m.key}: {why}; DeepSpeed does not check this key",
                                  severity=Severity.WARNING)
