"""``rlhf-lint env``: the installed packages checked against the same version facts as the repository's pins.

The installed versions come from importlib.metadata (nothing is imported). They form one install set, so the
conflict and known-bad checks are the ones P001/P002 run on files. With ``--against PATH`` the repository's pins
are read too: its settings decide the conditional facts (offload, ZeRO stage), and every exact pin that differs
from what is installed is reported.
"""
from __future__ import annotations

import json
import sys

import click

from rlhf_lint.startup.records import record
from rlhf_lint.model import Severity, Span

ENV_PATH = "<installed environment>"
WATCHED = ("torch", "torchvision", "vllm", "deepspeed", "transformers", "flash-attn", "openrlhf", "verl", "trl",
           "accelerate", "ray", "xformers", "tensordict", "peft", "flashinfer-python")


@record
class EnvFinding:
    code: str
    severity: Severity
    message: str
    package: str = ""


def installed_versions(packages=WATCHED) -> dict[str, str]:
    from importlib import metadata

    found = {}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def environment_install_set(installed: dict[str, str]):
    from rlhf_lint.readers.pins import Pin
    from rlhf_lint.frameworks.versions import InstallSet

    pins = [Pin(name, f"{name}=={version}", ENV_PATH, Span(0, 0), f"=={version}", version, None, group=ENV_PATH)
            for name, version in sorted(installed.items())]
    return InstallSet(ENV_PATH, ENV_PATH, "environment", pins)


def check_environment(installed: dict[str, str], project=None) -> list[EnvFinding]:
    """Findings about installed versions; ``project`` (the repository) decides conditional facts and is compared."""
    from rlhf_lint.frameworks.versions import (_condition, _public, compatible, constraints, known_bad_table, pinned_version,
                             setting_evidence)

    install_set = environment_install_set(installed)
    cons = constraints(install_set)
    evidence = setting_evidence(project) if project is not None else {}
    findings: list[EnvFinding] = []
    for name, items in sorted(cons.items()):
        for i, a in enumerate(items):
            for b in items[i + 1 :]:
                if a.direct and b.direct:
                    continue
                if not compatible([a.specifier, b.specifier], name):
                    pair = [c for c in (a, b) if not c.direct] + [c for c in (a, b) if c.direct]
                    findings.append(EnvFinding("P001", Severity.ERROR,
                                               f"installed {name} does not satisfy what is installed with it: "
                                               + "; ".join(c.why() if not c.direct else f"{name} {c.exact} is installed"
                                                           for c in pair), name))
        facts = known_bad_table().get(name, [])
        for c in items:
            if not c.direct:
                continue
            version = _public(c.exact)
            for fact in facts:
                ok, reason = _condition(fact, cons, evidence)
                if ok and fact.hits(version):
                    findings.append(EnvFinding("P002", Severity.parse(fact.severity),
                                               f"installed {name} {version} is known-bad: {fact.symptom}. Works: "
                                               f"{fact.works}. See {fact.source.split()[0]}", name))
    if project is not None:
        for name, version in sorted(installed.items()):
            pinned = pinned_version(project, name)
            if pinned is None:
                continue
            want, setting = pinned
            if _public(want) != _public(version):
                where = setting.path
                if setting.span is not None and setting.path in project.sources:
                    where += f":{project.sources[setting.path].position(setting.span.start).line}"
                findings.append(EnvFinding("P005", Severity.WARNING,
                                           f"installed {name} {version} differs from the repository's pin {want} "
                                           f"({where}, {setting.origin})", name))
    return findings


@click.command("env")
@click.option("--against", "against", type=click.Path(exists=True), default=None,
              help="A repository (or files) whose pins and settings to compare with the installed packages.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default="warning",
              help="Lowest severity that makes the exit code 1 (default: warning).")
def env(against, output_format, fail_on):
    """Check the installed torch/vLLM/DeepSpeed/transformers/... against known conflicts and known-bad versions."""
    from rlhf_lint.cli.app import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS

    try:
        installed = installed_versions()
        project = None
        if against:
            from rlhf_lint.engine.config import ConfigError, find_config_file, load_config
            from rlhf_lint.engine.runner import build_project

            try:
                config = load_config(find_config_file(against))
            except ConfigError as exc:
                click.echo(f"rlhf-lint: error: {exc}", err=True)
                sys.exit(EXIT_ERROR)
            project, _ = build_project([against], config)
        findings = check_environment(installed, project)
    except (OSError, ValueError) as exc:
        click.echo(f"rlhf-lint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        click.echo(json.dumps({"installed": installed,
                               "findings": [{"code": f.code, "severity": f.severity.label, "package": f.package,
                                             "message": f.message} for f in findings]}, indent=2))
    else:
        for name, version in sorted(installed.items()):
            click.echo(f"{name:<18} {version}")
        if not installed:
            click.echo("none of the watched packages is installed")
        for f in findings:
            click.echo(f"{f.code} {f.severity.label}: {f.message}")
        click.echo(f"\n{len(findings)} finding(s) for the installed environment")
    level = Severity.parse(fail_on)
    sys.exit(EXIT_FINDINGS if any(f.severity >= level for f in findings) else EXIT_CLEAN)
