"""The console entry point. Pre-commit runs ``rlhf-lint FILE...`` once per commit, so start-up time is the cost a
user feels: a plain check is parsed here without importing click (whose import alone costs about one bare
interpreter start); anything else (help, subcommands, an option this parser does not know, a malformed value) goes
to the click application in rlhf_lint.cli.app, which also produces every usage error.

tests/cli/test_fast_entry.py checks that, for the same argv, this parser and click's ``check`` give the same parameters.
"""
from __future__ import annotations

import os
import sys

# subcommands of the click group (a first argument with one of these names is not a path)
SUBCOMMANDS = frozenset({"check", "rules", "rule", "estimate", "env", "server", "knowledge"})

FLAGS = {"--fix": "fix", "--unsafe-fixes": "unsafe_fixes", "--diff": "diff", "--show-fixes": "show_fixes",
         "--quiet": "quiet", "-q": "quiet", "--debug": "debug", "--no-cache": "no_cache",
         "--force-exclude": "force_exclude", "--no-respect-gitignore": "no_respect_gitignore",
         "--statistics": "statistics", "--exit-zero": "exit_zero", "--add-noqa": "add_noqa",
         "--write-baseline": "write_baseline"}
MULTIPLE = {"--select": "select", "--extend-select": "extend_select", "--ignore": "ignore", "--exclude": "exclude"}
VALUES = {"--gpu": "gpu", "--gpu-memory": "gpu_memory", "--host-memory": "host_memory",
          "--container-memory": "container_memory", "--openrlhf-version": "openrlhf_version",
          "--deepspeed-version": "deepspeed_version", "--stdin-filename": "stdin_filename",
          "--baseline": "baseline"}
INTS = {"--gpus-per-node": "gpus_per_node", "--nodes": "nodes", "--world-size": "world_size"}
CHOICES = {"--format": ("output_format", ("text", "json", "sarif", "github", "gitlab")),
           "--output-format": ("output_format", ("text", "json", "sarif", "github", "gitlab")),  # ruff's name
           "--fail-on": ("fail_on", ("error", "warning", "info"))}
FILES = {"--config": "config_path", "--output": "output", "-o": "output"}  # click.Path(dir_okay=False)

DEFAULTS = {"fix": False, "unsafe_fixes": False, "diff": False, "show_fixes": False, "select": (),
            "extend_select": (), "ignore": (), "exclude": (), "output_format": "text", "fail_on": None,
            "config_path": None, "gpu": None, "gpu_memory": None, "gpus_per_node": None, "host_memory": None,
            "container_memory": None, "nodes": None, "world_size": None, "openrlhf_version": None,
            "deepspeed_version": None, "output": None, "quiet": False, "debug": False, "no_cache": False,
            "force_exclude": False, "no_respect_gitignore": False, "stdin_filename": None, "statistics": False,
            "exit_zero": False, "add_noqa": False, "baseline": None, "write_baseline": False}


def parse_check_args(argv: list[str]) -> tuple[tuple[str, ...], dict] | None:
    """(paths, params) for a plain check command line, or None to let click handle it."""
    args = list(argv)
    if args and args[0] == "check":
        args = args[1:]
    elif args and args[0] in SUBCOMMANDS:
        return None
    params = dict(DEFAULTS)
    multiple: dict[str, list[str]] = {}
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            if arg == "-" or not arg:
                return None
            paths.append(arg)
            continue
        name, eq, inline = arg.partition("=")
        if name in FLAGS:
            if eq:
                return None
            params[FLAGS[name]] = True
            continue
        if name not in MULTIPLE and name not in VALUES and name not in INTS and name not in CHOICES \
                and name not in FILES:
            return None  # --help, --version, "--", a short option cluster, an unknown option: click decides
        if eq:
            value = inline
        elif i < len(args):
            value = args[i]
            i += 1
        else:
            return None  # missing value: click's usage error
        if name in MULTIPLE:
            multiple.setdefault(MULTIPLE[name], []).append(value)
        elif name in VALUES:
            params[VALUES[name]] = value
        elif name in INTS:
            try:
                params[INTS[name]] = int(value.strip())
            except ValueError:
                return None
        elif name in CHOICES:
            key, choices = CHOICES[name]
            if value not in choices:
                return None
            params[key] = value
        else:
            if os.path.isdir(value):
                return None  # click refuses a directory here
            params[FILES[name]] = value
    for key, values in multiple.items():
        params[key] = tuple(values)
    return tuple(paths), params


def main(argv: list[str] | None = None) -> None:
    """The console script (``argv`` None: it ends the process) or a caller's check (it raises SystemExit)."""
    from rlhf_lint.startup import raise_gc_threshold_for_startup

    raise_gc_threshold_for_startup()
    args = sys.argv[1:] if argv is None else argv
    parsed = parse_check_args(args)
    if parsed is None:
        from rlhf_lint.cli.app import main as click_main

        click_main(args=args, prog_name="rlhf-lint")
        return
    from rlhf_lint.cli.check import run_check

    paths, params = parsed
    code = run_check(paths, **params)
    if argv is None:
        hard_exit(code)
    sys.exit(code)


def hard_exit(code: int) -> None:
    """End the process without tearing down modules and freeing every object one by one, which costs ~5 ms, a
    tenth of a one-file run (mypy's ``util.hard_exit`` does the same). Only the console script does this, after the
    report: fixed files and cache entries are written, closed and renamed by then, and no atexit work is pending."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken pipe: let the ordinary exit report it as it always has
        sys.exit(code)
    os._exit(code)
