"""Refresh the knowledge tables from upstream releases: ``python -m rlhf_lint.schemas.build --all``.

Each builder reads release artifacts statically (wheels and sdists pip fetches into the cache folder, or a git
checkout for what is not on the package index) and rewrites its tables under ``schemas/``; at the end a summary
says, per table, which releases were added and how many rows were added and closed. Options:

  --all              every builder (ORZ is skipped with a message unless --orz-source names a checkout)
  --only NAME        one builder (repeatable): openrlhf, deepspeed, verl, accelerate, orz, requires, trl, hf_parser,
                     swift, verl_recipes, causal_lm_loss
  --cache DIR        where releases are kept (default: ~/.cache/rlhf-lint/upstream, or $XDG_CACHE_HOME)
  --offline          use only what the cache holds (no pip, no index)
  --releases V,...   read these releases instead of "every release newer than the table's newest"
  --orz-source DIR   a checkout of Open-Reasoner-Zero (it is not on the package index)
  --swift-source DIR a git directory of modelscope/ms-swift (its presets and argument files are read by tag; a
                     release without a tag there, or every release without it, from the wheel)
  --verl-source DIR  a git directory of verl (verl_recipes: its recipe/ folder is read by tag)
  --verl-recipe-source DIR  a git directory of verl-project/verl-recipe (the recipe submodule of verl 0.7.1 on)
"""
from __future__ import annotations

import argparse
import sys

BUILDERS = ("openrlhf", "deepspeed", "verl", "accelerate", "orz", "requires", "trl", "hf_parser", "swift",
            "verl_recipes", "causal_lm_loss")


class Skip(Exception):
    """A builder that cannot run here (say why); --all goes on with the others."""


def _run(name: str, cache, args, log) -> dict:
    releases = [v.strip() for v in args.releases.split(",")] if args.releases else None
    if name == "openrlhf":
        from rlhf_lint.schemas.build import openrlhf

        data, summary = openrlhf.refresh(cache, releases, log)
        openrlhf.write(data)
        return summary
    if name == "deepspeed":
        from rlhf_lint.schemas.build import deepspeed

        return deepspeed.refresh(cache, releases, log)
    if name == "verl":
        from rlhf_lint.schemas.build import verl

        return verl.refresh(cache, releases, log)
    if name == "accelerate":
        from rlhf_lint.schemas.build import accelerate

        return accelerate.refresh(cache, releases, log)
    if name == "orz":
        if not args.orz_source:
            raise Skip("no --orz-source checkout given (Open-Reasoner-Zero is not on the package index)")
        from rlhf_lint.schemas.build import orz

        return orz.refresh(args.orz_source, log)
    if name == "requires":
        from rlhf_lint.schemas.build import requires

        return requires.refresh(cache, releases, log)
    if name == "trl":
        from rlhf_lint.schemas.build import trl

        return trl.refresh(cache, releases, log)
    if name == "hf_parser":
        from rlhf_lint.schemas.build import hf_parser

        return hf_parser.refresh(cache, releases, log)
    if name == "causal_lm_loss":
        from rlhf_lint.schemas.build import causal_lm_loss

        return causal_lm_loss.refresh(cache, releases, log)
    if name == "swift":
        from rlhf_lint.schemas.build import swift

        return swift.refresh(args.swift_source, releases, log, cache)
    if name == "verl_recipes":
        if not args.verl_source:
            raise Skip("no --verl-source git directory given (verl's recipes are read by tag from a mirror)")
        from rlhf_lint.schemas.build import verl_recipes

        return verl_recipes.refresh(args.verl_source, args.verl_recipe_source, releases, log)
    raise Skip(f"no builder {name!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlhf_lint.schemas.build", description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="run every builder")
    parser.add_argument("--only", action="append", choices=BUILDERS, default=[], help="run one builder (repeatable)")
    parser.add_argument("--cache", default=None, help="folder of fetched releases")
    parser.add_argument("--offline", action="store_true", help="use only the cache")
    parser.add_argument("--releases", default=None, help="comma-separated versions to read (one builder)")
    parser.add_argument("--orz-source", default=None, help="Open-Reasoner-Zero checkout")
    parser.add_argument("--swift-source", default=None, help="modelscope/ms-swift git directory (bare is fine)")
    parser.add_argument("--verl-source", default=None, help="verl git directory (bare is fine)")
    parser.add_argument("--verl-recipe-source", default=None, help="verl-project/verl-recipe git directory")
    parser.add_argument("--report", nargs="?", const="HEAD", default=None, metavar="GIT_REF",
                        help="print what the data files changed against GIT_REF (default HEAD), per table; "
                             "refresh nothing")
    args = parser.parse_args(argv)
    if args.report:
        print(report(args.report))
        return 0
    names = list(BUILDERS) if args.all else args.only
    if not names:
        parser.error("say --all or --only NAME")
    if args.releases and len(names) != 1:
        parser.error("--releases goes with one --only builder")

    from rlhf_lint.schemas.build.upstream import Cache

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    cache = Cache(args.cache, offline=args.offline, log=log)
    summaries, failed = [], 0
    for name in names:
        log(f"{name}:")
        try:
            summaries.append(_run(name, cache, args, log))
        except Skip as why:
            log(f"  skipped: {why}")
        except Exception as err:  # one builder failing must not stop the others; the exit code says it
            failed += 1
            log(f"  FAILED: {type(err).__name__}: {err}")
    print(format_summary(summaries))
    return 1 if failed else 0


