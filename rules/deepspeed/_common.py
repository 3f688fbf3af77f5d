"""D: DeepSpeed ds_config checks. Facts come from schemas/ds_config_keys.json (built from ds_config_keys.tsv).

"auto" and HF: a value "auto" is legal only when Hugging Face Trainer or accelerate fill it. The file is taken as
consumed by HF when a launch that names it runs accelerate/TRL/transformers, or, with no such launch known, when it
already uses "auto" in a key those integrations fill (the file was written for them). A launch by plain `deepspeed`
or `torchrun` overrides that guess.

D: cross-field checks DeepSpeed makes while it builds its config or its engine (research sections 2.2 and 2.3).

Facts (which optimizers, which schedulers, since which release) are in schemas/ds_config_checks.json. A check fires
only on literal values: a stage or a type that is "auto" or missing stays unknown.

Helpers shared by the rules of this family (each rule is a module of this folder, named after it).
"""
from __future__ import annotations

import functools

from rlhf_lint.frameworks.deepspeed import assumed_version_note, ds_keys, fork_knows, version_at_least
from rlhf_lint.fixers import json as jfix
from rlhf_lint.readers.json import JMember, JObject, JSONDocument, JValue
from rlhf_lint.model import Applicability, Finding, Fix, Severity


KINDS = {"ds_config"}
TRUE_STRINGS = {"true", "yes", "on", "1", "t", "y"}
FALSE_STRINGS = {"false", "no", "off", "0", "f", "n"}


def hf_frameworks() -> frozenset[str]:
    """Frameworks whose launch fills the "auto" values of a ds_config (schemas/ds_config_auto_fillers.json)."""
    from rlhf_lint.schemas import load

    return frozenset(load("ds_config_auto_fillers.json")["frameworks"])


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


def _section_era(path: str, config) -> tuple[dict | None, bool]:
    """(the era of a section whose meaning changed across releases, whether the DeepSpeed version is known): the
    era of that version, or with the version assumed, of the table's version (schemas/ds_config_section_eras.json)."""
    from rlhf_lint.frameworks.deepspeed import ds_version, row_at, version_tuple
    from rlhf_lint.schemas import load

    eras = load("ds_config_section_eras.json").get(path)
    if not eras:
        return None, True
    version, known = ds_version(config)
    return row_at(eras, version_tuple(version), start="from"), known


def _older_era_keys(path: str) -> dict[str, dict]:
    """key -> the strict era that accepted it, for keys of a section that an older release validated."""
    from rlhf_lint.schemas import load

    return {k: era for era in load("ds_config_section_eras.json").get(path, []) if era["mode"] == "strict"
            for k in era["keys"] or ()}


def _section_mode(path: str, config) -> str:
    era, known = _section_era(path, config) if path == "compile" else (None, True)
    if era is not None and known and era["mode"] == "ignored":
        return "open"  # the release reads nothing of it: no key can be wrong
    sec = ds_keys()["sections"].get(path)
    if sec is None:
        return "open"
    if sec.get("strict_since") and not version_at_least(config, sec["strict_since"]):
        return "lenient"
    if sec.get("model_since") and sec["mode"] == "strict" and not version_at_least(config, sec["model_since"]):
        from rlhf_lint.frameworks.deepspeed import ds_version

        if ds_version(config)[1]:
            return "lenient"  # no pydantic model of the section in that release: nothing validated it
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


def _children(section: str) -> frozenset[str]:
    section = "bf16" if section == "bfloat16" else section
    return _children_table(id(ds_keys())).get(section, frozenset())


@functools.lru_cache(maxsize=4)  # keyed by the table loaded: one pass over it, not one per unknown key reported
def _children_table(_table_id: int) -> dict[str, frozenset[str]]:
    data = ds_keys()
    names: dict[str, set[str]] = {}
    for table in (data["keys"], data["sections"], data["aliases"]):
        for path in table:
            if not path:
                continue
            parent, _, name = path.rpartition(".")
            names.setdefault(parent, set()).add(name)
    deprecated = data["deprecated"]
    return {section: frozenset(n for n in found if (f"{section}.{n}" if section else n) not in deprecated)
            for section, found in names.items()}


