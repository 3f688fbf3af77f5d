"""fixers/json.py: exact round trips, and properties (bytes outside the edits kept, output parses, idempotent)."""
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rlhf_lint.fixers.json import delete_member, indent_unit, insert_member, insert_path, rename_key, set_value
from rlhf_lint.fixers.text import apply_edits
from rlhf_lint.readers.json import JObject, parse_json


def _apply(text, edits):
    return apply_edits(text, edits)


def test_insert_into_multiline_object_takes_sibling_indentation_and_crlf():
    text = '{\r\n    "a": 1, // keep\r\n    "b": {\r\n        "x": 1\r\n    }\r\n}\r\n'
    doc = parse_json(text)
    out = _apply(text, insert_path(text, doc, ["data_types", "grad_accum_dtype"], "bf16"))
    assert out == ('{\r\n    "a": 1, // keep\r\n    "b": {\r\n        "x": 1\r\n    },\r\n    "data_types": {\r\n'
                   '        "grad_accum_dtype": "bf16"\r\n    }\r\n}\r\n')


def test_insert_into_one_line_and_empty_objects():
    for text, expected in (('{"a": 1}', '{"a": 1, "k": true}'), ("{}", '{"k": true}'),
                           ("{\n}\n", '{\n  "k": true\n}\n'), ('{"a": 1,}', '{"a": 1, "k": true,}')):
        doc = parse_json(text)
        assert _apply(text, insert_member(text, doc, doc.root, "k", True)) == expected


def test_insert_keeps_a_trailing_comment_on_its_member():
    text = '{\n  "a": 1 // the a\n}\n'
    doc = parse_json(text)
    assert _apply(text, insert_member(text, doc, doc.root, "b", 2)) == '{\n  "a": 1, // the a\n  "b": 2\n}\n'


def test_insert_nested_into_existing_section_and_replace_non_object():
    text = '{\n\t"data_types": {\n\t\t"param_dtype": "bf16"\n\t}\n}'
    doc = parse_json(text)
    assert _apply(text, insert_path(text, doc, ["data_types", "grad_accum_dtype"], "bf16")) == \
        '{\n\t"data_types": {\n\t\t"param_dtype": "bf16",\n\t\t"grad_accum_dtype": "bf16"\n\t}\n}'
    text = '{"data_types": null}'
    doc = parse_json(text)
    assert _apply(text, insert_path(text, doc, ["data_types", "grad_accum_dtype"], "bf16")) == \
        '{"data_types": {"grad_accum_dtype": "bf16"}}'


def test_delete_member_variants():
    cases = [
        ('{"a": 1, "b": 2, "c": 3}', 1, '{"a": 1, "c": 3}'),
        ('{"a": 1, "b": 2}', 1, '{"a": 1}'),
        ('{"a": 1}', 0, '{}'),
        ('{\n  "a": 1,\n  "b": 2 // gone too\n}\n', 1, '{\n  "a": 1\n}\n'),
        ('{\n  "a": 1,\n  "b": 2,\n  "c": 3\n}\n', 1, '{\n  "a": 1,\n  "c": 3\n}\n'),
        ('{\r\n  "a": 1,\r\n  "b": 2\r\n}\r\n', 0, '{\r\n  "b": 2\r\n}\r\n'),
    ]
    for text, index, expected in cases:
        doc = parse_json(text)
        assert _apply(text, delete_member(text, doc.root, doc.root.members[index])) == expected, text


def test_rename_and_set_value():
    text = '{"overlap_com": true, "x": 1}'
    doc = parse_json(text)
    assert _apply(text, [rename_key(doc.root.members[0], "overlap_comm")]) == '{"overlap_comm": true, "x": 1}'
    assert _apply(text, [set_value(doc.root.members[1].value, "two")]) == '{"overlap_com": true, "x": "two"}'


def test_indent_unit_is_read_from_the_file():
    text = '{\n    "a": {\n        "b": 1\n    }\n}'
    assert indent_unit(text, parse_json(text)) == "    "


# -- properties ---------------------------------------------------------------------------------------------------
keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
scalars = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(), st.text(alphabet="xyz é", max_size=5))
values = st.recursive(scalars, lambda inner: st.dictionaries(keys, inner, max_size=3), max_leaves=6)
documents = st.dictionaries(keys, values, max_size=5)
layouts = st.sampled_from([None, 2, 4, "\t"])
newlines = st.sampled_from(["\n", "\r\n"])


def _render(doc, indent, newline):
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    return text.replace("\n", newline) + newline


def _objects(node):
    if isinstance(node, JObject):
        yield node
        for m in node.members:
            yield from _objects(m.value)


def _assert_outside_kept(text, edits, out):
    edits = sorted(edits, key=lambda e: e.start)
    pos_in, pieces = 0, []
    for e in edits:
        pieces.append(text[pos_in:e.start])
        pos_in = e.end
    pieces.append(text[pos_in:])
    # every untouched piece appears in order in the output
    at = 0
    for piece in pieces:
        found = out.find(piece, at)
        assert found >= 0
        at = found + len(piece)


@settings(max_examples=80, deadline=None)
@given(documents, layouts, newlines, keys, values)
def test_insert_member_property(doc_value, indent, newline, key, value):
    text = _render(doc_value, indent, newline)
    doc = parse_json(text)
    for obj in list(_objects(doc.root))[:3]:
        if key in obj.keys():
            continue
        edits = insert_member(text, doc, obj, key, value)
        out = _apply(text, edits)
        _assert_outside_kept(text, edits, out)
        parsed = json.loads(out)
        assert parse_json(out)  # the engine's reader agrees
        if newline == "\r\n":
            assert "\n" not in out.replace("\r\n", "")
        if obj is doc.root:
            assert parsed[key] == value


@settings(max_examples=80, deadline=None)
@given(documents, layouts, newlines)
def test_delete_member_property(doc_value, indent, newline):
    text = _render(doc_value, indent, newline)
    doc = parse_json(text)
    for obj in list(_objects(doc.root))[:3]:
        for member in obj.members[:3]:
            edits = delete_member(text, obj, member)
            out = _apply(text, edits)
            parsed = json.loads(out)  # strict JSON still (no trailing comma left behind)
            if obj is doc.root:
                expected = dict(doc_value)
                del expected[member.key]
                assert parsed == expected


@settings(max_examples=60, deadline=None)
@given(documents, layouts, newlines, st.lists(keys, min_size=1, max_size=3), scalars)
def test_insert_path_property(doc_value, indent, newline, path, value):
    text = _render(doc_value, indent, newline)
    doc = parse_json(text)
    out = _apply(text, insert_path(text, doc, path, value))
    parsed = json.loads(out)
    node = parsed
    for part in path:
        node = node[part]
    assert node == value
    # idempotent: setting the same path again to the same value changes nothing of substance
    doc2 = parse_json(out)
    again = _apply(out, insert_path(out, doc2, path, value))
    assert json.loads(again) == parsed and again == out
