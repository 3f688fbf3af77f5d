"""``rlhf-lint knowledge``: per framework, the releases the knowledge tables cover, the newest one, and where each
table came from (the builder that refreshes it: ``python -m rlhf_lint.schemas.build --all``)."""
from __future__ import annotations

import json

import click

REFRESH = "python -m rlhf_lint.schemas.build --all"


def _sorted_versions(versions) -> list[str]:
    from packaging.version import InvalidVersion, Version

    def key(v):
        try:
            return (0, Version(v.lstrip("v")))
        except InvalidVersion:
            return (1, Version("0"))

    return sorted(set(versions), key=key)


def tables() -> list[dict]:
    """One entry per table: framework, table file, releases covered (oldest first), newest, source, builder."""
    from rlhf_lint.schemas import load

    out = []
    o = load("openrlhf/openrlhf.json")
    tags = [t for t in o["tags"] if t != "HEAD"]
    out.append({"framework": "openrlhf", "table": "schemas/openrlhf/ (CLI flags)", "releases": tags,
                "newest": tags[-1], "builder": "openrlhf",
                "source": "argparse of openrlhf/cli/*.py at each git tag; "
                          + ", ".join(f"{t} from {s}" for t, s in o.get("tag_sources", {}).items())})
    ds = load("ds_config_keys.json")["deepspeed"]
    releases = ds.get("releases", [ds["version"]])
    out.append({"framework": "deepspeed", "table": "schemas/ds_config_keys.json (ds_config keys)",
                "releases": releases, "newest": ds["version"], "builder": "deepspeed",
                "source": "; ".join(f"{v}: {s}" for v, s in ds.get("release_sources", {ds['version']: ds['source']}).items())})
    v = load("verl/ppo_trainer_defaults.json")
    for kind, entries in (("FSDP trainer config", v["releases"]), ("Megatron trainer config", v["megatron"])):
        names = _sorted_versions(entries)
        out.append({"framework": "verl", "table": f"schemas/verl/ppo_trainer_defaults.json ({kind})",
                    "releases": names, "newest": names[-1], "builder": "verl",
                    "source": entries[names[-1]]["source"] + (f" ({entries[names[-1]]['artifact']})"
                                                              if entries[names[-1]].get("artifact") else "")})
    a = load("accelerate/deepspeed_keys.json")
    out.append({"framework": "accelerate", "table": "schemas/accelerate/deepspeed_keys.json (DeepSpeed plugin keys)",
                "releases": a.get("releases", []), "newest": a.get("release", "?"), "builder": "accelerate",
                "source": a["source"]})
    z = load("orz/base_defaults.json")
    out.append({"framework": "orz", "table": "schemas/orz/base_defaults.json (BasePPOExpConfig)",
                "releases": z.get("releases", [z["release"]]), "newest": z["release"], "builder": "orz",
                "source": z["source"]})
    sw = load("swift/releases.json")["releases"]
    names = _sorted_versions(sw)
    # a release read from its wheel names it in its rows' sources; one read from a git tag, the tag
    read_from = next(iter(sw[names[-1]]["commands"]["sft"]["fields"].values()))["source"]
    out.append({"framework": "ms-swift", "table": "schemas/swift/releases.json (argument defaults, presets)",
                "releases": names, "newest": names[-1], "builder": "swift",
                "source": read_from.split(" swift/")[0] if "pypi.org" in read_from else
                f"https://github.com/modelscope/ms-swift/tree/v{names[-1]}"})
    t = load("hf/trl_config_defaults.json")["releases"]
    names = _sorted_versions(t)
    out.append({"framework": "trl", "table": "schemas/hf/trl_config_defaults.json (config defaults)",
                "releases": names, "newest": names[-1], "builder": "trl",
                "source": f"https://pypi.org/project/trl/{names[-1]}/ (wheel: trl/trainer/*config.py)"})
    c = load("hf/causal_lm_loss.json")
    out.append({"framework": "transformers", "table": "schemas/hf/causal_lm_loss.json (the loss's dtype per model)",
                "releases": c["releases"], "newest": c["releases"][-1], "builder": "causal_lm_loss",
                "source": f"https://pypi.org/project/transformers/{c['releases'][-1]}/ (wheel: models/*/modeling_*.py)"})
    from rlhf_lint.frameworks.versions import requires_table

    for package, rows in sorted(requires_table().items()):
        # releases read: exact rows, and the upper end of a bounded range ("<=1.0.0": read up to 1.0.0)
        exact = [s.version for r in rows for s in r.versions if s.operator in ("==", "<=")]
        names = _sorted_versions(exact)
        from_index = sum(1 for r in rows if "pypi.org" in r.source)
        out.append({"framework": package, "table": "schemas/pins/requires.tsv (what each release requires)",
                    "releases": names, "newest": names[-1] if names else "?", "builder": "requires",
                    "source": f"{len(rows)} rows: {from_index} from Requires-Dist of the release on PyPI, "
                              f"{len(rows) - from_index} from setup.py / requirements.txt of its git tag"})
    return out


@click.command("knowledge")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def knowledge(output_format):
    """The releases each knowledge table covers, the newest, and where the table came from."""
    rows = tables()
    if output_format == "json":
        click.echo(json.dumps({"refresh": REFRESH, "tables": rows}, indent=2))
        return
    for row in rows:
        releases = row["releases"]
        shown = ", ".join(releases) if len(releases) <= 6 else f"{releases[0]} .. {', '.join(releases[-3:])}"
        click.echo(f"{row['framework']}: newest {row['newest']} ({len(releases)} releases: {shown})")
        click.echo(f"  table:  {row['table']}")
        click.echo(f"  source: {row['source']}")
        click.echo(f"  refresh: python -m rlhf_lint.schemas.build --only {row['builder']}")
    click.echo(f"refresh every table: {REFRESH}")