def _canonical(path: str) -> str:
    """The key table's name for a path: the legacy bfloat16 section reads like bf16, aliases map to their key."""
    if path.startswith("bfloat16."):
        path = "bf16." + path[len("bfloat16."):]
    return ds_keys()["aliases"].get(path, path)


def _presence(path: str, ctx) -> tuple[str, str]:
    """Whether a key exists in the targeted release: "yes", "no" or "maybe" (with why) for a key of the table, read
    against the releases the table was read from; "unlisted" when no release read has it. With the release
    assumed, every key of the table counts."""
    from rlhf_lint.frameworks.deepspeed import ds_version, key_presence, version_tuple

    if not _known(path):
        return "unlisted", ""
    data = ds_keys()
    version, known = ds_version(ctx)
    row = data["keys"].get(_canonical(path))
    refused = data["removed"].get(path)
    if not known or row is None or (refused and version_tuple(version) >= version_tuple(refused["since"])):
        return "yes", ""  # a section, an alias, a deprecated name; a key the release refuses is D041's
    return key_presence(row, version)


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


def _is_auto(node) -> bool:
    return isinstance(node, JValue) and node.value == "auto"


def _unknown_keys(ctx, strict: bool):
    doc = _doc(ctx)
    if doc is None:
        return
    data = ds_keys()
    edge = _past_edge(ctx)
    for section, obj in _sections(doc):
        mode = _section_mode(section, ctx)
        if mode == "open" or (mode == "strict") != strict:
            continue
        present = set(obj.keys())
        era, known = _section_era(section, ctx) if section == "compile" else (None, True)
        era_keys = era["keys"] if era is not None and known and era["keys"] is not None else None
        older = _older_era_keys(section) if era is not None and not known else {}
        for m in obj.members:
            path = f"{section}.{m.key}" if section else m.key
            if fork_knows(ctx, section, m.key):
                continue
            if era_keys is not None:
                if m.key in era_keys:
                    continue
            else:
                state, why = _presence(path, ctx)
                if state == "yes":
                    continue
                if state != "unlisted":  # a key of another release: no rename, the release decides
                    yield _other_release_finding(ctx, m, section, strict, state, why)
                    continue
                before = _before_edge(ctx)
                if before is not None:
                    yield _before_edge_finding(m, section, strict, before)
                    continue
            if m.key in older and strict:
                # valid on an older release, rejected on the one assumed: without the version it is not certain
                accepted = older[m.key]
                yield Finding(m.key_span, f"key {m.key!r} in {section!r}: DeepSpeed {era['from']} and later reject "
                              f"it (ValidationError), releases {accepted['from']} to before {accepted['until']} "
                              f"accepted it; {assumed_version_note(ctx)}", severity=Severity.WARNING)
                continue
            if not strict and _is_comment_key(m.key):
                continue  # `"_comment": "..."` is how JSON files carry comments; ignoring it is the intent
            where = f"in {section!r}" if section else "at the top level"
            rejected = data["rejected"].get(path)
            suggestion = rejected["suggest"] if rejected else None
            if suggestion is None and not rejected:
                suggestion = _closest(m.key, set(era_keys) if era_keys is not None else _children(section))
            if strict:
                message = f"unknown key {m.key!r} {where}: DeepSpeed rejects it at start-up (ValidationError)"
            else:
                message = f"unknown key {m.key!r} {where} is silently ignored by DeepSpeed"
            if rejected:
                message += f"; {rejected['message']}"
            fix = None
            if edge is not None:  # the key may be new in a release the table lacks: say so, rewrite nothing
                yield _past_edge_finding(m, where, strict, edge, suggestion)
                continue
            if suggestion:
                message += f"; did you mean {suggestion!r}?"
                if suggestion not in present:
                    fix = Fix(f"rename {m.key!r} to {suggestion!r}", (jfix.rename_key(m, suggestion),),
                              Applicability.SAFE if strict else Applicability.UNSAFE)
            if strict:
                # a section checked by its era's keys (schemas/ds_config_section_eras.json) was checked at the release
                table = "" if era_keys is not None else _table_note(ctx)
                message += f" ({assumed_version_note(ctx)}{table}"
                message += "; strict since 0.17.1)" if section in ("fp16", "bf16", "bfloat16") else ")"
            yield Finding(m.key_span, message, fix=fix)


