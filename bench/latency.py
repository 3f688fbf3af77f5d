"""One-file latency: ``rlhf-lint train.sh`` against a bare ``python -c pass`` in the same environment.

    python bench/latency.py [--runs 30] [--file PATH] [--breakdown]

Runs the commands alternately (so machine noise hits them alike), reports the medians and their ratio (target:
at most 3), the peak RSS of one lint run, and which heavy modules a one-shell-script run loaded (target: none of
libcst, jsonschema, yaml, click). Without --file it writes a typical OpenRLHF PPO launch script to a temp folder.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from corpus import launch_script  # noqa: E402

HEAVY = ("libcst", "jsonschema", "yaml", "click", "tree_sitter", "tree_sitter_bash")


def console_script() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "rlhf-lint")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "rlhf_lint"]


def timed(cmd: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def peak_rss_kib(cmd: list[str], cwd: str) -> int:
    """Peak RSS of one child run (ru_maxrss of the children's maximum, measured in a fresh helper process)."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], cwd=cwd, capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def loaded_modules(path: str, cwd: str) -> list[str]:
    code = ("import sys\nfrom rlhf_lint.cli.entry import main\ntry:\n    main(['--no-cache', %r])\nexcept SystemExit:\n"
            "    pass\nprint(' '.join(sorted({m.split('.')[0] for m in sys.modules})))" % path)
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True)
    names = out.stdout.strip().splitlines()[-1].split() if out.stdout.strip() else []
    return [m for m in HEAVY if m in names]


# cumulative steps of a one-script run, each a fresh interpreter (--breakdown)
STEPS = (
    ("bare interpreter", "pass"),
    ("+ engine (rlhf_lint.engine.runner)", "import rlhf_lint.engine.runner"),
    ("+ rule index (every rule known, no rule module imported)",
     "import rlhf_lint.engine.runner; from rlhf_lint.engine.registry import REGISTRY; REGISTRY.known()"),
    ("+ shell reader and tree-sitter grammar",
     "import rlhf_lint.engine.runner; from rlhf_lint.engine.registry import REGISTRY; REGISTRY.known(); "
     "from rlhf_lint.readers.shell import _parser; _parser()"),
    ("full run: jobs, OpenRLHF and memory knowledge, the rules that apply, report",
     "import sys; from rlhf_lint.cli.entry import main; main(['--no-cache', sys.argv[1]])"),
)

# what pip's generated console script does before it calls rlhf-lint: every pip-installed command pays it
WRAPPER = "import re, sys; sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])"


def breakdown(target: str, cwd: str, runs: int) -> list[tuple[str, float]]:
    cmds = [[sys.executable, "-c", code, target] for _, code in STEPS]
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(3):
        for cmd in cmds:
            timed(cmd, cwd)
    for _ in range(runs):
        for i, cmd in enumerate(cmds):
            times[i].append(timed(cmd, cwd))
    return [(label, round(statistics.median(t) * 1000, 1)) for (label, _), t in zip(STEPS, times)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--file", help="the file to lint (default: a generated OpenRLHF launch script)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--breakdown", action="store_true", help="also time the cumulative steps of a run")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="rlhf-lint-latency-")
    try:
        if args.file:
            target = os.path.abspath(args.file)
        else:
            target = os.path.join(work, "train_ppo.sh")
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(launch_script(0))
        lint_cmd = [*console_script(), "--no-cache", target]
        bare_cmd = [sys.executable, "-c", "pass"]
        for _ in range(3):  # warm the page cache and .pyc files
            timed(bare_cmd, work)
            timed(lint_cmd, work)
        wrapper_cmd = [sys.executable, "-c", WRAPPER]
        bare, wrapper, lint = [], [], []
        for _ in range(args.runs):
            bare.append(timed(bare_cmd, work))
            wrapper.append(timed(wrapper_cmd, work))
            lint.append(timed(lint_cmd, work))
        figures = {
            "python": sys.version.split()[0],
            "runs": args.runs,
            "bare_median_ms": round(statistics.median(bare) * 1000, 1),
            "wrapper_median_ms": round(statistics.median(wrapper) * 1000, 1),
            "lint_median_ms": round(statistics.median(lint) * 1000, 1),
            "ratio": round(statistics.median(lint) / statistics.median(bare), 2),
            "lint_peak_rss_mib": round(peak_rss_kib(lint_cmd, work) / 1024, 1),
            "bare_peak_rss_mib": round(peak_rss_kib(bare_cmd, work) / 1024, 1),
            "heavy_modules_loaded": loaded_modules(target, work),
        }
        if args.breakdown:
            figures["breakdown_ms"] = breakdown(target, work, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"python {figures['python']}, {figures['runs']} runs each, alternating")
    print(f"  python -c pass      median {figures['bare_median_ms']:7.1f} ms   peak RSS {figures['bare_peak_rss_mib']} MiB")
    print(f"  console-script wrapper alone (import re) median {figures['wrapper_median_ms']:7.1f} ms")
    print(f"  rlhf-lint train.sh  median {figures['lint_median_ms']:7.1f} ms   peak RSS {figures['lint_peak_rss_mib']} MiB")
    print(f"  ratio {figures['ratio']}x (target <= 3x)")
    print(f"  heavy modules loaded for one shell script: {', '.join(figures['heavy_modules_loaded']) or 'none'}")
    for label, ms in figures.get("breakdown_ms", []):
        print(f"  {ms:7.1f} ms  {label}")


if __name__ == "__main__":
    main()
