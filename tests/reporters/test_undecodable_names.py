"""A file name that is not UTF-8 (a byte such as 0xff, which Python holds as the lone surrogate U+DCFF) must not
break any report: every format is valid UTF-8 (and JSON where it is JSON), SARIF URIs percent-encode the byte
(%FF), fingerprints hash the name's real bytes, and the text formats show the byte as ``\\xff``."""
import json
import os
import subprocess
import sys

import jsonschema
import pytest

from lintutil import ROOT
from rlhf_lint.engine.runner import Result
from rlhf_lint.model import Diagnostic, Position, Severity
from rlhf_lint.reporters import render
from rlhf_lint.reporters.escape import unicode_text, visible

NAME = os.fsdecode(b"ds_config_\xff.json")
DS = '{"train_batch_size": 8, "bogus": 1}\n'


@pytest.fixture
def repo(tmp_path):
    try:
        (tmp_path / NAME).write_text(DS)
    except (OSError, UnicodeEncodeError):  # a file system that takes UTF-8 names only (macOS)
        pytest.skip("the file system refuses a name that is not UTF-8")
    return tmp_path


def _run(*args, cwd):
    # stdout strict UTF-8, as on any machine whose locale is not C/POSIX: a lone surrogate cannot slip through
    env = dict(os.environ, NO_COLOR="1", PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "rlhf_lint", "--no-cache", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("fmt", ["text", "github", "json", "sarif", "gitlab"])
def test_every_format_is_valid_utf8_and_names_the_byte(repo, fmt):
    proc = _run("--output-format", fmt, ".", cwd=repo)
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")  # the finding, no crash
    assert b"Traceback" not in proc.stderr
    out = proc.stdout.decode("utf-8")  # strict: raises on a raw 0xff or an encoded surrogate
    if fmt in ("text", "github"):
        assert "ds_config_\\xff.json" in out
    elif fmt == "json":
        (d,) = json.loads(out)["diagnostics"]
        assert d["path"] == "ds_config_\\xff.json"
    elif fmt == "gitlab":
        (issue,) = json.loads(out)
        assert issue["location"]["path"] == "ds_config_\\xff.json"
    else:
        log = json.loads(out)
        with open(os.path.join(ROOT, "tests", "data", "sarif-schema-2.1.0.json")) as fh:
            jsonschema.Draft4Validator(json.load(fh)).validate(log)
        (result,) = log["runs"][0]["results"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "ds_config_%FF.json"


@pytest.mark.parametrize("fmt", ["sarif", "gitlab"])
def test_report_file_is_whole_and_exit_zero_holds(repo, fmt):
    proc = _run("--output-format", fmt, "--output", "report.json", "--exit-zero", ".", cwd=repo)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    json.loads((repo / "report.json").read_bytes().decode("utf-8"))


def test_fingerprints_hash_the_names_bytes_and_take_any_lone_surrogate():
    def diag(path, message="m"):
        return Diagnostic(code="X001", name="x", severity=Severity.ERROR, message=message, path=path, span=None,
                          start=Position(1, 1), end=Position(1, 2))

    def fingerprints(fmt, d):
        out = json.loads(render(fmt, Result(diagnostics=[d])))
        if fmt == "gitlab":
            return out[0]["fingerprint"]
        return out["runs"][0]["results"][0]["partialFingerprints"]["rlhfLint/v1"]

    for fmt in ("sarif", "gitlab"):
        # two names that differ only in their undecodable byte are two files: two fingerprints
        ff, fe = (fingerprints(fmt, diag(os.fsdecode(name))) for name in (b"a\xff.json", b"a\xfe.json"))
        assert ff != fe
        # a message quoting a JSON string's lone "\ud800" escape (no source line: the message is hashed)
        assert fingerprints(fmt, diag("a.json", "value \ud800")) != fingerprints(fmt, diag("a.json", "value"))


def test_lone_surrogates_are_escaped_as_the_byte_or_the_code_point():
    assert visible(os.fsdecode(b"a\xff\x80.json")) == "a\\xff\\x80.json"
    assert unicode_text("\ud800 \udcff é \x1b") == "\\ud800 \\xff é \x1b"  # JSON escapes the control itself
    assert unicode_text("plain é") == "plain é"
