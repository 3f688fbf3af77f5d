"""Property tests: no input file, however mangled, crashes a parser, job builder, rule or fixer."""
import os
import random
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from lintutil import ROOT
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint

sys.path.insert(0, os.path.join(ROOT, "bench"))
from mutations import OPERATIONS, seeds  # noqa: E402

SEEDS = seeds(7)
# the megabyte-sized mutations run in bench/fuzz.py and in the targeted tests below, not in every example
CHEAP = [op for op in OPERATIONS if op.__name__ not in ("_op_huge_value", "_op_many_lines", "_op_deep_nesting",
                                                         "_op_duplicate_keys_one_line", "_op_repeated_flag",
                                                         "_op_bracket_run", "_op_variable_doubling")]
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def check_clean_run(directory, fix=False):
    result = lint([str(directory)], Config(root=str(directory)), Options(fix=fix, unsafe_fixes=fix, jobs=1))
    crashes = [d for d in result.diagnostics if d.code == "F010"]
    assert not crashes, crashes[0].message
    for d in result.diagnostics:
        assert d.start.line >= 1 and d.start.column >= 1 and (d.end.line, d.end.column) >= (d.start.line, d.start.column)
    return result


def write_set(directory, chosen, data_for):
    for name, text in SEEDS:
        data = text.encode()
        if name == chosen:
            data = data_for(data)
        (directory / name).write_bytes(data)


@FUZZ
@given(which=st.sampled_from([name for name, _ in SEEDS]), seed=st.integers(0, 2**32 - 1),
       count=st.integers(1, 4))
def test_mutated_files_never_crash(tmp_path_factory, which, seed, count):
    r = random.Random(seed)

    def mangle(data):
        for op in r.choices(CHEAP, k=count):
            data = op(data, r)
        return data

    directory = tmp_path_factory.mktemp("fuzz")
    write_set(directory, which, mangle)
    check_clean_run(directory)


@FUZZ
@given(which=st.sampled_from([name for name, _ in SEEDS]), where=st.floats(0, 1), junk=st.binary(min_size=1, max_size=24))
def test_inserted_bytes_never_crash_and_fixes_stay_safe(tmp_path_factory, which, where, junk):
    def insert(data):
        i = int(where * len(data))
        return data[:i] + junk + data[i:]

    directory = tmp_path_factory.mktemp("fuzz")
    write_set(directory, which, insert)
    check_clean_run(directory, fix=True)
    again = check_clean_run(directory, fix=True)
    assert again.fixed == 0, "a second --fix changed the files again"


