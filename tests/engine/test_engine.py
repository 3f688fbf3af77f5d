import os
import stat

import pytest

from lintutil import codes, run_lint
from rlhf_lint.engine.config import Config, ConfigError, config_from_mapping, find_config_file, load_config, parse_size
from rlhf_lint.model import Severity, Span
from rlhf_lint.engine.registry import REGISTRY
from rlhf_lint.engine.runner import Options, selected_rules
from rlhf_lint.readers.source import Source


# -- sources and positions ---------------------------------------------------------------------------------------
def test_positions_crlf_bom_and_unicode():
    raw = "\ufeffa\r\nbé\r\nc".encode("utf-8")
    src = Source.from_bytes("f.sh", raw)
    assert src.has_bom and src.text == "a\r\nbé\r\nc" and src.newline == "\r\n"
    assert src.position(3) == src.position(src.text.index("b"))
    assert (src.position(4).line, src.position(4).column) == (2, 2)
    assert src.line_text(2) == "bé"
    assert src.encode(src.text) == raw
    # tree-sitter byte offsets -> characters: "é" is two bytes
    assert src.char_offset(len("a\r\nbé".encode())) == len("a\r\nbé")


def test_binary_and_invalid_utf8_are_refused():
    from rlhf_lint.readers.source import DecodeError

    with pytest.raises(DecodeError, match="binary"):
        Source.from_bytes("x.json", b"{\x00}")
    with pytest.raises(DecodeError, match="UTF-8"):
        Source.from_bytes("x.json", b"{\xff}")


@pytest.mark.parametrize("raw, line, column", [
    (b"#!/bin/bash\n# line 2\n# line 3\n# caf\xe9\ndeepspeed train.py\n", 4, 6),  # 0xE9 with no continuation
    (b"a\r\nb\xc3\xa9\xff\n", 2, 3),  # columns count characters: the two bytes of "\xe9" are one
    (b"\xef\xbb\xbfx=\x80\n", 1, 3),  # the UTF-8 byte-order mark is not part of the text
])
def test_invalid_utf8_is_placed_at_the_line_and_column_of_its_byte(raw, line, column):
    from rlhf_lint.readers.source import DecodeError

    with pytest.raises(DecodeError) as caught:
        Source.from_bytes("train.sh", raw)
    assert (caught.value.position.line, caught.value.position.column) == (line, column)


@pytest.mark.parametrize("encoding, mark", [("utf-16", "FF FE"), ("utf-16-be", None), ("utf-32", "FF FE 00 00")])
def test_a_wide_encoding_is_named_not_called_binary(encoding, mark):
    from rlhf_lint.readers.source import DecodeError

    raw = "deepspeed train.py --zero_stage 3\n".encode(encoding)
    if mark is None:  # big-endian without a mark: NUL bytes, nothing names the encoding
        with pytest.raises(DecodeError, match="binary"):
            Source.from_bytes("run.sh", raw)
        return
    with pytest.raises(DecodeError, match=f"{encoding.upper()[:6]} text \\(byte-order mark {mark}\\).*save the file as UTF-8"):
        Source.from_bytes("run.sh", raw)


# -- configuration -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [("80GiB", 80 * 2**30), ("500GB", 500 * 10**9), ("537G", 537 * 2**30),
                                            ("1.5 TB", 1.5e12), (1024, 1024)])
def test_parse_size(text, expected):
    assert parse_size(text) == int(expected)


def test_parse_size_rejects_nonsense():
    with pytest.raises(ConfigError):
        parse_size("lots")


def test_config_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.rlhf-lint]\nignore = ["F100"]\ngpu = "A100-80GB"\ngpus-per-node = 8\nhost-memory = "537GB"\n'
        'container-memory = "500GiB"\nopenrlhf-version = "v0.9.5"\nfail-on = "error"\n'
        '[tool.rlhf-lint.per-file-ignores]\n"legacy/*.json" = ["D"]\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    found = find_config_file(str(sub))
    assert found == str(tmp_path / "pyproject.toml")
    cfg = load_config(found)
    assert cfg.ignore == ["F100"] and cfg.fail_on == Severity.ERROR
    assert cfg.hardware.gpu == "A100-80GB" and cfg.hardware.gpus_per_node == 8
    assert cfg.hardware.host_memory == 537 * 10**9 and cfg.hardware.container_memory == 500 * 2**30
    assert cfg.versions["openrlhf"] == "0.9.5"
    assert cfg.per_file_ignores == {"legacy/*.json": ["D"]}


