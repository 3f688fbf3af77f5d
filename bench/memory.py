"""Peak memory of one process by number of files (issue 17: flat in the files, linear only in the findings).

    python bench/memory.py [--files 4000,20000] [--format text,sarif] [--corpus DIR] [--trace]

Generates bench/corpus.py's corpus for the largest size (seed 0, repositories of 10 files) unless --corpus names
one, then runs the installed ``rlhf-lint --no-cache`` with one worker on the first N/10 repositories for each size
and format and prints its peak RSS and CPU seconds. ``--trace`` checks in this process instead and prints the RSS
after discovery, after grouping and every 200 groups.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from corpus import generate  # noqa: E402
from latency import console_script  # noqa: E402

PROBE = ("import resource, subprocess, sys; "
         "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode; "
         "r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_maxrss, r.ru_utime + r.ru_stime, rc)")


def repositories(corpus: str, files: int) -> list[str]:
    return sorted(os.path.join(corpus, d) for d in os.listdir(corpus))[:files // 10]


def cli(corpus: str, files: int, fmt: str) -> str:
    args = [*console_script(), "check", "--no-cache", "--format", fmt, *(["-q"] if fmt == "text" else []),
            *repositories(corpus, files)]
    out = subprocess.run([sys.executable, "-c", PROBE, *args], env=dict(os.environ, RLHF_LINT_JOBS="1"),
                         capture_output=True, text=True, check=True).stdout.split()
    return f"{files} files, {fmt}: peak RSS {int(out[0]) / 1024:.1f} MiB, {float(out[1]):.1f} CPU s (exit {out[2]})"


def trace(corpus: str, files: int) -> str:
    import rlhf_lint.engine.groups as groups
    import rlhf_lint.engine.runner as runner
    from rlhf_lint.engine.config import Config

    def rss() -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    marks = []
    partition, serial = groups.partition, runner._serial

    def traced_partition(discovered, root):
        marks.append(("discovered", rss()))
        return partition(discovered, root)

    def traced_serial(work, *args):
        marks.append(("grouped", rss()))
        for i, out in enumerate(serial(work, *args)):
            if i % 200 == 0:
                marks.append((f"group {i}", rss()))
            yield out

    groups.partition, runner._serial = traced_partition, traced_serial
    os.environ["RLHF_LINT_JOBS"] = "1"
    start = time.process_time()
    result = runner.lint(repositories(corpus, files), Config(root=corpus), runner.Options(jobs=1))
    marks.append(("end", rss()))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (f"{result.files_checked} files, {len(result.diagnostics)} findings: peak RSS {peak:.1f} MiB, "
            f"{time.process_time() - start:.1f} CPU s\n  " + ", ".join(f"{k} {v:.1f}" for k, v in marks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="4000,20000")
    parser.add_argument("--format", default="text")
    parser.add_argument("--corpus")
    parser.add_argument("--trace", action="store_true", help="in this process, one size only")
    args = parser.parse_args()
    sizes = [int(n) for n in args.files.split(",")]
    work = None if args.corpus else tempfile.mkdtemp(prefix="rlhf-lint-memory-")
    corpus = args.corpus or os.path.join(work, "corpus")
    try:
        if work:
            generate(corpus, max(sizes))
        if args.trace:
            print(trace(corpus, sizes[0]))
            return
        for fmt in args.format.split(","):
            for files in sizes:
                print(cli(corpus, files, fmt), flush=True)
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