@pytest.mark.parametrize("name, data", [
    ("ds_config.json", b"[" * 100_000 + b"]" * 100_000),
    ("ds_config.json", b"{\"train_batch_size\": " + b"9" * 100_000 + b"}"),
    ("ds_config.json", b"{\"lr\": 1e999999, \"x\": -1e-999999, \"y\": NaN}"),
    ("exp.yaml", b"a: " + b"[" * 20_000 + b"]" * 20_000 + b"\n"),
    ("exp.yaml", b"".join(b"l%d: &l%d [" % (n, n) + b",".join([b"*l%d" % (n - 1)] * 9) + b"]\n" if n else
                          b"l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" for n in range(12))),
    ("cfg.py", b"x = " + b"(" * 10_000 + b")" * 10_000 + b"\n"),
    ("cfg.py", b"x = " + b"9" * 100_000 + b"\n"),
    ("train.sh", b"deepspeed train.py " + b"$(" * 5_000 + b")" * 5_000 + b"\n"),
    ("train.sh", b"#!/bin/bash\n" + b"--zero_stage 3 \\\n" * 50_000),
    ("requirements.txt", b"openrlhf==" + b"9." * 50_000 + b"0\n-r " + b"../" * 1000 + b"x.txt\n"),
])
def test_pathological_inputs_are_diagnostics_not_crashes(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    result = check_clean_run(tmp_path)
    assert result.files_checked == 1


def test_crlf_bom_and_nul_inputs(tmp_path):
    (tmp_path / "crlf_ds_config.json").write_bytes(b"\xef\xbb\xbf{\r\n  \"train_batch_size\": 8\r\n}\r\n")
    (tmp_path / "nul.sh").write_bytes(b"#!/bin/bash\x00\ndeepspeed x.py\n")
    (tmp_path / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    result = check_clean_run(tmp_path)
    got = sorted((os.path.basename(d.path), d.code) for d in result.diagnostics if d.code.startswith("F"))
    assert ("nul.sh", "F001") in got and ("latin1.yaml", "F001") in got
    latin1 = next(d for d in result.diagnostics if d.path.endswith("latin1.yaml"))
    assert (latin1.start.line, latin1.start.column) == (1, 10)  # the 0xE9 of "caf\xe9", not the start of the file
    assert "byte 0xE9" in latin1.message
    assert not [g for g in got if g[0] == "crlf_ds_config.json"]


@pytest.mark.parametrize("name", ["ppo_trainer.yaml", "train.sh", "requirements.txt", "ds_config.json", "exp.py"])
def test_numbers_over_pythons_digit_limit_are_a_parse_error_at_their_position(tmp_path, name):
    number = "7" * 5000
    text = {"ppo_trainer.yaml": f"trainer:\n  nnodes: {number}\n", "train.sh": f"deepspeed x.py --zero_stage {number}\n",
            "requirements.txt": f"openrlhf==0.{number}\n", "ds_config.json": f'{{"train_batch_size": {number}}}\n',
            "exp.py": f"from orz.ppo import X\nclass PPOExpConfig:\n    zero_stage: int = {number}\n"}[name]
    (tmp_path / name).write_text(text)
    result = check_clean_run(tmp_path)
    f003 = [d for d in result.diagnostics if d.code == "F003"]
    assert len(f003) == 1 and "5000 digits" in f003[0].message
    assert (f003[0].start.line, f003[0].start.column) == (text.count("\n", 0, text.index(number)) + 1,
                                                          text.index(number) - text.rfind("\n", 0, text.index(number)))


@pytest.mark.parametrize("name, text", [
    # a dataset JSON (LLaMA-Factory's glaive_toolcall_en_demo.json) with a 5,649-digit string: json.load reads it
    ("data.json", '[{"content": "SetStringValue(\\"UserEapInfo\\", \\"' + "01" * 2824 + '0\\")"}]\n'),
    ("ds_config.json", '{"train_batch_size": 8 // ' + "1" * 5000 + "\n}\n"),  # DeepSpeed's hjson comment
    ("ppo_trainer.yaml", "trainer:\n  run_id: '" + "7" * 5000 + "'  # " + "7" * 5000 + "\n  nnodes: 1\n"),
    ("exp.py", 'from orz.ppo import X\nclass PPOExpConfig:\n    tag: str = "' + "7" * 5000 + '"\n'),
])
def test_digits_in_strings_and_comments_are_no_overlong_number(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    result = check_clean_run(tmp_path)
    assert not [d for d in result.diagnostics if d.code == "F003"], result.diagnostics


def test_overlong_numbers_are_found_only_in_files_rlhf_lint_reads(tmp_path):
    # a module rlhf-lint never parses (it is not an ORZ config, setup.py or a training script) converts nothing
    (tmp_path / "helper.py").write_text("x = " + "7" * 5000 + "\n")
    assert not check_clean_run(tmp_path).diagnostics


@pytest.mark.parametrize("text", [
    "trainer:\n  nnodes: !!int '7777'\n",  # tagged: PyYAML converts the quoted digits
    "trainer:\n  nnodes: &n 7777\n  n_gpus_per_node: *n\n",  # after an anchor
    "trainer:\n  nnodes: [1, 2, 7777]\n",
    "from orz.ppo import X\nx = '''\n1111'''; y = 7777\n",  # CPython names the line: the number, not the string
])
def test_overlong_numbers_are_reported_at_their_digits(tmp_path, text):
    text = text.replace("7777", "7" * 5000).replace("1111", "1" * 5000)
    name = "exp.py" if text.startswith("from") else "ppo_trainer.yaml"
    (tmp_path / name).write_text(text)
    f003 = [d for d in check_clean_run(tmp_path).diagnostics if d.code == "F003"]
    at = text.index("7" * 5000)
    assert [(d.start.line, d.start.column) for d in f003] == [
        (text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at))]
    assert "5000 digits" in f003[0].message


def test_warnings_cpython_raises_while_parsing_a_users_file_are_not_printed(tmp_path):
    # "\d" in a plain string: CPython warns while parsing it (a SyntaxWarning from 3.12, which the default filters
    # print); the user's code is not ours to warn about, and the warning would land in every run's stderr
    import warnings

    (tmp_path / "exp.py").write_text('from orz.ppo import X\nimport re\nNUMBER = re.compile("\\d+")\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_clean_run(tmp_path)
    assert not [w for w in caught if "escape sequence" in str(w.message)], [str(w.message) for w in caught]


def test_a_byte_order_mark_tree_sitter_cuts_inside_a_word_does_not_crash(tmp_path):
    # found by the property test above (seed 4294967294): after a deletion, two byte-order marks and a YAML
    # merge-key bomb, tree-sitter ends a command word inside a BOM's bytes; reading that word must not fail
    r = random.Random(4294967294)

    def mangle(data):
        for op in r.choices(CHEAP, k=4):
            data = op(data, r)
        return data

    write_set(tmp_path, "train_ppo.sh", mangle)
    check_clean_run(tmp_path)