def _other_release_finding(ctx, member, section: str, strict: bool, state: str, why: str) -> Finding:
    from rlhf_lint.frameworks.deepspeed import ds_version

    version = ds_version(ctx)[0]
    where = f"in {section!r}" if section else "at the top level"
    edge = _past_edge(ctx)
    if state == "no" and edge is not None:  # removed before the edge: a newer release may have it back
        from rlhf_lint.frameworks.edge import edge_note

        return Finding(member.key_span, f"key {member.key!r} {where} was {why.replace('DeepSpeed ', '')}, but "
                                        f"{edge_note('deepspeed', *edge)}: that release may differ",
                       severity=Severity.WARNING)
    if state == "maybe":
        effect = "may reject it at start-up" if strict else "may ignore it"
        return Finding(member.key_span, f"key {member.key!r} {where} was {why}; rlhf-lint has no key table of "
                                        f"DeepSpeed {version} itself: that release {effect} "
                                        f"({assumed_version_note(ctx)})", severity=Severity.WARNING)
    if strict:
        return Finding(member.key_span, f"key {member.key!r} {where} is not a key of DeepSpeed {version} ({why}): "
                                        f"it rejects it at start-up (ValidationError) ({assumed_version_note(ctx)})")
    return Finding(member.key_span, f"key {member.key!r} {where} is not read by DeepSpeed {version} ({why}): it is "
                                    f"silently ignored ({assumed_version_note(ctx)})", severity=Severity.WARNING)


def _before_edge(ctx):
    """(version, origin, oldest release read) when the targeted DeepSpeed is older than every release read."""
    from rlhf_lint.frameworks.deepspeed import before_edge, ds_version_origin, fork_source

    if fork_source(ctx):
        return None
    version, origin = ds_version_origin(ctx)
    oldest = before_edge(version) if origin != "assumed" else None
    if oldest is None:
        return None
    return version, "set by deepspeed-version" if origin == "configured" else origin, oldest


def _before_edge_finding(member, section: str, strict: bool, before) -> Finding:
    version, origin, oldest = before
    where = f"in {section!r}" if section else "at the top level"
    effect = "may accept it" if strict else "may read it"
    return Finding(member.key_span, f"key {member.key!r} {where} is not in any DeepSpeed release rlhf-lint read, "
                                    f"but DeepSpeed {version} ({origin}) is older than the oldest one, {oldest}: "
                                    f"that release {effect}", severity=Severity.WARNING)


def _table_version() -> str:
    return ds_keys()["deepspeed"]["version"]


def _table_note(ctx) -> str:
    """Names the table a key was checked against when it is not the targeted release's own."""
    from rlhf_lint.frameworks.deepspeed import ds_version

    from rlhf_lint.frameworks.deepspeed import fork_source

    from rlhf_lint.frameworks.deepspeed import read_releases, version_tuple

    version = ds_version(ctx)[0]
    if fork_source(ctx):
        return f"; keys of DeepSpeed {_table_version()} and those the checkout's config modules declare"
    read = read_releases()
    if version in read or version_tuple(read[0]) <= version_tuple(version) <= version_tuple(read[-1]):
        return ""  # the releases read around it cover it
    return f"; checked against the key table of DeepSpeed {_table_version()}"


