"""What each framework release requires (schemas/pins/requires.tsv), from its Requires-Dist: the wheel METADATA the
index serves beside each wheel (PEP 658, read through ``pip install --dry-run --report``, nothing installed), or
the sdist's PKG-INFO when the release has no wheel (DeepSpeed). vLLM's exact torch pins are rows of the same table.

A refresh adds one ``==<version>`` row per requirement of every release newer than those the table covers; rows
already there (hand-read from setup.py and requirements.txt of older tags) keep their sources. Only requirements on
the packages the pin rules reason about are kept (``RELEVANT``).
Run:  python -m rlhf_lint.schemas.build --only requires
"""
from __future__ import annotations

import os

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pins")
TABLE = os.path.join(HERE, "requires.tsv")
FRAMEWORKS = ("openrlhf", "verl", "trl", "deepspeed", "vllm")
# the packages whose versions the pin rules compare (P rules, schemas/pins/known_bad.tsv)
RELEVANT = {"transformers", "ray", "deepspeed", "flash-attn", "vllm", "torch", "torchvision", "xformers",
            "flashinfer-python", "vllm-flash-attn", "tensordict", "accelerate", "peft", "trl", "openrlhf"}
# extras for the framework's own development, never what a training repository installs
DEV_EXTRAS = {"dev", "docs", "readthedocs", "test", "tests", "all", "autotuning", "autotuning-ml"}
# with no covered release yet, start here rather than reading every release ever published
START = {"deepspeed": "0.19.6"}


def _canonical(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def read_rows(path: str = TABLE) -> tuple[list[str], list[dict]]:
    """(the file's lines, its rows as dicts)."""
    from rlhf_lint.schemas import tsv_rows

    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    return lines, tsv_rows(lines)


def covered(rows: list[dict], package: str, version: str) -> bool:
    """Is a release read already? A row with no upper bound (``>=0.19``: a requirement that has held since) says
    nothing about releases after it was read."""
    from packaging.specifiers import SpecifierSet

    for r in rows:
        if _canonical(r["package"]) != package:
            continue
        spec = SpecifierSet(r["versions"])
        if any(s.operator in ("==", "===", "<", "<=", "~=") for s in spec) and spec.contains(version, prereleases=True):
            return True
    return False


def rows_of(package: str, version: str, requires_dist: list[str], source: str) -> list[list[str]]:
    """Table rows (package, versions, extra, requires, source) of one release's Requires-Dist."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in requires_dist:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if _canonical(req.name) not in RELEVANT or _canonical(req.name) == package or not req.specifier:
            continue  # a bare name pins nothing
        extra = ""
        marker = str(req.marker) if req.marker else ""
        if "extra" in marker:
            import re

            m = re.search(r'extra\s*==\s*"([^"]+)"', marker)
            if not m or " or " in marker:
                continue  # an extra in a compound marker: not a row this table can hold
            extra = m.group(1)
            if extra in DEV_EXTRAS:
                continue
            marker = re.sub(r'\s*(and\s+)?extra\s*==\s*"[^"]+"(\s+and)?\s*', "", marker).strip()
        req.marker = None
        requirement = str(req) + (f"; {marker}" if marker else "")
        out.append([package, f"=={version}", extra, requirement, source])
    return out


def refresh(cache, versions: list[str] | None = None, log=print) -> dict:
    from packaging.version import InvalidVersion, Version

    from rlhf_lint.schemas.build.upstream import index_versions

    lines, rows = read_rows()
    summary = {"table": "pins/requires.tsv", "added": 0, "closed": 0, "releases": [], "tables": []}
    new_lines = []
    for package in FRAMEWORKS:
        if versions is not None:
            wanted = versions
        else:
            listed = cache.cached_versions(package) if cache.offline else index_versions(package)
            known = [Version(v) for v in listed if covered(rows, package, v)]
            floor = max(known) if known else Version(START.get(package, "0"))
            wanted = []
            for v in listed:
                try:
                    parsed = Version(v)
                except InvalidVersion:
                    continue
                if (parsed > floor or (not known and parsed >= floor)) and not parsed.is_prerelease:
                    wanted.append(v)
        added = []
        for v in sorted(wanted, key=Version):
            if covered(rows, package, v):
                continue
            meta = cache.requires(package, v)
            source = f"https://pypi.org/project/{package}/{v}/ (Requires-Dist of {os.path.basename(meta['url'])})"
            for row in rows_of(package, v, meta["requires_dist"], source):
                new_lines.append("\t".join(row))
                summary["added"] += 1
            added.append(v)
        summary["tables"].append({"table": f"pins/requires.tsv [{package}]", "releases": added,
                                  "added": sum(1 for line in new_lines if line.startswith(package + "\t")),
                                  "closed": 0, "newest": (sorted(added, key=Version) or ["(unchanged)"])[-1]})
        log(f"  {package}: {len(added)} releases added")
    if new_lines:
        marker = "# rows below: Requires-Dist read by `python -m rlhf_lint.schemas.build --only requires`"
        if marker not in lines:
            lines.append(marker)
        lines.extend(new_lines)
        with open(TABLE, "w", encoding="utf-8", newline="\n") as fh:
            fh.write("\n".join(lines) + "\n")
    return summary
