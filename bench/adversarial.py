"""Adversarial inputs at growing sizes: time and peak memory per size, and the slope (should be ~linear).

    python bench/adversarial.py [--quick] [--only NAME,...] [--json]

Each case writes one hostile input (issue 17's classes: merge-key and alias blow-ups, duplicate keys on one line,
repeated flags, long runs of '[', variable doubling, huge numbers, many pins in one Dockerfile RUN, huge node
counts, many small files; and many ds_configs in one repository, wildcard runs in a .gitignore) at four sizes and
runs the installed ``rlhf-lint --no-cache`` on it in a fresh process.
The slope is the exponent b of time ~ size^b fitted between the smallest and the largest size (1: linear, 2:
quadratic; start-up time makes small inputs look sub-linear). Then a 1 MB file of every kind is checked against
the budget: under 5 s and 300 MB.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from latency import console_script  # noqa: E402

BUDGET_SECONDS, BUDGET_MB = 5.0, 300


def run(args: list[str], cwd: str, timeout: float = 120) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB of the largest process, exit code) of one run, in a probe process of its own. The
    probe kills a run that outlasts ``timeout`` (a run left behind would load the machine for the next cases)."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter()\n"
             "try:\n"
             "    rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, "
             "timeout=float(sys.argv[1])).returncode\n"
             "except subprocess.TimeoutExpired:\n"
             "    rc = -1\n"
             "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)")
    try:
        out = subprocess.run([sys.executable, "-c", probe, str(timeout), *args], cwd=cwd, capture_output=True,
                             text=True, timeout=timeout + 30, check=True)
    except subprocess.TimeoutExpired:
        return timeout, float("nan"), -1
    seconds, rss, rc = out.stdout.split()
    return float(seconds), int(rss) / 1024, int(rc)


# -- the cases: size -> {relative path: text} ----------------------------------------------------------------------
def merge_keys(levels: int) -> dict[str, str]:
    lines = ["actor_rollout_ref:", "  a0: &a0 {x: 1, y: 2}"]
    lines += [f"  a{i}: &a{i}\n    <<: [*a{i - 1}, *a{i - 1}]\n    k{i}: 1" for i in range(1, levels)]
    return {"ppo_trainer.yaml": "\n".join(lines) + "\ndata:\n  train_batch_size: 8\ntrainer:\n  nnodes: 1\n"}


def alias_mappings(levels: int) -> dict[str, str]:
    lines = ["actor_rollout_ref:", "  a0: &a0 {x: 1, y: 2}"]
    lines += [f"  a{i}: &a{i} {{p: *a{i - 1}, q: *a{i - 1}}}" for i in range(1, levels)]
    return {"ppo_trainer.yaml": "\n".join(lines) + "\ndata:\n  train_batch_size: 8\ntrainer:\n  nnodes: 1\n"}


def duplicate_keys(n: int) -> dict[str, str]:
    return {"ds_config.json": "{" + ", ".join('"train_batch_size": 8' for _ in range(n)) + "}\n"}


def repeated_flags(n: int) -> dict[str, str]:
    return {"train.sh": "deepspeed --num_gpus 8 train.py" + " --zero_stage 3" * n + "\n"}


def brackets(n: int) -> dict[str, str]:
    return {"train.sh": "X=" + "[" * n + "\ndeepspeed train.py --zero_stage $X\n"}


def doubling(levels: int) -> dict[str, str]:
    body = "".join('A="$A$A"\n' for _ in range(levels))
    return {"train.sh": "A=x\n" + body + "deepspeed train.py --zero_stage $A\n"}


def huge_numbers(n: int) -> dict[str, str]:
    members = ", ".join(f'"k{i}": {"9" * 4300 if i % 3 == 0 else "1." + "1" * 400 if i % 3 == 1 else "Infinity"}'
                        for i in range(n))
    return {"ds_config.json": "{" + members + ', "train_batch_size": NaN}\n'}


def dockerfile_pins(lines: int) -> dict[str, str]:
    pkgs = [("vllm", "0.7.2"), ("torch", "2.6.0"), ("transformers", "4.46.0"), ("deepspeed", "0.15.4"),
            ("openrlhf", "0.5.0"), ("flash-attn", "2.7.0"), ("ray", "2.40.0"), ("torch", "2.5.1")]
    words = [" ".join(f"{p}=={v}" for p, v in pkgs[i % 8:] + pkgs[:i % 8][:2]) for i in range(lines)]
    return {"Dockerfile": "FROM python:3.10\nRUN pip install \\\n    " + " \\\n    ".join(words) + "\n"}


def node_count(exponent: int) -> dict[str, str]:
    return {"run_verl.sh": f"python3 -m verl.trainer.main_ppo trainer.nnodes={2 ** exponent} "
                           "trainer.n_gpus_per_node=8 actor_rollout_ref.model.path=Qwen/Qwen2.5-7B\n"}


def many_files(n: int) -> dict[str, str]:
    out = {}
    for i in range(n):
        repo = f"r{i // 50:04d}"
        out[f"{repo}/.git/HEAD"] = "ref: refs/heads/main\n"
        out[f"{repo}/ds_{i}.json"] = '{"train_batch_size": 8, "zero_optimization": {"stage": 2}}\n'
    return out


def ds_config_sweep(n: int) -> dict[str, str]:
    """One repository, one ds_config per run folder (a hyper-parameter sweep): each file's rules once asked a
    question of every file of the repository (quadratic: 4,000 files took 34 s)."""
    config = ('{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, '
              '"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}\n')
    return {".git/HEAD": "ref: refs/heads/main\n", **{f"run_{i:05d}/ds_config.json": config for i in range(n)}}


def gitignore_wildcards(n: int) -> dict[str, str]:
    """`*a` n times then `*b` in .gitignore, and a file named with 60 a's: as one backtracking regex, 10 of them
    took hours on that name."""
    return {".git/HEAD": "ref: refs/heads/main\n", ".gitignore": "*a" * n + "*b\n", "a" * 60 + ".json": "{}\n",
            "ds_config.json": '{"train_batch_size": 8}\n'}


# (name, generator, sizes, what the size is)
CASES = [
    ("yaml-merge-keys", merge_keys, [10, 15, 20, 25], "levels (expansion doubles per level)"),
    ("yaml-alias-mappings", alias_mappings, [10, 15, 20, 25], "levels"),
    ("json-duplicate-keys", duplicate_keys, [1250, 2500, 5000, 10000], "keys on one line"),
    ("shell-repeated-flags", repeated_flags, [500, 1000, 2000, 4000], "flags on one line"),
    ("shell-brackets", brackets, [8192, 16384, 32768, 65536], "'[' in a row"),
    ("shell-doubling", doubling, [8, 12, 16, 24], "doublings of a variable"),
    ("json-huge-numbers", huge_numbers, [5, 10, 20, 40], "4,300-digit / 400-digit / Infinity values"),
    ("dockerfile-pins", dockerfile_pins, [6, 12, 25, 50], "continued lines of pins"),
    ("node-count", node_count, [8, 16, 24, 32], "log2 of trainer.nnodes"),
    ("many-files", many_files, [1000, 2000, 4000, 8000], "small files"),
    ("ds-config-sweep", ds_config_sweep, [1000, 2000, 4000, 8000], "ds_configs in one repository"),
    ("gitignore-wildcards", gitignore_wildcards, [10, 20, 40, 80], "'*a' in one .gitignore line"),
]

QUICK = {name: sizes[:3] for name, _, sizes, _ in CASES}


def write(root: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)


def slope(points: list[tuple[float, float]]) -> float:
    """Exponent of time in the measure of size, between the first and the last point."""
    (x0, y0), (x1, y1) = points[0], points[-1]
    return math.log(max(y1, 1e-3) / max(y0, 1e-3)) / math.log(x1 / x0)


def measure(name, gen, sizes, cmd, work) -> list[dict]:
    rows = []
    for size in sizes:
        folder = os.path.join(work, f"{name}-{size}")
        write(folder, gen(size))
        nbytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)
        seconds, mb, rc = run(cmd + ["--no-cache", "-q", "."], folder)
        rows.append({"case": name, "size": size, "bytes": nbytes, "seconds": round(seconds, 3),
                     "peak_mb": round(mb, 1), "exit": rc})
        shutil.rmtree(folder, ignore_errors=True)
    return rows


ONE_MB = {
    "ds_config.json": lambda: "{" + ", ".join(f'"key_{i}": {{"enabled": true, "value": {i}}}' for i in range(26000))
                              + "}\n",
    "ppo_trainer.yaml": lambda: "actor_rollout_ref:\n" + "".join(f"  key_{i}: {{a: {i}, b: [1, 2, 3]}}\n"
                                                                 for i in range(36000)),
    "train.sh": lambda: "".join(f"deepspeed --num_gpus 8 train.py --zero_stage 3 --micro_batch {i} --lr 1e-5\n"
                                for i in range(14000)),
    "requirements.txt": lambda: "".join(f"package-{i}==1.{i % 50}.0\n" for i in range(50000)),
    "Dockerfile": lambda: "FROM python:3.10\n" + "".join(f"RUN pip install package-{i}==1.{i % 50}.0\n"
                                                         for i in range(30000)),
    "orz_config.py": lambda: "from dataclasses import dataclass\n\n@dataclass\nclass PPOExpConfig:\n"
                             + "".join(f"    field_{i}: int = {i}\n" for i in range(40000)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three sizes per case")
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cmd = console_script()
    work = tempfile.mkdtemp(prefix="rlhf-lint-adversarial-")
    rows: list[dict] = []
    report = {"cases": [], "one_mb": []}
    try:
        for name, gen, sizes, unit in CASES:
            if args.only and name not in args.only.split(","):
                continue
            got = measure(name, gen, QUICK[name] if args.quick else sizes, cmd, work)
            rows += got
            b = slope([(r["size"], r["seconds"]) for r in got])
            report["cases"].append({"case": name, "unit": unit, "rows": got, "slope": round(b, 2)})
            if not args.json:
                print(f"{name} ({unit}):")
                for r in got:
                    print(f"  {r['size']:>7} {r['bytes'] / 1024:>9.1f} KiB {r['seconds']:>8.2f} s "
                          f"{r['peak_mb']:>7.1f} MB exit {r['exit']}")
                print(f"  slope: time ~ size^{b:.2f}")
        for filename, make in ONE_MB.items():
            if args.only and "one-mb" not in args.only.split(","):
                break
            folder = os.path.join(work, "one-mb")
            write(folder, {filename: make()})
            size = os.path.getsize(os.path.join(folder, filename))
            seconds, mb, rc = run(cmd + ["--no-cache", "-q", filename], folder)
            ok = seconds < BUDGET_SECONDS and mb < BUDGET_MB
            report["one_mb"].append({"file": filename, "bytes": size, "seconds": round(seconds, 2),
                                     "peak_mb": round(mb, 1), "exit": rc, "within_budget": ok})
            if not args.json:
                print(f"1 MB {filename:<18} {size / 2**20:5.2f} MiB {seconds:6.2f} s {mb:7.1f} MB exit {rc} "
                      f"{'ok' if ok else 'OVER BUDGET'}")
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
