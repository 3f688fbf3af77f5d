"""Throughput over a generated corpus: files per second and peak RSS, serial and parallel, cold and cached.

    python bench/throughput.py [--files 5000] [--jobs 1,2] [--corpus DIR] [--repeat N] [--compare]

Generates the corpus (bench/corpus.py) unless --corpus is given, then runs the installed ``rlhf-lint`` on it:
with --no-cache for each worker count, then twice with a fresh cache (filling it, then reading it). Peak RSS is
measured for 1/5, 1/2 and all of the files to show that memory stays flat in the number of files.
Targets: at least 300 files per second on 2 cores; flat memory.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from corpus import generate  # noqa: E402
from latency import console_script  # noqa: E402


def run(args: list[str], env: dict) -> tuple[float, int, int, float, float]:
    """(seconds, peak RSS KiB of the process tree's largest member, exit code, CPU seconds of the rlhf-lint process
    itself, CPU seconds of its worker processes). The CPU figures are read from /proc while the finished process is
    still a zombie (waitid WNOWAIT): its own utime+stime, and cutime+cstime of the workers it waited for. CPU
    seconds, unlike wall time, hardly move when other jobs load the machine."""
    probe = ("import os, resource, subprocess, sys, time; t = time.perf_counter(); "
             "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
             "own = workers = -1.0\n"
             "if hasattr(os, 'waitid') and os.path.exists(f'/proc/{p.pid}/stat'):\n"
             "    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT); tick = os.sysconf('SC_CLK_TCK')\n"
             "    f = open(f'/proc/{p.pid}/stat').read().rsplit(')', 1)[1].split()\n"
             "    own, workers = (int(f[11]) + int(f[12])) / tick, (int(f[13]) + int(f[14])) / tick\n"
             "rc = p.wait(); "
             "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc, own, workers)")
    out = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True, check=True)
    seconds, rss, rc, own, workers = out.stdout.split()
    return float(seconds), int(rss), int(rc), float(own), float(workers)


def row(label: str, count: int, measured: tuple) -> dict:
    seconds, rss, _rc, own, workers = measured
    return {"run": label, "seconds": round(seconds, 2), "files_per_second": round(count / seconds),
            "peak_rss_mib": round(rss / 1024, 1), "cpu_main_s": round(own, 2), "cpu_workers_s": round(workers, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--jobs", default="1,2")
    parser.add_argument("--corpus", help="an existing folder to lint instead of a generated corpus")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="run the no-cache runs this many times, alternating")
    parser.add_argument("--compare", action="store_true",
                        help="also check that the JSON report is byte-identical for every worker count")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="rlhf-lint-throughput-")
    try:
        corpus = args.corpus or os.path.join(work, "corpus")
        if not args.corpus:
            generate(corpus, args.files)
        count = sum(len(f) for _, _, f in os.walk(corpus))
        env = dict(os.environ, RLHF_LINT_CACHE_DIR=os.path.join(work, "cache"))
        cmd = console_script()
        rows = []
        for _ in range(args.repeat):
            for jobs in [int(j) for j in args.jobs.split(",")]:
                measured = run([*cmd, "--no-cache", "-q", corpus], dict(env, RLHF_LINT_JOBS=str(jobs)))
                rows.append(row(f"no cache, {jobs} worker(s)", count, measured))
        same = None
        if args.compare:
            reports = {subprocess.run([*cmd, "--no-cache", "--format", "json", corpus], capture_output=True,
                                      env=dict(env, RLHF_LINT_JOBS=str(jobs))).stdout
                       for jobs in args.jobs.split(",")}
            same = len(reports) == 1
        for label in ("cache cold (filling)", "cache warm (unchanged files)"):
            rows.append(row(label, count, run([*cmd, "-q", corpus], env)))
        memory = []
        if not args.corpus:
            repos = sorted(os.listdir(corpus))
            for fraction in (5, 2, 1):
                subset = [os.path.join(corpus, r) for r in repos[: len(repos) // fraction]]
                seconds, rss, *_ = run([*cmd, "--no-cache", "-q", *subset], dict(env, RLHF_LINT_JOBS="1"))
                files = sum(len(f) for s in subset for _, _, f in os.walk(s))
                memory.append({"files": files, "peak_rss_mib": round(rss / 1024, 1)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures = {"files": count, "cpus": os.cpu_count(), "runs": rows, "memory_by_files": memory,
               "identical_json": same}
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{count} files, {os.cpu_count()} CPUs")
    for r in rows:
        print(f"  {r['run']:<32} {r['seconds']:6.2f} s  {r['files_per_second']:6d} files/s  "
              f"peak RSS {r['peak_rss_mib']} MiB  CPU {r['cpu_main_s']} s + workers {r['cpu_workers_s']} s")
    if same is not None:
        print(f"  JSON report identical for every worker count: {'yes' if same else 'NO'}")
    for m in memory:
        print(f"  memory: {m['files']:5d} files (1 worker, no cache) -> peak RSS {m['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
