"""D023 invalid-ds-config-value: a value of the wrong type or out of range for its key."""
from __future__ import annotations

from rlhf_lint.frameworks.deepspeed import assumed_version_note, ds_keys, version_at_least
from rlhf_lint.fixers import json as jfix
from rlhf_lint.frameworks.edge import edge_note
from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.deepspeed._common import (
    FALSE_STRINGS, KINDS, TRUE_STRINGS, _canonical, _doc, _is_auto, _past_edge, _section_mode, _sections,
)


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
def invalid_ds_config_value(ctx):
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
    edge = _past_edge(ctx)
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
                    if edge is not None:  # the key's type is the table's: a newer release may have changed it
                        yield Finding(m.value.span, f"{m.key}: {why} in the key table of DeepSpeed "
                                                    f"{data['deepspeed']['version']}, but {edge_note('deepspeed', *edge)}: "
                                                    f"that release may differ", severity=Severity.WARNING)
                        continue
                    yield Finding(m.value.span, f"{m.key}: {why}; DeepSpeed {what}{note}")
            else:
                why = _lenient_hazard(entry, value)
                if why:
                    yield Finding(m.value.span, f"{m.key}: {why}; DeepSpeed does not check this key",
                                  severity=Severity.WARNING)