def test_unknown_config_key_is_an_error_naming_key_and_file(tmp_path):
    path = tmp_path / "rlhf-lint.toml"
    path.write_text('fail-on = "error"\nbogus = 1\ngpus_per_node = 8\n')
    with pytest.raises(ConfigError) as exc:
        load_config(str(path))
    message = str(exc.value)
    assert message.startswith(f"{path}: unknown key 'bogus' (and 'gpus_per_node')"), message


def test_pyproject_without_table_is_skipped(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "rlhf-lint.toml").write_text('select = ["D"]\n')
    assert find_config_file(str(tmp_path / "sub")) == str(tmp_path / "sub" / "rlhf-lint.toml")
    assert find_config_file(str(tmp_path)) is None or not find_config_file(str(tmp_path)).startswith(str(tmp_path))


def test_bad_config_values_raise():
    with pytest.raises(ConfigError):
        config_from_mapping({"gpus-per-node": "eight"})
    with pytest.raises(ConfigError):
        config_from_mapping({"fail-on": "fatal"})


# -- selection ---------------------------------------------------------------------------------------------------
def test_selection_by_code_prefix_name_and_all():
    assert [r.code for r in REGISTRY.match("F00")] == ["F001", "F002", "F003", "F004", "F005"]
    assert [r.code for r in REGISTRY.match("parse-error")] == ["F003"]
    assert len(REGISTRY.match("ALL")) == len(REGISTRY.all())
    rules = selected_rules(Config(ignore=["F1"]), Options(extend_select=["F003"]))
    assert "F100" not in {r.code for r in rules} and "F003" in {r.code for r in rules}
    with pytest.raises(ConfigError, match="unknown rule selector 'nope' in --select"):
        selected_rules(Config(), Options(select=["nope"]))


# -- running -----------------------------------------------------------------------------------------------------
def test_bad_files_are_diagnostics_and_others_still_checked(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8,, }')
    (tmp_path / "zero3.json").write_bytes(b"\x00\x01binary")
    (tmp_path / "broken.json").write_bytes(b'{"a": "\xff"}')
    (tmp_path / "notes.txt").write_text("ignored: not a checked type")
    result = run_lint([tmp_path])
    found = sorted((os.path.basename(d.path), d.code) for d in result.diagnostics)
    assert found == [("broken.json", "F001"), ("ds_config.json", "F003"), ("zero3.json", "F001")]


def test_explicit_unknown_file_and_missing_path(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = run_lint([tmp_path / "notes.txt", tmp_path / "missing.sh"])
    messages = sorted(d.message for d in result.diagnostics)
    assert messages == ["no such file or directory", "unrecognised file type: not checked"]


def test_discovery_skips_vcs_venv_and_excludes(tmp_path):
    for d in (".git", "venv_custom", "node_modules", "keep", "skipme"):
        (tmp_path / d).mkdir()
    (tmp_path / "venv_custom" / "pyvenv.cfg").write_text("")
    for d in (".git", "venv_custom", "node_modules", "keep", "skipme"):
        (tmp_path / d / "bad.json").write_text("{,}")
    cfg = Config(exclude=["skipme"])
    result = run_lint([tmp_path], cfg)
    assert [os.path.relpath(d.path, tmp_path) for d in result.diagnostics] == ["keep/bad.json"]


def test_large_file_skipped_with_message(tmp_path, monkeypatch):
    import rlhf_lint.engine.runner as runner

    monkeypatch.setattr(runner, "MAX_FILE_BYTES", 100)
    (tmp_path / "big.json").write_text("[" + "1," * 100 + "1]")
    result = run_lint([tmp_path])
    assert [(d.code, d.severity) for d in result.diagnostics] == [("F002", Severity.WARNING)]


def test_symlink_loop_does_not_hang(tmp_path):
    (tmp_path / "a").mkdir()
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    (tmp_path / "a" / "x.json").write_text("{,}")
    result = run_lint([tmp_path])
    assert [d.code for d in result.diagnostics] == ["F003"]


# -- suppressions ------------------------------------------------------------------------------------------------
def test_inline_and_file_suppressions_with_unused_warning(tmp_path, shout_rule):
    f = tmp_path / "cfg.json"
    f.write_text('{\n  "a": "shout", // rlhf-lint: ignore[F900]\n  "b": "shout",\n  "c": 1 // rlhf-lint: ignore[F003]\n}\n')
    result = run_lint([f], Config(), select=["F900", "F100"])
    assert codes(result) == [("F900", 3, 8), ("F100", 4, 10)]
    f.write_text('// rlhf-lint: ignore-file[test-shout]\n{"a": "shout", "b": "shout"}\n')
    assert codes(run_lint([f], Config(), select=["F900", "F100"])) == []


def test_unknown_code_in_suppression(tmp_path):
    f = tmp_path / "cfg.json"
    f.write_text('{"a": 1} // rlhf-lint: ignore[Z999]\n')
    result = run_lint([f])
    assert [(d.code, d.message) for d in result.diagnostics] == [("F100", "suppression names unknown rule(s): Z999")]


def test_per_file_ignores(tmp_path, shout_rule):
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "x.json").write_text('{"a": "shout"}')
    (tmp_path / "y.json").write_text('{"a": "shout"}')
    cfg = Config(root=str(tmp_path), per_file_ignores={"legacy/*": ["F9"]})
    result = run_lint([tmp_path], cfg, select=["F900"])
    assert [os.path.basename(d.path) for d in result.diagnostics] == ["y.json"]


