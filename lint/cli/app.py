"""The command line. ``rlhf-lint PATH...`` is ``rlhf-lint check PATH...``."""
from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from rlhf_lint import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

# subcommands that live in their own modules, imported only when used (start-up time matters in pre-commit)
LAZY_COMMANDS = {
    "estimate": "rlhf_lint.cli.estimate:estimate",
    "env": "rlhf_lint.cli.env:env",
    "server": "rlhf_lint.cli.server:server",
    "knowledge": "rlhf_lint.cli.knowledge:knowledge",
}


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, belongs to ``check``."""

    def list_commands(self, ctx):
        names = set(super().list_commands(ctx))
        names.update(k for k in LAZY_COMMANDS if self._lazy_available(k))
        return sorted(names)

    @staticmethod
    def _lazy_available(name: str) -> bool:
        module = LAZY_COMMANDS[name].partition(":")[0]
        return importlib.util.find_spec(module) is not None

    def get_command(self, ctx, cmd_name):
        if cmd_name in LAZY_COMMANDS and self._lazy_available(cmd_name):
            module, _, attr = LAZY_COMMANDS[cmd_name].partition(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, cmd_name)

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.list_commands(ctx) and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rlhf-lint")
def main() -> None:
    """Lint LLM post-training launches (DeepSpeed, OpenRLHF, verl, Open-Reasoner-Zero, accelerate/TRL) before
    any GPU is allocated. `rlhf-lint PATH...` checks files and folders; `--fix` rewrites what can be fixed."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, also fixes that change behaviour or the environment.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff (report on stderr); write nothing; exit 1 if any.")
@click.option("--show-fixes", is_flag=True, help="List the fixes that were applied or are available.")
@click.option("--select", multiple=True, help="Rules to enable: codes, prefixes (D, M0) or names; replaces the default.")
@click.option("--extend-select", multiple=True, help="Rules to enable in addition to the selection.")
@click.option("--ignore", multiple=True, help="Rules to disable: codes, prefixes or names.")
@click.option("--exclude", multiple=True, help="Glob of paths to skip (adds to the configuration's exclude).")
@click.option("--format", "--output-format", "output_format", type=click.Choice(["text", "json", "sarif", "github", "gitlab"]), default="text",
              show_default=True)
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default=None,
              help="Lowest severity that makes the exit code 1 (default: warning).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file to use.")
@click.option("--gpu", help="GPU model of the nodes (A100-80GB, H100-80GB, RTX4090, ...).")
@click.option("--gpu-memory", help="Usable memory per GPU, overriding the catalog (80GiB).")
@click.option("--gpus-per-node", type=int)
@click.option("--host-memory", help="Host RAM per node (512GB).")
@click.option("--container-memory", help="Memory limit of the container the job runs in (500GiB).")
@click.option("--nodes", type=int, help="Number of nodes available.")
@click.option("--world-size", type=int, help="Training processes of a plain DeepSpeed launch, for batch arithmetic.")
@click.option("--openrlhf-version", help="OpenRLHF release the scripts target (e.g. 0.9.5).")
@click.option("--deepspeed-version", help="DeepSpeed release the configs target.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report to a file.")
@click.option("--quiet", "-q", is_flag=True, help="Print diagnostics only, no summary.")
@click.option("--debug", is_flag=True, help="Show internal errors with their traceback.")
@click.option("--no-cache", is_flag=True, help="Ignore and do not write the cache of results of unchanged files.")
@click.option("--force-exclude", is_flag=True,
              help="Skip excluded and gitignored files even when named on the command line (pre-commit).")
@click.option("--no-respect-gitignore", is_flag=True, help="Check files that .gitignore names too.")
@click.option("--stdin-filename", help="With PATH '-': the name of the file read from standard input.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (2 still means an error).")
@click.option("--add-noqa", is_flag=True,
              help="Add an inline suppression comment for every finding in files with comments.")
@click.option("--baseline", help="Baseline file of accepted findings (.rlhf-lint-baseline.json): hide them.")
@click.option("--write-baseline", is_flag=True, help="With --baseline FILE: record every current finding there.")
def check(paths, **params):
    """Check files and folders (the default command)."""
    from rlhf_lint.cli.check import run_check

    sys.exit(run_check(paths, **params))


@main.command("rules")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
def rules_cmd(output_format):
    """List every rule: code, name, default severity, fixable, summary."""
    import json

    from rlhf_lint.engine.registry import FAMILIES, REGISTRY

    rules = REGISTRY.all()
    if output_format == "json":
        click.echo(json.dumps([{"code": r.code, "name": r.name, "severity": r.severity.label, "fixable": r.fixable,
                                "default_enabled": r.default_enabled, "summary": r.summary} for r in rules], indent=2))
        return
    family = None
    width = max(len(r.name) for r in rules)
    for r in rules:
        if r.family != family:
            family = r.family
            click.echo(f"\n{family}  {FAMILIES[family]}")
        fix = "fix" if r.fixable else "   "
        click.echo(f"  {r.code}  {r.name:<{width}}  {r.severity.label:<8} {fix}  {r.summary}")


@main.command("rule")
@click.argument("code")
def rule_cmd(code):
    """Show a rule's documentation: what it does, why it matters, an example, the fix, references."""
    from rlhf_lint.engine.registry import REGISTRY

    r = REGISTRY.get(code)
    if r is None:
        click.echo(f"rlhf-lint: no rule {code!r} (see `rlhf-lint rules`)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(r.markdown())
    click.echo(f"Page: {r.url}")
