"""Bad input and internal errors: never a traceback, every problem a diagnostic or a one-line message, exit 2 only
for usage or internal errors, and the other files are still checked. Also: safe writes of fixes."""
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from lintutil import ROOT, run_cli, run_lint, temporary_rule
from rlhf_lint.engine.config import Config
from rlhf_lint.model import Severity
from rlhf_lint.engine.runner import Options, lint

sys.path.insert(0, os.path.join(ROOT, "bench"))
from mutations import special_cases  # noqa: E402


def _crash(ctx):
    """Test rule that fails on files named crash.json."""
    if ctx.source.name == "crash.json":
        raise KeyError("boom")
    return iter(())


@pytest.fixture
def crashing_rule():
    with temporary_rule("F901", "test-crash", Severity.ERROR, _crash) as rule:
        yield rule


def test_a_crashing_rule_is_an_internal_error_on_that_file_and_the_rest_goes_on(tmp_path, crashing_rule):
    (tmp_path / "crash.json").write_text('{"a": 1}\n')
    (tmp_path / "broken.json").write_text('{"a": 1,,}\n')
    result = run_lint([tmp_path], extend_select=["F901"])
    got = [(os.path.basename(d.path), d.code) for d in result.diagnostics]
    assert got == [("broken.json", "F003"), ("crash.json", "F010")]
    assert "rule F901 test-crash: KeyError: 'boom'" in result.diagnostics[1].message
    assert result.internal_errors == 1
    with pytest.raises(KeyError):
        run_lint([tmp_path], extend_select=["F901"], debug=True)


def test_a_crashing_parser_is_an_internal_error(tmp_path, monkeypatch):
    from rlhf_lint.engine import project

    monkeypatch.setitem(project.PARSERS, "yaml", "rlhf_lint.does_not_exist:parse")
    (tmp_path / "a.yaml").write_text("a: 1\n")
    (tmp_path / "b.json").write_text("{,}\n")
    result = run_lint([tmp_path])
    got = [(os.path.basename(d.path), d.code) for d in result.diagnostics]
    assert got == [("a.yaml", "F010"), ("b.json", "F003")]
    assert "ModuleNotFoundError" in result.diagnostics[0].message


CLI_WITH_CRASHING_RULE = textwrap.dedent("""
    import sys
    from rlhf_lint.model import Severity
    from rlhf_lint.engine.registry import rule

    @rule("F901", "test-crash", Severity.ERROR, kinds={"json"})
    def crash(ctx):
        '''Crashes.'''
        raise ZeroDivisionError("no")

    from rlhf_lint.cli.entry import main
    main(sys.argv[1:])
""")


