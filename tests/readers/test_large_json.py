"""A large JSON object (issue 17: a 1 MB ds_config is checked in under 5 s): strings and blanks are read in runs,
and key lookups on a large object use one index, with the same answers as the scan they replace."""
from __future__ import annotations

import json
import random

from rlhf_lint.readers.json import JMember, JValue, parse_json
from rlhf_lint.model import Span


def test_long_strings_blanks_and_escapes_read_as_json_load_reads_them():
    rng = random.Random(5)
    values = ["x" * 100_000, 'a"b\\c\n\u00e9\U0001f600', "\t" * 50, "", " spaced  ", "/" * 3]
    members = [f'"k{i}"{" " * rng.randrange(3)}:\n\t {json.dumps(v, ensure_ascii=bool(i % 2))}'
               for i, v in enumerate(values)]
    text = "{\r\n  " + ",\n\n   ".join(members) + "   \n}"
    doc = parse_json(text)
    assert doc.root.to_python() == json.loads(text)
    for m in doc.root.members:  # spans still cover each key and value exactly
        assert json.loads(text[m.key_span.start:m.key_span.end]) == m.key
        assert json.loads(text[m.value.span.start:m.value.span.end]) == m.value.to_python()


def test_unterminated_and_broken_strings_are_still_errors_at_their_place():
    import pytest

    from rlhf_lint.readers.json import JSONError

    for text, offset in (('{"a": "' + "y" * 5000, 6), ('{"a": "x\ny"}', 8), ('{"a": "x\\q"}', 8)):
        with pytest.raises(JSONError) as err:
            parse_json(text)
        assert err.value.offset == offset


def test_member_lookup_on_a_large_object_matches_the_scan_and_follows_appends():
    keys = [f"k{i % 150}" for i in range(400)]  # duplicates: the last one wins, as in json.load
    doc = parse_json("{" + ", ".join(f'"{k}": {i}' for i, k in enumerate(keys)) + "}")
    obj = doc.root
    expected = {}
    for i, k in enumerate(keys):
        expected[k] = i
    for k, v in expected.items():
        assert obj.get(k).value == v
    assert obj.get("missing") is None
    obj.members.append(JMember("k3", Span(0, 1), JValue(Span(0, 1), "late")))
    assert obj.get("k3").value == "late"


def test_the_c_scanner_path_reads_strings_as_the_loop_does_errors_included():
    from rlhf_lint.readers.json import JSONError, _Parser

    rng = random.Random(2)
    alphabet = ["a", "\u00e9", '"', "\\", '\\"', "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\ud83d", "\\ude00x",
                "\t", "\n", "\x01", "\\q", "\\u12", "/", "\\/"]
    errors = 0
    for _ in range(5000):
        body = "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
        text = '"' + body + ('"' if rng.random() < 0.9 else "")
        got = []
        for read in ("string", "_string"):  # the scanner first (as parsing does), and the loop alone
            parser = _Parser(text)
            try:
                got.append((getattr(parser, read)(), parser.pos))
            except JSONError as exc:
                got.append(("error", exc.message, exc.offset))
        assert got[0] == got[1], text
        errors += got[0][0] == "error"
    assert 1000 < errors < 4000