def report(ref: str) -> str:
    """Rows added, closed and bounded per table against a git revision of the data files (for the pull request)."""
    import json
    import os
    import subprocess

    from rlhf_lint.schemas.build.ds_config import HERE, KEYS_OUT, diff_keys

    def at_ref(path: str) -> str | None:
        rel = os.path.relpath(path, os.path.dirname(HERE))
        out = subprocess.run(["git", "-C", os.path.dirname(HERE), "show", f"{ref}:{rel}"], capture_output=True,
                             text=True, check=False)
        return out.stdout if out.returncode == 0 else None

    lines = [f"changes against {ref}", "table | releases added | rows added | rows closed | rows bounded | newest"]
    old = at_ref(KEYS_OUT)
    with open(KEYS_OUT, encoding="utf-8") as fh:
        d = diff_keys(json.loads(old) if old else {}, json.load(fh))
    lines.append(f"{d['table']} | {', '.join(d['releases']) or '-'} | {d['added']} | {d['closed']} | {d['bounded']} | "
                 f"{d['newest']}")
    for root, _, files in sorted(os.walk(HERE)):
        if os.sep + "build" in root or "__pycache__" in root:
            continue
        for name in sorted(files):
            path = os.path.join(root, name)
            if path == KEYS_OUT or not name.endswith((".json", ".tsv")):
                continue
            before = at_ref(path)
            with open(path, encoding="utf-8") as fh:
                now = fh.read()
            if before != now:  # other tables: the lines that differ
                old_lines, new_lines = set((before or "").splitlines()), set(now.splitlines())
                lines.append(f"{os.path.relpath(path, HERE)} | - | +{len(new_lines - old_lines)} lines | "
                             f"-{len(old_lines - new_lines)} lines | - | -")
    return "\n".join(lines)


def format_summary(summaries: list[dict]) -> str:
    """One line per table: releases added, rows added and closed, newest release covered."""
    lines = ["table | releases added | rows added | rows closed | rows bounded | newest"]
    for s in summaries:
        for row in s.get("tables", [s]):
            lines.append(f"{row['table']} | {', '.join(row.get('releases', [])) or '-'} | {row.get('added', 0)} | "
                         f"{row.get('closed', 0)} | {row.get('bounded', '-')} | {row.get('newest', '?')}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
