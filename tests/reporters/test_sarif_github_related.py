"""SARIF for code scanning (fingerprints stable across commits, %SRCROOT%-relative percent-encoded URIs, fixes,
rule pages, related locations with positions), GitHub annotations' column rules, related locations in text/JSON."""
import json
import os

import jsonschema
import pytest

from lintutil import ROOT, run_cli
from rlhf_lint.engine.registry import REGISTRY, RULES_PAGE_URL
from rlhf_lint.engine.runner import Result
from rlhf_lint.model import Diagnostic, Position, Severity, Span
from rlhf_lint.reporters.github import render_github

D012 = '{\n  "train_micro_batch_size_per_gpu": 4,\n  "fp16": {"enabled": true},\n  "bf16": {"enabled": true}\n}\n'
D001 = '{\n  "train_micro_batch_size_per_gpu": 2,\n  "zero_optimization": {"stage": 2, "overlap_com": true}\n}\n'


def _schema():
    with open(os.path.join(ROOT, "tests", "data", "sarif-schema-2.1.0.json")) as fh:
        return json.load(fh)


@pytest.fixture
def repo(tmp_path):
    sub = tmp_path / "my configs"
    sub.mkdir()
    (sub / "ds_config#1.json").write_text(D012)
    (tmp_path / "ds_config.json").write_text(D001)
    return tmp_path


def _sarif(cwd):
    log = json.loads(run_cli("--format", "sarif", "--no-cache", ".", cwd=cwd).stdout)
    jsonschema.Draft4Validator(_schema()).validate(log)
    return log["runs"][0]


def test_sarif_uris_are_relative_to_srcroot_and_percent_encoded(repo):
    run = _sarif(repo)
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file://" + str(repo).replace(" ", "%20") + "/"
    d012 = next(r for r in run["results"] if r["ruleId"] == "D012")
    location = d012["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "my%20configs/ds_config%231.json", "uriBaseId": "%SRCROOT%"}


def test_sarif_related_locations_carry_line_and_column(repo):
    d012 = next(r for r in _sarif(repo)["results"] if r["ruleId"] == "D012")
    (related,) = d012["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == 3  # "fp16": {"enabled": true} on line 3
    assert related["physicalLocation"]["region"]["startColumn"] > 1


def test_sarif_fixes_are_replacements_of_the_fix_edits(repo):
    d001 = next(r for r in _sarif(repo)["results"] if r["ruleId"] == "D001")
    (fix,) = d001["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "ds_config.json"
    (replacement,) = change["replacements"]
    assert replacement["insertedContent"]["text"] == "overlap_comm" or "overlap_comm" in replacement["insertedContent"]["text"]
    region = replacement["deletedRegion"]
    line = D001.splitlines()[region["startLine"] - 1]
    assert "overlap_com" in line[region["startColumn"] - 1:region["endColumn"] - 1]


def test_sarif_help_uri_is_the_rules_page(repo):
    run = _sarif(repo)
    uris = {r["id"]: r["helpUri"] for r in run["tool"]["driver"]["rules"]}
    assert uris["D001"] == f"{RULES_PAGE_URL}#d001-{REGISTRY.get('D001').name}"
    # the anchor is the one docs/rules.md gives the rule's heading
    with open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8") as fh:
        assert f"### D001 {REGISTRY.get('D001').name}\n" in fh.read()


def test_sarif_fingerprints_survive_moved_lines(repo):
    before = {r["ruleId"]: r["partialFingerprints"] for r in _sarif(repo)["results"]}
    (repo / "ds_config.json").write_text(D001.replace("{\n", "{\n  \"gradient_clipping\": 1.0,\n", 1))
    after = {r["ruleId"]: r["partialFingerprints"] for r in _sarif(repo)["results"]}
    assert before["D001"] == after["D001"] and before["D012"] == after["D012"]
    assert before["D001"] != before["D012"]


def test_related_location_positions_in_text_and_json(repo):
    text = run_cli("--no-cache", "my configs", cwd=repo).stdout
    assert "note: my configs/ds_config#1.json:3:" in text
    data = json.loads(run_cli("--format", "json", "--no-cache", "my configs", cwd=repo).stdout)
    (related,) = data["diagnostics"][0]["related"]
    assert related["start"]["line"] == 3 and related["end"]["line"] == 3


def test_text_points_at_rule_pages_and_rule_command_prints_the_url(repo):
    text = run_cli("--no-cache", ".", cwd=repo).stdout
    assert f"Rule pages: {RULES_PAGE_URL}" in text
    assert f"  D012 #{REGISTRY.get('D012').anchor}" in text
    pages = text[text.index("Rule pages:"):].splitlines()
    assert pages[-1].startswith("Checked ") and all(len(line) < 100 for line in pages[:-1])
    page = run_cli("rule", "D012").stdout
    assert page.rstrip().endswith(REGISTRY.get("D012").url)


def _diag(start, end):
    return Diagnostic("D001", "unknown-ds-config-key", Severity.ERROR, "a, b: c\n100%", "a,b:c.json", Span(0, 1),
                      start, end)


def test_github_annotations_drop_columns_on_multiline_ranges():
    multi = render_github(Result(diagnostics=[_diag(Position(2, 5), Position(4, 3))]))
    assert multi.startswith("::error file=a%2Cb%3Ac.json,line=2,endLine=4,title=")
    assert "col=" not in multi and "endColumn=" not in multi
    one = render_github(Result(diagnostics=[_diag(Position(2, 5), Position(2, 9))]))
    assert "line=2,col=5,endLine=2,endColumn=9," in one
    # the message is workflow-command data: %, CR and LF escaped; ':' and ',' only in properties
    assert one.rstrip("\n").endswith("::D001 a, b: c%0A100%25")


def test_gitlab_code_quality_report(repo):
    proc = run_cli("--format", "gitlab", "--no-cache", ".", cwd=repo)
    assert proc.returncode == 1
    issues = json.loads(proc.stdout)
    by_code = {i["check_name"].split()[0]: i for i in issues}
    assert set(by_code) == {"D001", "D012"}
    d012 = by_code["D012"]
    assert d012["location"] == {"path": "my configs/ds_config#1.json", "lines": {"begin": 4, "end": 4}}
    assert d012["severity"] == "critical" and d012["description"].startswith("D012 ")
    assert all(i["severity"] in {"info", "minor", "major", "critical", "blocker"} for i in issues)
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    # the fast entry and click accept the same format name
    assert run_cli("check", "--format", "gitlab", "--no-cache", ".", cwd=repo).stdout == proc.stdout
