"""Snapshot tests for every rule family: one harness for the fixtures under tests/fixtures/<family>/.

A fixture is named after the rule it is about, ``<code>_<case>.<ext>`` (``S001_hydra_bad.sh``, ``D010_bad.json``), or
is a folder ``<code>_<case>/`` when several files must be linted together (a requirements file beside the ds_config it
constrains). Other entries of a family folder (support files, sub-folders without a code) are not snapshot fixtures.

For each fixture the harness copies it to a temporary folder, lints it the way the CLI does (``lint()``, the same
engine, discovery and fixers) and compares

* the rendered diagnostics with ``<fixture>.expected`` (``<code>_<case>.expected``; an empty file: no diagnostics);
* the file after applying every fix, safe and unsafe, until nothing more changes, with ``<code>_<case>.fixed.<ext>``
  (for a folder fixture: ``<code>_<case>.fixed/`` holding each changed file). A fixture that no fix changes must have
  no such snapshot.

A ``_good`` fixture must be clean; a ``_bad`` fixture must report its own rule; every rule must have a bad fixture
(except those listed in KNOWN_GAPS).

Configuration comes from the fixtures only: a script's own ``# rlhf-lint: hardware ...`` comment, or the folder's
``snapshots.toml``: ``[defaults]`` and ``[fixture.<name>]`` tables (the name without extension) holding the keys of a
``[tool.rlhf-lint]`` table (``select``, ``ignore``, ``world-size``, ``deepspeed-version``, ``gpu``, ...; ``select``
defaults to the family's letter) and ``copy-as``, the name the copy gets (``"ds_config_{name}"`` makes discovery read
a plain JSON fixture as a ds_config).

Update every snapshot after an intended change with one command, then review the diff:

    RLHF_LINT_UPDATE=1 python -m pytest -p no:cacheprovider tests/rules

A missing snapshot fails with that command.
"""
from __future__ import annotations

import os
import re
import shutil
import sys

import pytest

from lintutil import ROOT
from rlhf_lint.engine.config import config_from_mapping
from rlhf_lint.engine.registry import REGISTRY
from rlhf_lint.engine.runner import Options, lint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
FAMILIES = {"accelerate": "A", "deepspeed": "D", "files": "F", "memory": "M", "openrlhf": "O", "orz": "Z",
            "pins": "P", "shell": "S", "verl": "V"}
UPDATE = os.environ.get("RLHF_LINT_UPDATE") == "1"
UPDATE_COMMAND = "RLHF_LINT_UPDATE=1 python -m pytest -p no:cacheprovider tests/rules"
FIXTURE_RE = re.compile(r"^(?P<code>[A-Za-z]\d{3})_(?P<case>[^.]+)(?P<ext>\.[^/]*)?$")
HARNESS_KEYS = {"copy-as", "select", "ignore"}
MAX_FIX_ROUNDS = 5

# rules without a bad fixture that triggers them, and why: keep this short
KNOWN_GAPS = {
    "F001": "an unreadable file: needs a file the test cannot read (permissions), not a fixture",
    "F002": "a file over the size limit: too large to keep as a fixture",
    "F010": "an internal error: only a broken rule raises one (tests/engine covers it)",
    "P005": "compares the pins with the installed packages: depends on the test environment",
}


# -- discovery -----------------------------------------------------------------------------------------------------
class Fixture:
    def __init__(self, family: str, entry: str):
        self.family = family
        self.entry = entry
        m = FIXTURE_RE.match(entry)
        self.code = m.group("code").upper()
        self.is_dir = os.path.isdir(os.path.join(FIXTURES, family, entry))
        self.ext = "" if self.is_dir else (m.group("ext") or "")
        self.name = entry[: len(entry) - len(self.ext)] if self.ext else entry
        self.path = os.path.join(FIXTURES, family, entry)
        self.expected = os.path.join(FIXTURES, family, self.name + ".expected")
        self.fixed = os.path.join(FIXTURES, family, self.name + ".fixed" + self.ext)

    @property
    def id(self) -> str:
        return f"{self.family}/{self.entry}"

    @property
    def good(self) -> bool:
        return self.name.endswith("_good") or "_good_" in self.name

    @property
    def bad(self) -> bool:
        return self.name.endswith("_bad") or "_bad_" in self.name


