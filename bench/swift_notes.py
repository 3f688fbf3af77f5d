"""ms-swift's example scripts as a held-out accuracy check: many carry their maintainers' measured memory as a
comment ("# 2 * 27.5GiB", "# 17GiB"); this compares each with `rlhf-lint estimate` on the same script.

    python bench/swift_notes.py PATH/TO/ms-swift [--gpu A100-80GB] [--json OUT] [--check]

Nothing of ms-swift is committed here: point the script at a checkout (git clone https://github.com/modelscope/
ms-swift). A script counts when exactly one comment line holds a figure in GiB (a file with two, "full: ... lora:
...", is ambiguous and skipped); "N * X GiB" is X per card. The card is rarely named: the 80 GB A100 is assumed
(--gpu), the ms-swift team's usual test card. Their tool is swift's own log, torch.cuda.max_memory_reserved, so a
note is a whole per-card peak; a note may also be older than the flags around it. Never used to fit anything.

--check exits 1 when a note lies below the low end of its band: on a card between that note and the low end, a
"does not fit" error would have been false.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys

GIB = 2**30
NOTE_LINE = re.compile(r"^#.*GiB.*$", re.M)
FIGURE = re.compile(r"(?:(\d+)\s*\*\s*)?(\d+(?:\.\d+)?)\s*GiB")


def notes(root: str) -> list[tuple[str, float, str]]:
    """(script, GiB per card, the note) for every example script with exactly one memory note."""
    out = []
    for folder, _, files in os.walk(os.path.join(root, "examples")):
        for name in sorted(files):
            if not name.endswith(".sh"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = NOTE_LINE.findall(f.read())
            figure = FIGURE.search(lines[0]) if len(lines) == 1 else None
            if figure is not None:
                out.append((path, float(figure.group(2)), lines[0].strip()))
    return sorted(out)


CONFIG_NAME = re.compile(r"[\w./-]+\.(?:json|ya?ml)\b")


def named_configs(path: str, root: str) -> list[str]:
    """The config files the script names that exist (its launcher and ds configs), as a run over the repository
    would check them beside it: the examples name them from the repository root or from the script's folder."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        names = CONFIG_NAME.findall(fh.read())
    found = []
    for name in dict.fromkeys(names):
        for base in (root, os.path.dirname(path)):
            candidate = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(candidate) and candidate.startswith(os.path.abspath(root)) and candidate not in found:
                found.append(candidate)
                break
    return found


def estimate(path: str, gpu: str, root: str | None = None) -> dict:
    """The highest GPU group of the script's estimate (with the configs it names), or why there is none."""
    configs = named_configs(path, root) if root else []
    run = subprocess.run([sys.executable, "-m", "rlhf_lint", "estimate", "--format", "json", "--gpu", gpu, path,
                          *configs], capture_output=True, text=True, timeout=300)
    try:
        data = json.loads(run.stdout)
    except ValueError:
        return {"declined": (run.stderr.strip().splitlines() or ["no output"])[-1][:160]}
    jobs = data if isinstance(data, list) else [data]
    groups = [g for job in jobs for g in job.get("gpu_groups", [])]
    if not groups:
        said = [a for job in jobs for a in job.get("assumptions", [])]
        why = [a for a in said if "not modelled" in a] or [a for a in said if "not in the catalog" in a]
        return {"declined": re.sub(r"\s*\(https?://[^)]*\)", "", why[0])[:160] if why else "no estimate"}
    top = max(groups, key=lambda g: g["peak"])
    return {"peak": top["peak"] / GIB, "band": [b / GIB for b in top["band"]], "fits": top["fits"],
            "card": top["gpu_memory"] / GIB}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="an ms-swift checkout")
    parser.add_argument("--gpu", default="A100-80GB")
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for path, measured, note in notes(args.root):
        rows.append({"script": os.path.relpath(path, args.root), "note": note, "measured": measured,
                     **estimate(path, args.gpu, args.root)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    compared = [r for r in rows if "peak" in r]
    for r in sorted(compared, key=lambda r: r["peak"] / r["measured"]):
        where = ("BELOW the band" if r["measured"] < r["band"][0] else
                 "above the band" if r["measured"] > r["band"][1] else "")
        print(f"{(r['peak'] - r['measured']) / r['measured']:+8.1%}  note {r['measured']:6.1f}  ours {r['peak']:7.1f} "
              f"(band {r['band'][0]:.1f}-{r['band'][1]:.1f})  {where:15} {r['script']}")
    declined = collections.Counter(r["declined"] for r in rows if "declined" in r)
    for why, n in declined.most_common():
        print(f"declined x{n}: {why}")
    errors = [abs(r["peak"] - r["measured"]) / r["measured"] for r in compared]
    below = [r for r in compared if r["measured"] < r["band"][0]]
    above = [r for r in compared if r["measured"] > r["band"][1]]
    not_fit = [r for r in compared if r["fits"] is not True and r["measured"] <= r["card"]]
    summary = f"{len(rows)} notes, {len(compared)} estimated, {len(rows) - len(compared)} declined"
    if errors:
        tight = all(r["fits"] is False and r["band"][0] <= r["card"] for r in not_fit)
        summary += (f"; median |error| {statistics.median(errors):.1%}, {sum(e <= 0.25 for e in errors)} within 25%; "
                    f"{len(below)} below their band's low end, {len(above)} above its high end; {len(not_fit)} not "
                    f"called fitting on a run that fit (all tight, none an error: {tight})")
    print(summary)
    return 1 if args.check and below else 0


if __name__ == "__main__":
    sys.exit(main())
