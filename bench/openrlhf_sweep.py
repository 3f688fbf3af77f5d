"""Lint every OpenRLHF example script of every release at its own version (a development sweep, not a test).

Needs a clone of OpenRLHF/OpenRLHF (the files are read with `git show TAG:PATH` and never kept):
    python bench/openrlhf_sweep.py /path/to/OpenRLHF/.git [--tags v0.9.5,v0.11.0] [--json out.json]

Prints, per rule, how many findings the sweep produced, and every distinct unknown-flag finding with the releases
whose scripts carried it, so each can be judged (a real invalid flag shipped in a script, or a false positive).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True).stdout


def example_scripts(repo: str, tag: str) -> list[str]:
    try:
        names = git(repo, "ls-tree", "-r", "--name-only", tag, "examples/").splitlines()
    except subprocess.CalledProcessError:
        return []
    return [n for n in names if n.endswith(".sh")]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", help="the OpenRLHF git directory")
    parser.add_argument("--tags", help="comma-separated tags (default: every release known to rlhf-lint)")
    parser.add_argument("--json", help="write every finding here")
    parser.add_argument("--infer", action="store_true",
                        help="do not tell rlhf-lint the release: it infers one from the flags (old example scripts that "
                             "run ../train_*.py are then not read as OpenRLHF)")
    args = parser.parse_args(argv)

    from rlhf_lint.engine.config import Config
    from rlhf_lint.frameworks.launchers import commands_of
    from rlhf_lint.frameworks.openrlhf import is_openrlhf, knowledge
    from rlhf_lint.engine.runner import Options, build_project, check_project, selected_rules

    k = knowledge()
    tags = args.tags.split(",") if args.tags else [t for t in k.tags if t != "HEAD"]
    counts: collections.Counter = collections.Counter()
    unknown: dict[tuple, list[str]] = collections.defaultdict(list)
    other: dict[tuple, list[str]] = collections.defaultdict(list)
    records = []
    unseen: dict[str, list[str]] = collections.defaultdict(list)
    missed: dict[tuple, list[str]] = collections.defaultdict(list)
    scripts = commands = filled = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for tag in tags:
            config = Config(versions={} if args.infer else {"openrlhf": tag.lstrip("v")}, root=tmp)
            rules = selected_rules(config, Options(select=["O"]))
            for name in example_scripts(args.repo, tag):
                text = git(args.repo, "show", f"{tag}:{name}")
                if PLACEHOLDER.search(text):
                    # templates such as `OPENRLHF_PATH=<OPENRLHF_ROOT_PATH>` do not parse in bash (F003 says so);
                    # fill the placeholder so the command inside can still be checked
                    text = PLACEHOLDER.sub(lambda m: "/placeholder/" + m.group(1).lower(), text)
                    filled += 1
                path = os.path.join(tmp, os.path.basename(name))
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
                scripts += 1
                project, unreadable = build_project([path], config)
                source = project.sources.get(path)
                found = []
                if source is not None and source.tree is not None:
                    found = [c for c in commands_of(source, project) if is_openrlhf(c, project)]
                commands += len(found)
                if not found and MENTIONS.search(text):
                    unseen[os.path.basename(name)].append(tag)
                reported: set[str] = set()
                for diag in check_project(project, unreadable, rules):
                    counts[diag.code] += 1
                    token = source.text[diag.span.start:diag.span.end] if source and diag.span else ""
                    reported.add(token)
                    key = (os.path.basename(name), diag.code, token if diag.code == "O001" else re.sub(r"OpenRLHF v[0-9a-z.]+", "OpenRLHF <tag>", diag.message))
                    (unknown if diag.code == "O001" else other)[key].append(tag)
                    records.append({"tag": tag, "script": name, "code": diag.code, "line": diag.start.line,
                                    "column": diag.start.column, "message": diag.message})
                for flag in _crude_unknown_flags(k, tag, text, found, project) - reported:
                    missed[(os.path.basename(name), flag)].append(tag)
                os.unlink(path)
    elapsed = time.perf_counter() - started

    print(f"{len(tags)} releases, {scripts} example scripts ({filled} with <PLACEHOLDER> values filled in), "
          f"{commands} OpenRLHF commands, {elapsed:.1f}s")
    print("findings per rule:", dict(sorted(counts.items())))
    print("\nunknown flags (O001): script, flag, releases")
    for (script, _, token), seen in sorted(unknown.items()):
        print(f"  {script:48s} {token:40s} {_ranges(k, seen)}")
    print("\nother findings: script, code, message, releases")
    for (script, code, message), seen in sorted(other.items()):
        print(f"  {script:48s} {code} {message[:110]}  [{_ranges(k, seen)}]")
    print("\nscripts naming an OpenRLHF entry point where no OpenRLHF command was read:")
    for script, seen in sorted(unseen.items()):
        print(f"  {script:48s} {_ranges(k, seen)}")
    print("\ncross-check: --flags a plain regex scan finds outside every flag table of the command's CLI, not reported"
          " by O001 (launcher options, commented-out flags, other programs):")
    for (script, flag), seen in sorted(missed.items()):
        print(f"  {script:48s} {flag:40s} {_ranges(k, seen)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1)
    return 0


PLACEHOLDER = re.compile(r"(?<=[=\s])<([A-Za-z_]+)>")
MENTIONS = re.compile(r"openrlhf\.cli\.|\.\./(train_\w+|batch_inference|interactive_chat)\.py")
LAUNCHER_FLAGS = {"--module", "--num_gpus", "--num_nodes", "--include", "--exclude", "--hostfile", "--master_port",
                  "--master_addr", "--address", "--runtime-env-json", "--no-wait", "--nproc_per_node", "--nnodes",
                  "--node_rank", "--working-dir", "--submission-id", "--entrypoint-num-cpus", "--local_rank"}


def _crude_unknown_flags(k, tag, text, commands, project) -> set[str]:
    """Independent of the shell reader: every --flag on a non-comment line that no CLI the script runs accepts."""
    clis = set()
    for command in commands:
        from rlhf_lint.frameworks.openrlhf import analyze

        inv = analyze(command, None, project)
        if inv.cli and inv.module_ok:
            clis.add(inv.cli)
    if not clis:
        return set()
    index = k.index(tag)
    valid = set()
    for cli in clis:
        valid |= set(k.flags_at(cli, index))
    flags = set()
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        flags |= set(re.findall(r"(?<![\w-])(--[A-Za-z][\w.-]*)", code))
    out = set()
    for flag in flags - LAUNCHER_FLAGS:
        if flag in valid or any(v.startswith(flag) for v in valid):
            continue
        out.add(flag)
    return out


def _ranges(k, seen: list[str]) -> str:
    indices = sorted({k.index(t) for t in seen})
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(k.tag(a) if a == b else f"{k.tag(a)}..{k.tag(b)}" for a, b in runs) + f" ({len(indices)})"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
