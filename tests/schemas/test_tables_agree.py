"""The knowledge tables agree with each other: renamed-to flags exist at the release they are renamed to, every
pin row parses with packaging, every row names its source, and each versioned table lists the releases it covers."""
from __future__ import annotations

import csv
import os

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from rlhf_lint import schemas
from rlhf_lint.frameworks.openrlhf import knowledge


def test_renamed_to_flags_exist_at_the_release_after_the_rename():
    k = knowledge()
    checked = 0
    for row in k.all_renames():
        if not row["new"] or row["applicability"] == "display":
            continue
        after = k.index(row["last_old"]) + 1
        clis = k.cli_names if row["cli"] == ["*"] else row["cli"]
        for new_flag in row["new"][0].split("|"):  # "--actor.adam.betas|--critic.adam.betas": one per role
            holders = [cli for cli in clis if new_flag in k.flags_at(cli, after)]
            assert holders, f"{row['old']} -> {new_flag}: no CLI has {new_flag} at {k.tag(after)}"
        assert row["source"].startswith("https://"), row
        checked += 1
    assert checked > 300


def test_openrlhf_tables_cover_a_release_list_and_rows_stay_inside_it():
    k = knowledge()
    assert k.tags[-1] == "HEAD" and k.tags[-2] == "v0.11.2"
    for cli in k.cli_names:
        for spec in k.specs_of(cli):
            assert 0 <= spec.first <= spec.last < len(k.tags), (cli, spec.flag)


def _tsv(name):
    with open(schemas.path(name), encoding="utf-8") as fh:
        lines = [line for line in fh if line.strip() and not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def test_every_requires_row_parses_and_has_a_source():
    rows = _tsv("pins/requires.tsv")
    assert len(rows) > 900
    for row in rows:
        SpecifierSet(row["versions"])
        Requirement(row["requires"])
        assert row["source"].startswith("https://"), row


def test_known_bad_and_release_rows_parse():
    for row in _tsv("pins/known_bad.tsv"):
        SpecifierSet(row["affected"])
        if row["with"]:
            Requirement(row["with"])
        assert row["source"].startswith("http"), row
    for row in _tsv("pins/releases.tsv"):
        for v in row["versions"].split():
            Version(v)


def test_deepspeed_keys_name_sources_and_releases():
    data = schemas.load("ds_config_keys.json")
    releases = data["deepspeed"]["releases"]
    assert releases == sorted(releases, key=Version) and data["deepspeed"]["version"] == releases[-1]
    for path, entry in data["keys"].items():
        assert entry["source"].startswith(("https://", "kwargs")), path
        for field in ("since", "removed_in"):
            if field in entry:
                assert entry[field] in releases, (path, field)
    for path, entry in data["removed"].items():
        assert entry["since"] in releases and entry["source"].startswith("https://"), path
    assert data["removed"]["amp"]["since"] == "0.19.8"
    assert data["removed"]["zero_optimization.mics_shard_size"]["since"] == "0.19.7"


def test_verl_releases_have_sources_and_a_version_list():
    data = schemas.load("verl/ppo_trainer_defaults.json")
    assert data["versions"] == [v for v in data["releases"] if v != "main"]
    assert data["versions"][-1] == "0.9.1"
    for name, entry in [*data["releases"].items(), *data["megatron"].items()]:
        assert entry["source"].startswith("https://") and entry["keys"], name


def test_accelerate_and_orz_list_their_release():
    table = schemas.load("accelerate/deepspeed_keys.json")
    assert table["releases"][0] == "0.30.1" and table["releases"][-1] == table["release"] == "1.15.0"
    assert schemas.load("orz/base_defaults.json")["releases"] == ["3fdd9a0"]


def test_repository_needs_no_knowledge_files_outside_it():
    build = os.path.dirname(schemas.path("build/__init__.py"))
    for name in os.listdir(build):
        if name.endswith(".py"):
            with open(os.path.join(build, name), encoding="utf-8") as fh:
                assert "/work/shared" not in fh.read(), name
