"""`rlhf-lint env`: installed versions against the facts, and against a repository's pins."""
from __future__ import annotations

import json
import os

from click.testing import CliRunner

from lintutil import ROOT
from rlhf_lint.cli import env as env_cli
from rlhf_lint.cli.app import main
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import build_project

EXAMPLE = os.path.join(ROOT, "examples", "case4_34b_dpo")


def test_installed_conflict_and_known_bad():
    findings = env_cli.check_environment({"vllm": "0.7.2", "torch": "2.6.0", "deepspeed": "0.14.3"})
    assert [(f.code, f.severity.label, f.package) for f in findings] == [
        ("P002", "warning", "deepspeed"), ("P002", "error", "deepspeed"), ("P001", "error", "torch")]
    assert "Weights only load failed" in findings[1].message  # DeepSpeed < 0.16.4 with torch 2.6
    assert "vllm 0.7.2 requires torch==2.5.1" in findings[2].message


def test_conditional_fact_needs_the_repository():
    installed = {"transformers": "4.37.2"}
    assert env_cli.check_environment(installed) == []  # ZeRO-3 is not known without a repository
    project, _ = build_project([EXAMPLE], Config(root=EXAMPLE))
    findings = env_cli.check_environment(installed, project)
    assert [(f.code, f.severity.label) for f in findings] == [("P002", "warning"), ("P005", "warning")]
    assert "zero.Init" in findings[0].message
    assert findings[1].message.startswith("installed transformers 4.37.2 differs from the repository's pin 4.38.1 (")


def test_cli_exit_codes_and_json(monkeypatch):
    runner = CliRunner()
    monkeypatch.setattr(env_cli, "installed_versions", lambda packages=env_cli.WATCHED: {"torch": "2.5.1"})
    result = runner.invoke(main, ["env"])
    assert result.exit_code == 0, result.output
    assert "torch              2.5.1" in result.output
    monkeypatch.setattr(env_cli, "installed_versions",
                        lambda packages=env_cli.WATCHED: {"transformers": "4.38.1", "torch": "2.1.2"})
    result = runner.invoke(main, ["env", "--against", EXAMPLE, "--format", "json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["installed"] == {"transformers": "4.38.1", "torch": "2.1.2"}
    assert [(f["code"], f["severity"]) for f in data["findings"]] == [("P002", "error"), ("P002", "warning")]
    result = runner.invoke(main, ["env", "--against", EXAMPLE, "--fail-on", "error", "--format", "json"])
    assert result.exit_code == 1
    monkeypatch.setattr(env_cli, "installed_versions", lambda packages=env_cli.WATCHED: {"deepspeed": "0.14.3"})
    result = runner.invoke(main, ["env", "--fail-on", "error"])
    assert result.exit_code == 0  # a warning only


def test_real_metadata_lookup_does_not_fail():
    found = env_cli.installed_versions(("packaging", "surely-not-installed-package"))
    assert set(found) == {"packaging"}
