import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlhf_lint.readers.json import MAX_DEPTH, JArray, JObject, JSONError, JValue, parse_json


def test_spans_point_at_keys_and_values():
    text = '{\n  "zero_optimization": {"stage": 2},\n  "fp16": {"enabled": true}\n}\n'
    doc = parse_json(text)
    stage = doc.lookup("zero_optimization.stage")
    assert isinstance(stage, JValue) and stage.value == 2
    assert text[stage.span.start:stage.span.end] == "2"
    member = doc.root.member("fp16")
    assert text[member.key_span.start:member.key_span.end] == '"fp16"'
    assert [p for p, _ in doc.walk()] == ["zero_optimization", "zero_optimization.stage", "fp16", "fp16.enabled"]


def test_hjson_extensions_are_recorded_not_rejected():
    text = '{\n  // comment\n  "a": 1, # another\n  "b": [1, 2,],\n  /* block */ "c": 3,\n}'
    doc = parse_json(text)
    assert doc.root.to_python() == {"a": 1, "b": [1, 2], "c": 3}
    assert [text[s.start:s.end] for s in doc.comments] == ["// comment", "# another", "/* block */"]
    assert len(doc.trailing_commas) == 2


def test_duplicate_keys_kept_in_order_last_wins():
    doc = parse_json('{"a": 1, "a": 2}')
    assert [m.key for m in doc.root.members] == ["a", "a"]
    assert doc.root.get("a").value == 2


@pytest.mark.parametrize(
    "text, message, offset",
    [
        ('{"a": 1,, }', "expected a double-quoted key", 8),
        ('{"a": tru}', "bare word", 6),
        ("{'a': 1}", "double-quoted key", 1),
        ('{"a": 1', "unterminated object", 0),
        ('{"a": "x\n"}', "line break inside a string", 8),
        ("", "empty document", 0),
        ('{"a": 1} x', "after the end", 9),
    ],
)
def test_errors_have_positions(text, message, offset):
    with pytest.raises(JSONError) as info:
        parse_json(text)
    assert message in info.value.message
    assert info.value.offset == offset


def test_depth_is_bounded():
    with pytest.raises(JSONError, match="nesting deeper"):
        parse_json("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5))


def test_escapes_and_unicode():
    doc = parse_json('{"k\\u00e9y": "a\\n\\"b\\"", "n": -1.5e3}')
    assert doc.root.to_python() == {"kéy": 'a\n"b"', "n": -1500.0}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([None, 2, 4]))
def test_agrees_with_stdlib_json(value, indent):
    text = json.dumps(value, indent=indent)
    assert parse_json(text).root.to_python() == json.loads(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_never_crashes_on_arbitrary_text(text):
    try:
        doc = parse_json(text)
    except JSONError as exc:
        assert 0 <= exc.offset <= len(text)
    else:
        assert isinstance(doc.root, (JObject, JArray, JValue))


def test_python_json_constants_are_values():
    # axolotl's spectrum SNR tables hold `Infinity`; Python's json (what DeepSpeed loads configs with) accepts it
    text = '{"snr": Infinity, "low": -Infinity, "gap": NaN, "n": [1, -2.5]}'
    doc = parse_json(text)
    data = doc.root.to_python()
    assert data["snr"] == float("inf") and data["low"] == float("-inf") and data["gap"] != data["gap"]
    assert data == {**json.loads(text), "gap": data["gap"]}
    low = doc.lookup("low")
    assert text[low.span.start:low.span.end] == "-Infinity"
    with pytest.raises(JSONError):
        parse_json('{"a": Inf}')