def _is_fixture(family: str, entry: str) -> bool:
    if not FIXTURE_RE.match(entry) or entry.endswith(".expected") or ".fixed" in entry.split("_", 1)[1]:
        return False
    return True


def fixtures() -> list[Fixture]:
    found = []
    for family in sorted(FAMILIES):
        folder = os.path.join(FIXTURES, family)
        for entry in sorted(os.listdir(folder)):
            if _is_fixture(family, entry):
                found.append(Fixture(family, entry))
    return found


ALL = fixtures()


def folder_settings(family: str) -> dict:
    path = os.path.join(FIXTURES, family, "snapshots.toml")
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def settings_for(fx: Fixture) -> dict:
    data = folder_settings(fx.family)
    unknown = set(data.get("fixture", {})) - {f.name for f in ALL if f.family == fx.family}
    assert not unknown, f"tests/fixtures/{fx.family}/snapshots.toml names no fixture: {sorted(unknown)}"
    merged = dict(data.get("defaults", {}))
    merged.update(data.get("fixture", {}).get(fx.name, {}))
    return merged


# -- running -------------------------------------------------------------------------------------------------------
def copy_fixture(fx: Fixture, tmp_path, settings: dict) -> tuple[str, str]:
    """(folder of the copy, what to lint)."""
    work = tmp_path / "work"
    if fx.is_dir:
        shutil.copytree(fx.path, work)
        return str(work), str(work)
    work.mkdir()
    target = work / settings.get("copy-as", "{name}").format(name=fx.entry)
    shutil.copyfile(fx.path, target)
    return str(work), str(target)


def run(fx: Fixture, work: str, target: str, settings: dict, fix: bool = False):
    table = {k: v for k, v in settings.items() if k not in HARNESS_KEYS}
    config = config_from_mapping(table)
    config.root = work
    assert not config.warnings, config.warnings
    options = Options(select=list(settings.get("select", [FAMILIES[fx.family]])), ignore=list(settings.get("ignore", [])),
                      fix=fix, unsafe_fixes=fix)
    return lint([target], config, options)


def render(fx: Fixture, result, work: str) -> str:
    def where(path):
        return os.path.relpath(path, work).replace(os.sep, "/") if fx.is_dir else os.path.basename(path)

    lines = []
    for d in result.diagnostics:
        fix = f" [fix {d.fix.applicability.value}: {d.fix.message}]" if d.fix else ""
        prefix = where(d.path) + " " if fx.is_dir else ""
        lines.append(f"{prefix}{d.code} {d.start.line}:{d.start.column} {d.severity.label}: {d.message}{fix}")
        for r in d.related:
            lines.append(f"    related {where(r.path)}: {r.message}")
    text = "\n".join(lines) + ("\n" if lines else "")
    return text.replace(work + os.sep, "").replace(work, ".")


def read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def snapshot_of_tree(root: str) -> dict[str, str]:
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root).replace(os.sep, "/")] = fh.read().decode("utf-8")
    return out


# -- tests ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fx", ALL, ids=lambda fx: fx.id)
def test_diagnostics(fx, tmp_path):
    settings = settings_for(fx)
    work, target = copy_fixture(fx, tmp_path, settings)
    actual = render(fx, run(fx, work, target, settings), work)
    if UPDATE:
        write(fx.expected, actual)
    assert os.path.exists(fx.expected), f"missing snapshot {fx.expected}: run `{UPDATE_COMMAND}` and review"
    assert actual == read(fx.expected), f"stale snapshot {fx.expected}: run `{UPDATE_COMMAND}` and review the diff"
    if fx.good:
        assert actual == "", "a good fixture must be clean"
    if fx.bad:
        assert any(line.split(" ")[1 if fx.is_dir else 0] == fx.code for line in actual.splitlines()
                   if not line.startswith(" ")), f"{fx.id} does not report {fx.code}"


