"""Fuzzing run: lint thousands of mutated real-shaped files of every kind and count crashes.

    python bench/fuzz.py [--files 10000] [--seed 0] [--keep DIR]

Each folder holds one mutated set of seed files (a launch script naming a ds_config, YAML, Python configs,
requirements, pyproject, Dockerfile: see bench/mutations.py), so cross-file code (job builders, ds_config
classification) is fuzzed too. Folders are linted in process, one at a time; a crash is an exception escaping
``lint()`` or an F010 internal-error diagnostic. Each folder is timed, then each file alone (the "slowest file"
figure; --no-per-file skips it). A sample of batches (40 folders each) and the special cases (50 MB file, symlink
loops, unreadable files, FIFOs, folders named like files) also go through the CLI, where a crash is a traceback
on stderr or an exit code other than 0 or 1. Prints the counts, the slowest folder and files, the peak memory,
and each crash with the mutations that produced it.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mutations import mutate, seeds, special_cases  # noqa: E402

BATCH_FOLDERS = 40


def write_corpus(root: str, files: int, seed: int) -> dict[str, list[str]]:
    """Write mutated seed sets, one per folder; return path -> the mutations applied to it."""
    rng = random.Random(seed)
    history: dict[str, list[str]] = {}
    folder = 0
    while len(history) < files:
        directory = os.path.join(root, f"b{folder // BATCH_FOLDERS:04d}", f"set{folder:05d}")
        os.makedirs(directory)
        for name, text in seeds(rng.randrange(10**6)):
            if len(history) >= files:
                break
            data = text.encode("utf-8")
            ops: list[str] = []
            if rng.random() < 0.85:
                data, ops = mutate(data, rng)
            path = os.path.join(directory, name)
            with open(path, "wb") as fh:
                fh.write(data)
            history[path] = ops
        folder += 1
    return history


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def lint_in_process(path: str, timeout: int):
    """lint() on one folder; Hang if it takes longer than ``timeout`` seconds (SIGALRM, main thread)."""
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import Options, lint

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        return lint([path], Config(root=path), Options(jobs=1))
    finally:
        signal.alarm(0)


def _checked(path: str, timeout: int, history: dict, crashes: list[str]):
    """(seconds, Result or None) of lint() on one folder or file; a hang, an escaped exception or an F010
    diagnostic is added to ``crashes``."""
    t = time.perf_counter()
    try:
        result = lint_in_process(path, timeout)
    except Hang:
        crashes.append(f"{path}: hang (over {timeout} s) [mutations: {', '.join(history.get(path, []))}]")
        return float(timeout), None
    except BaseException as exc:  # noqa: BLE001 - counting every escape is the point
        if isinstance(exc, KeyboardInterrupt):
            raise
        crashes.append(f"{path}: lint() raised {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        return time.perf_counter() - t, None
    elapsed = time.perf_counter() - t
    for d in result.diagnostics:
        if d.code == "F010":
            crashes.append(f"{d.path}: {d.message} [mutations: {', '.join(history.get(d.path, []))}]")
    return elapsed, result


def cli(paths: list[str], cwd: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "rlhf_lint", "--no-cache", "-q", *paths], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cli-every", type=int, default=10, help="also run the CLI on every Nth batch")
    parser.add_argument("--timeout", type=int, default=120, help="seconds a folder or file may take before it is a hang")
    parser.add_argument("--no-per-file", dest="per_file", action="store_false",
                        help="skip linting each file alone (the per-file timing)")
    parser.add_argument("--keep", help="write the corpus here and keep it (default: a temp folder, removed)")
    args = parser.parse_args()

    root = args.keep or tempfile.mkdtemp(prefix="rlhf-lint-fuzz-")
    os.makedirs(root, exist_ok=True)
    crashes: list[str] = []
    try:
        start = time.perf_counter()
        history = write_corpus(root, args.files, args.seed)
        sizes = {path: os.path.getsize(path) for path in history}
        print(f"wrote {len(history)} files ({sum(1 for o in history.values() if o)} mutated) "
              f"in {time.perf_counter() - start:.1f} s", flush=True)
        batches = sorted(os.path.join(root, b) for b in os.listdir(root) if b.startswith("b"))
        checked = 0
        slowest = (0.0, "")  # the slowest folder (one seed set, linted as a whole)
        files_timed: list[tuple[float, str]] = []  # (seconds, path) of each file linted alone
        cli_runs = 0
        if batches:  # imports and knowledge loading happen in the first run: not counted against a folder
            first = sorted(os.listdir(batches[0]))[0]
            _checked(os.path.join(batches[0], first), args.timeout, history, [])
        for n, batch in enumerate(batches):
            for folder in sorted(os.path.join(batch, f) for f in os.listdir(batch)):
                elapsed, result = _checked(folder, args.timeout, history, crashes)
                if result is None:
                    continue
                slowest = max(slowest, (elapsed, folder))
                checked += result.files_checked
                if args.per_file:
                    for name in sorted(os.listdir(folder)):
                        path = os.path.join(folder, name)
                        elapsed, _ = _checked(path, args.timeout, history, crashes)
                        files_timed.append((elapsed, path))
            if args.cli_every and n % args.cli_every == 0:
                cli_runs += 1
                code, err = cli([batch], root)
                if code not in (0, 1) or "Traceback" in err:
                    crashes.append(f"CLI on {batch}: exit {code}\n{err[-2000:]}")
        special = os.path.join(root, "special")
        os.makedirs(special)
        cases = special_cases(special)
        code, err = cli([special, os.path.join(special, "loop_a.yaml"), os.path.join(special, "launch"),
                         os.path.join(special, "ds_config.json"), os.path.join(special, "missing.sh")], root)
        cli_runs += 1
        if code not in (0, 1) or "Traceback" in err:
            crashes.append(f"CLI on special cases: exit {code}\n{err[-2000:]}")
        total = time.perf_counter() - start
    finally:
        if not args.keep:
            for dirpath, _dirs, files in os.walk(root):
                for name in files:
                    try:
                        os.chmod(os.path.join(dirpath, name), 0o600)
                    except OSError:
                        pass
            shutil.rmtree(root, ignore_errors=True)
    print(f"mutated files linted in process: {len(history)} ({checked} decoded as text and checked; the rest were refused "
          f"as binary, not UTF-8 or too large, each with a diagnostic)")
    print(f"CLI runs: {cli_runs} (every {args.cli_every}th batch, plus the special cases: {'; '.join(cases)})")
    print(f"slowest folder (a seed set linted as a whole): {slowest[0]:.2f} s ({os.path.relpath(slowest[1], root)}); "
          f"total {total:.0f} s")
    if files_timed:
        files_timed.sort(reverse=True)
        median = files_timed[len(files_timed) // 2][0]
        print(f"files linted alone: {len(files_timed)}, median {median * 1000:.0f} ms; slowest:")
        for seconds, path in files_timed[:5]:
            print(f"  {seconds:6.2f} s {sizes.get(path, 0):>9} bytes {os.path.relpath(path, root)} "
                  f"[mutations: {', '.join(history.get(path, [])) or 'none'}]")
    import resource

    print(f"peak memory of the in-process runs: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"of the CLI runs: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")
    print(f"crashes: {len(crashes)}")
    for c in crashes[:50]:
        print("  " + c.replace("\n", "\n    "))
    sys.exit(1 if crashes else 0)


if __name__ == "__main__":
    main()