# -- fixes -------------------------------------------------------------------------------------------------------
def test_fix_writes_atomically_keeps_mode_and_is_idempotent(tmp_path, shout_rule):
    f = tmp_path / "cfg.json"
    original = '{\r\n  "a": "shout",  // keep me\r\n  "b": {"x": "shout"},\r\n  "c": "risky"\r\n}'
    f.write_bytes(original.encode())
    os.chmod(f, 0o640)
    result = run_lint([f], select=["F900"], fix=True)
    expected = original.replace('"shout"', '"quiet"')
    assert f.read_bytes() == expected.encode()
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o640
    assert result.fixed == 2 and codes(result) == [("F900", 4, 8)]  # the unsafe one is left
    again = run_lint([f], select=["F900"], fix=True)
    assert again.fixed == 0 and f.read_bytes() == expected.encode()
    run_lint([f], select=["F900"], fix=True, unsafe_fixes=True)
    assert f.read_bytes() == expected.replace('"risky"', '"safe"').encode()
    assert [p.name for p in tmp_path.iterdir()] == ["cfg.json"]  # no temp files left


def test_fix_that_breaks_the_file_is_dropped(tmp_path, shout_rule):
    f = tmp_path / "cfg.json"
    f.write_text('{"a": "break", "b": "shout"}')
    run_lint([f], select=["F900"], fix=True)
    assert f.read_text() == '{"a": "break", "b": "quiet"}'


def test_diff_writes_nothing(tmp_path, shout_rule):
    f = tmp_path / "cfg.json"
    f.write_text('{"a": "shout"}')
    result = run_lint([f], select=["F900"], diff=True)
    assert f.read_text() == '{"a": "shout"}'
    assert result.changed[str(f)] == (b'{"a": "shout"}', b'{"a": "quiet"}')


def test_read_only_file_is_not_written_even_as_root(tmp_path, shout_rule, monkeypatch):
    import rlhf_lint.engine.runner as runner

    f = tmp_path / "cfg.json"
    f.write_text('{"a": "shout"}')
    monkeypatch.setattr(runner.os, "access", lambda path, mode: False)
    result = run_lint([f], select=["F900"], fix=True)
    assert result.write_errors == [f"{f}: not written: file is read-only"]
    assert f.read_text() == '{"a": "shout"}'


def test_overlapping_fixes_are_split_across_rounds():
    from rlhf_lint.fixers.text import apply_edits, compatible_fixes
    from rlhf_lint.model import Edit, Fix

    a = Fix("a", (Edit(0, 3, "X"),))
    b = Fix("b", (Edit(2, 5, "Y"),))
    c = Fix("c", (Edit(6, 6, "Z"),))
    chosen = compatible_fixes([b, a, c])
    assert chosen == [a, c]
    assert apply_edits("abcdefg", [e for f in chosen for e in f.edits]) == "XdefZg"
    with pytest.raises(ValueError):
        Fix("bad", (Edit(0, 3, ""), Edit(1, 2, "")))
    with pytest.raises(ValueError):
        Span(3, 1)
