"""The report formats through the CLI: the JSON contract, SARIF valid against the 2.1.0 schema, GitHub annotations,
colour only when asked for."""
import json
import os

import jsonschema
import pytest

from lintutil import ROOT, run_cli


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "ds_config.json").write_text('{\n  "train_batch_size": 8,,\n}\n')
    (tmp_path / "ok.json").write_text('{"name": "not a deepspeed file"}\n')
    return tmp_path


def test_json_contract(repo):
    proc = run_cli("--format", "json", ".", cwd=repo)
    data = json.loads(proc.stdout)
    assert data["version"] == 1
    (diag,) = data["diagnostics"]
    assert set(diag) >= {"code", "name", "severity", "message", "path", "start", "end", "fix"}
    assert diag["start"] == {"line": 2, "column": 25} and diag["severity"] == "error" and diag["fix"] is None


def test_sarif_validates_against_the_schema(repo):
    (repo / "x.json").write_text('{"a": 1} // rlhf-lint: ignore[F003]\n')
    proc = run_cli("--format", "sarif", ".", cwd=repo)
    log = json.loads(proc.stdout)
    with open(os.path.join(ROOT, "tests", "data", "sarif-schema-2.1.0.json")) as fh:
        schema = json.load(fh)
    jsonschema.Draft4Validator(schema).validate(log)
    run = log["runs"][0]
    assert {r["ruleId"] for r in run["results"]} == {"F003", "F100"}
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {"F003", "F100"}
    result = next(r for r in run["results"] if r["ruleId"] == "F003")
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "ds_config.json"


def test_github_annotations(repo):
    proc = run_cli("--format", "github", ".", cwd=repo)
    assert proc.stdout.startswith("::error file=ds_config.json,line=2,col=25,endLine=2,endColumn=26,"
                                  "title=F003 parse-error::F003 invalid JSON")


def test_no_color_unless_forced(repo):
    forced = run_cli(".", cwd=repo, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[31merror" in forced.stdout
    plain = run_cli(".", cwd=repo, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" not in plain.stdout