def _past_edge(ctx):
    """(version, origin) when the targeted DeepSpeed is newer than the key table, else None."""
    from rlhf_lint.frameworks.deepspeed import ds_version_origin
    from rlhf_lint.frameworks.edge import is_past, newest_known

    from rlhf_lint.frameworks.deepspeed import fork_source

    if fork_source(ctx):
        return None  # the checkout's own modules are read instead
    version, origin = ds_version_origin(ctx)
    if origin != "assumed" and is_past(version, newest_known("deepspeed")):
        return version, "set by deepspeed-version" if origin == "configured" else origin
    return None


def _past_edge_finding(member, where: str, strict: bool, edge, suggestion) -> Finding:
    from rlhf_lint.frameworks.edge import edge_note
    from rlhf_lint.model import Severity

    version, origin = edge
    effect = "may accept it" if strict else "may read it"
    message = (f"key {member.key!r} {where} is not in the key table of DeepSpeed {_table_version()}, but "
               f"{edge_note('deepspeed', version, origin)}: that release {effect}")
    if suggestion:
        message += f"; did you mean {suggestion!r}?"
    return Finding(member.key_span, message, severity=Severity.WARNING)


def _is_comment_key(key: str) -> bool:
    return key.startswith(("_", "//", "#")) or key.lower() in ("comment", "comments", "description", "note", "notes")


def _closest(key: str, candidates: set[str]) -> str | None:
    """The one candidate close enough to be the intended key, or None when none or several are."""
    import difflib  # only for unknown keys: difflib costs ~1 ms of every start

    low = key.lower()
    # only a candidate whose ratio can reach 0.75 can be the answer or make it ambiguous (a best one needs 0.8,
    # a rival best - 0.05): quick_ratio's multiset bound, counted here, skips the matcher for the others
    counts = _letters(low)
    scored = sorted(((difflib.SequenceMatcher(None, low, c.lower()).ratio(), c) for c in candidates
                     if _bound(counts, low, c.lower()) >= 0.75), reverse=True)
    if not scored or scored[0][0] < 0.8:
        return None
    if len(scored) > 1 and scored[1][0] >= scored[0][0] - 0.05:
        return None  # ambiguous
    return scored[0][1]


def _letters(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    return counts


def _bound(counts: dict[str, int], a: str, b: str) -> float:
    """difflib's quick_ratio of a and b (an upper bound of ratio): characters in common, counted with multiplicity;
    0 at once when the lengths alone keep it under 0.75 (real_quick_ratio)."""
    if not a and not b:
        return 1.0
    total = len(a) + len(b)
    if 2.0 * min(len(a), len(b)) / total < 0.75:
        return 0.0
    common = sum(min(n, counts.get(ch, 0)) for ch, n in _candidate_letters(b).items())
    return 2.0 * common / total


@functools.lru_cache(maxsize=4096)  # candidates come from the key tables: a few hundred names
def _candidate_letters(text: str) -> dict[str, int]:
    return _letters(text)


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


def _device(doc, what: str) -> tuple[str | None, object]:
    node = doc.lookup(f"zero_optimization.offload_{what}.device")
    if isinstance(node, JValue) and isinstance(node.value, str):
        return node.value.lower(), node
    return None, node


DS = "https://github.com/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641/deepspeed"


def checks() -> dict:
    from rlhf_lint.schemas import load

    return load("ds_config_checks.json")


def _literal(doc, dotted: str):
    """(python value, node) of a scalar at dotted, or (None, None) when absent, "auto" or not a scalar."""
    node = doc.lookup(dotted)
    if not isinstance(node, JValue) or _is_auto(node):
        return None, None
    return node.value, node


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _optimizer(doc):
    """(DeepSpeed's name for optimizer.type, node): DeepSpeed lower-cases its own names, torch names stay."""
    value, node = _literal(doc, "optimizer.type")
    if not isinstance(value, str):
        return None, None
    from rlhf_lint.frameworks.deepspeed import ds_keys

    low = value.lower()
    return (low if low in ds_keys()["optimizers"]["names"] else value), node


def _is_true(doc, dotted: str) -> bool:
    value, _ = _literal(doc, dotted)
    return value is True


def _amp(doc):
    value, node = _literal(doc, "amp.enabled")
    return node if value is True else None