@pytest.mark.parametrize("fx", ALL, ids=lambda fx: fx.id)
def test_fixes(fx, tmp_path):
    """Every fix applied (safe and unsafe) until nothing changes: the result is the .fixed snapshot, or no fix applies
    and there is no .fixed snapshot."""
    settings = settings_for(fx)
    work, target = copy_fixture(fx, tmp_path, settings)
    before = snapshot_of_tree(work)
    for _ in range(MAX_FIX_ROUNDS):
        result = run(fx, work, target, settings, fix=True)
        if not result.fixed:
            break
    else:
        pytest.fail(f"fixes did not converge in {MAX_FIX_ROUNDS} rounds")
    assert not result.write_errors
    assert all(d.fix is None or d.fix.applicability.value == "display" for d in result.diagnostics), \
        "a fix is still offered after fixing to convergence"
    after = snapshot_of_tree(work)
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    # the copy of a single file may have another name (copy-as): snapshots use the fixture's own name
    if fx.is_dir:
        actual = changed
        expected_files = snapshot_of_tree(fx.fixed) if os.path.isdir(fx.fixed) else {}
    else:
        actual = {"": v for v in changed.values()}
        expected_files = {"": read(fx.fixed)} if os.path.exists(fx.fixed) else {}
    if UPDATE:
        if os.path.isdir(fx.fixed):
            shutil.rmtree(fx.fixed)
        elif os.path.exists(fx.fixed):
            os.remove(fx.fixed)
        for rel, text in actual.items():
            write(os.path.join(fx.fixed, rel) if rel else fx.fixed, text)
        return
    if actual and not expected_files:
        pytest.fail(f"missing snapshot {fx.fixed}: run `{UPDATE_COMMAND}` and review")
    assert actual == expected_files, f"stale snapshot {fx.fixed}: run `{UPDATE_COMMAND}` and review the diff"


def test_every_snapshot_belongs_to_a_fixture():
    """A .expected or .fixed file left behind by a renamed or deleted fixture."""
    names = {(fx.family, fx.name) for fx in ALL}
    stray = []
    for family in FAMILIES:
        for entry in os.listdir(os.path.join(FIXTURES, family)):
            if entry.endswith(".expected"):
                stem = entry[: -len(".expected")]
            elif FIXTURE_RE.match(entry) and ".fixed" in entry:
                stem = entry[: entry.index(".fixed")]
            else:
                continue
            if (family, stem) not in names:
                stray.append(f"{family}/{entry}")
    assert stray == []


def test_every_rule_has_a_bad_fixture():
    """Each rule is reported by some bad fixture (not necessarily the one named after it: a realistic script trips
    several rules of its family)."""
    reported = {}
    for fx in ALL:
        if fx.bad and os.path.exists(fx.expected):
            for code in re.findall(r"(?:^|\s)([A-Z]\d{3}) \d+:\d+ ", read(fx.expected), re.M):
                reported.setdefault(code, fx.id)
    codes = {rule.code for rule in REGISTRY.all()}
    missing = sorted(codes - set(reported) - set(KNOWN_GAPS))
    assert missing == [], f"rules without a bad fixture: add tests/fixtures/<family>/<code>_bad.<ext> ({missing})"
    covered_gaps = sorted(set(KNOWN_GAPS) & set(reported))
    assert covered_gaps == [], f"remove from KNOWN_GAPS, they have a fixture now: {covered_gaps}"
    assert set(KNOWN_GAPS) <= codes


def test_every_fixture_names_a_known_rule():
    codes = {rule.code for rule in REGISTRY.all()}
    assert sorted({fx.id for fx in ALL if fx.code not in codes}) == []
    assert all(fx.code[0] == FAMILIES[fx.family] for fx in ALL), [fx.id for fx in ALL if fx.code[0] != FAMILIES[fx.family]]