def test_cli_internal_error_exits_2_after_reporting_everything_and_debug_shows_the_traceback(tmp_path):
    (tmp_path / "x.json").write_text("{}\n")
    (tmp_path / "bad.json").write_text("{\n")
    env = dict(os.environ, NO_COLOR="1")
    args = [sys.executable, "-c", CLI_WITH_CRASHING_RULE, "--no-cache", "--extend-select", "F901", str(tmp_path)]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "bad.json:1:1: F003 error invalid JSON" in proc.stdout
    assert "x.json:1:1: F010 error internal error in rule F901 test-crash: ZeroDivisionError: no" in proc.stdout
    assert "1 internal error(s)" in proc.stderr
    proc = subprocess.run(args + ["--debug"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" in proc.stderr and "ZeroDivisionError: no" in proc.stderr


def test_special_files_through_the_cli(tmp_path):
    special_cases(str(tmp_path))
    (tmp_path / "ok_ds_config.json").write_text('{"train_batch_size": 8 "x"}\n')
    proc = run_cli("--no-cache", ".", "loop_a.yaml", "launch", "missing.sh", cwd=tmp_path)
    os.chmod(tmp_path / "locked_ds_config.json", 0o600)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    expected = [
        "binary.py:1:1: F001 error cannot check: binary file (contains NUL bytes)",
        "dangling.sh:1:1: F001 error no such file or directory",
        "launch:1:1: F001 error not a regular file",
        "loop_a.yaml:1:1: F001 error cannot read: Too many levels of symbolic links",
        "missing.sh:1:1: F001 error no such file or directory",
        "ok_ds_config.json:1:24: F003 error invalid JSON: expected ',' or '}'",
    ]
    for line in expected:
        assert any(got.startswith(line) for got in lines), (line, proc.stdout)
    assert any(got.startswith("ds_config_dump.json:1:1: F002 warning file is 52.4 MB") for got in lines)


def test_usage_errors_exit_2_without_traceback(tmp_path):
    for args in (["--format", "yaml", "."], ["--nodes", "two", "."], ["--no-such-option"]):
        proc = run_cli(*args, cwd=tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and "Error" in proc.stderr


# -- safe writes ---------------------------------------------------------------------------------------------------
def test_fix_keeps_mode_writes_through_symlinks_and_leaves_no_temp_files(tmp_path, shout_rule):
    target = tmp_path / "real.json"
    target.write_bytes(b'{"a": "shout"}\r\n')
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to("real.json")
    inode = os.stat(target).st_ino
    result = run_lint([link], fix=True, extend_select=["F900"])
    assert result.fixed == 1 and not result.write_errors
    assert os.path.islink(link) and target.read_bytes() == b'{"a": "quiet"}\r\n'
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert os.stat(target).st_ino != inode  # replaced by rename, never truncated in place
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real.json"]


def test_read_only_file_is_not_written_and_says_so(tmp_path, shout_rule):
    f = tmp_path / "ro.json"
    f.write_text('{"a": "shout"}\n')
    os.chmod(f, 0o444)
    result = run_lint([f], fix=True, extend_select=["F900"])
    assert f.read_text() == '{"a": "shout"}\n'
    assert result.write_errors == [f"{f}: not written: file is read-only"]


def test_file_changed_since_read_is_not_overwritten(tmp_path, shout_rule, monkeypatch):
    from rlhf_lint.engine import runner

    f = tmp_path / "c.json"
    f.write_text('{"a": "shout"}\n')
    original = runner.write_changes

    def edit_then_write(project, changed, roots=()):
        f.write_text('{"a": "shout", "b": 2}\n')  # someone saved the file meanwhile
        return original(project, changed, roots)

    monkeypatch.setattr(runner, "write_changes", edit_then_write)
    result = run_lint([f], fix=True, extend_select=["F900"])
    assert f.read_text() == '{"a": "shout", "b": 2}\n'
    assert "changed on disk since it was read" in result.write_errors[0]


def test_diff_writes_nothing(tmp_path, shout_rule):
    f = tmp_path / "d.json"
    f.write_text('{"a": "shout"}\n')
    before = os.stat(f)
    result = run_lint([f], diff=True, extend_select=["F900"])
    assert result.changed and f.read_text() == '{"a": "shout"}\n'
    assert os.stat(f).st_mtime_ns == before.st_mtime_ns and os.stat(f).st_ino == before.st_ino


# -- the cache -----------------------------------------------------------------------------------------------------
def test_cache_returns_the_same_findings_and_sees_every_change(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHF_LINT_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.json").write_text('{"a": 1 2}\n')
    (repo / "b.json").write_text('{"b": 2}\n')

    def run():
        result = lint([str(repo)], Config(root=str(repo)), Options(cache=True))
        return [(os.path.basename(d.path), d.code, d.start.line, d.start.column, d.message) for d in result.diagnostics]

    first = run()
    assert first and first == run()
    results = tmp_path / "cache" / "v2"  # beside it, knowledge/ holds parsed schema files
    entries = [f for _, _, files in os.walk(results) for f in files]
    assert len(entries) == 1 and entries[0].endswith(".json")
    (repo / "b.json").write_text('{"b": }\n')
    assert [d[:4] for d in run()] == [("a.json", "F003", 1, 9), ("b.json", "F003", 1, 7)]
    assert len([f for _, _, files in os.walk(results) for f in files]) == 2


def _seesaw(ctx):
    """Test rule whose fix flips a value back and forth."""
    from rlhf_lint.readers.json import JValue
    from rlhf_lint.model import Edit, Finding, Fix

    for _path, member in ctx.tree.walk():
        node = member.value
        if isinstance(node, JValue) and node.value in ("up", "down"):
            other = '"down"' if node.value == "up" else '"up"'
            yield Finding(node.span, "seesaw", fix=Fix("flip", (Edit.replace(node.span, other),)))


def test_fixes_that_undo_each_other_stop_with_a_message(tmp_path):
    with temporary_rule("F902", "test-seesaw", Severity.WARNING, _seesaw, fixable=True):
        f = tmp_path / "s.json"
        f.write_text('{"a": "up"}\n')
        result = run_lint([f], fix=True, extend_select=["F902"])
    assert result.messages == ["warning: fixes of F902 undo each other; stopped"]
    assert result.fixed == 2 and f.read_text() == '{"a": "up"}\n'


def test_digit_like_characters_that_int_refuses_are_no_internal_error(tmp_path):
    """'²' is a digit to str.isdigit but not to int(): a hardware comment, a launcher flag and ds_config strings
    holding it (or a doubled sign) are values to judge, never a crash."""
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": "\u00b2", "train_micro_batch_size_per_gpu": "+-4",'
                                             ' "gradient_accumulation_steps": 1, "zero_optimization": {"stage": "\u00b2"}}'
                                             '\n', encoding="utf-8")
    (tmp_path / "train.sh").write_text("#!/bin/bash\n# rlhf-lint: hardware gpus-per-node=\u00b2 nodes=\u00b2\n"
                                       "accelerate launch --num_processes \u00b2 --zero_stage \u00b2 train.py "
                                       "--deepspeed ds_config.json\n", encoding="utf-8")
    result = run_lint([tmp_path])
    assert [d for d in result.diagnostics if d.code == "F010"] == []
    assert result.files_checked == 2


@pytest.mark.parametrize("name, text", [
    ("cfg.json", '{"model": "Qwen/Qwen2.5\\u0000-7B", "tuner_type": "full"}\n'),
    ("cfg.yaml", 'model: "Qwen/Qwen2.5\\0-7B"\ntuner_type: full\n'),
])
def test_a_nul_escaped_into_a_path_names_no_file_and_breaks_nothing(tmp_path, name, text):
    # JSON's \u0000 and YAML's \0 decode to a NUL character, which os.path refuses with ValueError
    (tmp_path / name).write_text(text)
    (tmp_path / "run.sh").write_text(f"swift sft {name}\n")
    result = lint([str(tmp_path)], Config(), Options())
    assert not [d for d in result.diagnostics if d.code == "F010"]
