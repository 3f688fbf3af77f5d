"""The edge of rlhf-lint's knowledge: the newest release each table covers, the release a repository targets, and
whether that release lies past the edge.

One rule of precedence for every framework: configuration (``<framework>-version``) > an exact pin in the
repository > nothing (each framework then infers or assumes as before). A finding that rests on "not in the table"
for a release newer than the table is a warning that says so, with no rename or removal fix (issue 13, item 3).
"""
from __future__ import annotations

import functools
import os

from rlhf_lint.startup.records import record
from rlhf_lint.model import Span

REFRESH_COMMAND = "python -m rlhf_lint.schemas.build --all"
LABELS = {"openrlhf": "OpenRLHF", "deepspeed": "DeepSpeed", "verl": "verl", "accelerate": "accelerate",
          "orz": "Open-Reasoner-Zero", "trl": "TRL", "vllm": "vLLM", "transformers": "transformers", "torch": "torch"}
# frameworks whose key or flag tables findings rest on; the P rule about the edge looks at these
TABLE_FRAMEWORKS = ("openrlhf", "deepspeed", "verl", "accelerate", "orz")
# packages whose own requirements (schemas/pins/requires.tsv) the pins rules follow
REQUIRES_PACKAGES = ("openrlhf", "verl", "trl", "deepspeed", "vllm")


def label(framework: str) -> str:
    return LABELS.get(framework, framework)


def table_release(labels, version) -> str | None:
    """The release of a table (``labels``: its version strings) that answers for ``version``: one of the same minor
    series (the newest at or before it, else the series' oldest), since tables hold some patches of each series and
    config keys change between minor releases; else the newest at or before it; None when neither exists."""
    from packaging.version import InvalidVersion, Version

    try:
        wanted = Version(version)
    except (InvalidVersion, TypeError):
        return None
    numbered = []
    for name in labels:
        try:
            numbered.append((Version(name), name))
        except InvalidVersion:
            continue
    series = [(v, n) for v, n in numbered if v.release[:2] == wanted.release[:2]]
    if series:
        at_or_before = [(v, n) for v, n in series if v <= wanted]
        return (max(at_or_before) if at_or_before else min(series))[1]
    before = [(v, n) for v, n in numbered if v <= wanted]
    return max(before)[1] if before else None


def _newest(versions) -> str | None:
    from packaging.version import InvalidVersion, Version

    best = None
    for v in versions:
        try:
            parsed = Version(str(v).lstrip("v"))
        except InvalidVersion:
            continue  # "HEAD", "main", a commit: not a release
        if best is None or parsed > best[0]:
            best = (parsed, str(v).lstrip("v"))
    return best[1] if best else None


def _listed(data: dict) -> str | None:
    """A table's own list of covered releases (``"releases": [...]`` or ``"covers": [...]``), when it has one."""
    for key in ("covers", "releases"):
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, (list, dict)):
            found = _newest(value)
            if found:
                return found
    for key in ("version", "release"):
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str):
            found = _newest([value])
            if found:
                return found
    return None


# -- the newest release each table covers: one reader per framework, so refreshed tables plug in -----------------
@functools.lru_cache(maxsize=1)  # the tables do not change during a run
def _openrlhf() -> str | None:
    from rlhf_lint.schemas import load

    return _newest(load("openrlhf/openrlhf.json")["tags"])


@functools.lru_cache(maxsize=1)
def _deepspeed() -> str | None:
    from rlhf_lint.schemas import load

    data = load("ds_config_keys.json")
    return _listed(data) or _listed(data.get("deepspeed", {}))


@functools.lru_cache(maxsize=1)
def _verl() -> str | None:
    from rlhf_lint.schemas import load

    return _newest(load("verl/ppo_trainer_defaults.json")["releases"])


@functools.lru_cache(maxsize=1)
def _accelerate() -> str | None:
    from rlhf_lint.schemas import load

    return _listed(load("accelerate/deepspeed_keys.json"))  # today the table names a commit only: None


@functools.lru_cache(maxsize=1)
def _orz() -> str | None:
    from rlhf_lint.schemas import load

    return _listed(load("orz/base_defaults.json"))  # a commit ("3fdd9a0"), ORZ publishes no releases: None


_NEWEST = {"openrlhf": _openrlhf, "deepspeed": _deepspeed, "verl": _verl, "accelerate": _accelerate, "orz": _orz}


def newest_known(framework: str) -> str | None:
    """The newest release the framework's table covers, or None when the table names no release."""
    reader = _NEWEST.get(framework)
    return reader() if reader is not None else None


def newest_requirements(package: str) -> str | None:
    """The newest release whose own requirements schemas/pins/requires.tsv holds (an ``==`` row, or the ``<=``
    bound of a range; an open range says nothing about where the facts end)."""
    from rlhf_lint.frameworks.versions import requires_table

    found = [spec.version for row in requires_table().get(package, []) for spec in row.versions
             if spec.operator in ("==", "<=") and "*" not in spec.version]
    return _newest(found)


def is_past(version: str | None, newest: str | None) -> bool:
    if not version or not newest:
        return False
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version.lstrip("v").split("+", 1)[0]) > Version(newest)
    except InvalidVersion:
        return False


# -- the release a repository targets --------------------------------------------------------------------------
@record(frozen=True)
class Target:
    package: str
    version: str
    how: str  # "config" | "pin"
    origin: str  # "set by verl-version" | "pinned in requirements.txt:3" | "implied: openrlhf 0.9.5 requires ..."
    path: str | None = None
    span: Span | None = None

    @property
    def phrase(self) -> str:
        """``verl 0.4.1, pinned in requirements.txt:3``."""
        return f"{label(self.package)} {self.version}, {self.origin}"


def target_version(project, package: str, governs: str | None = None) -> Target | None:
    """The release of ``package`` the repository targets: configuration first, then an exact pin (a direct one
    before one implied by a framework pin); None when neither says. ``governs``: a launch whose own pin counts
    (versions.pinned_version)."""
    config = getattr(project, "config", None)
    given = (getattr(config, "versions", None) or {}).get(package)
    if given:
        return Target(package, str(given).lstrip("v"), "config", f"set by {package}-version",
                      getattr(config, "path", None))
    if project is None or not project.declares_pins():  # the pins reader and facts load only when some file pins
        return None
    from rlhf_lint.frameworks.versions import pinned_version

    try:
        pinned = pinned_version(project, package, governs)
    except Exception:  # a pin file the pin reader cannot use must not break the checks that ask
        return None
    if pinned is None:
        return None
    version, setting = pinned
    origin = setting.origin or "pinned"
    source = project.sources.get(setting.path) if setting.path else None
    if origin.startswith("pinned in") and source is not None and setting.span is not None:
        origin = f"pinned in {os.path.basename(setting.path)}:{source.position(setting.span.start).line}"
    return Target(package, version, "pin", origin, setting.path, setting.span)


def target_versions(project, packages) -> dict[str, str]:
    """Every configured version, plus the release each of ``packages`` is pinned to (target_version)."""
    config = getattr(project, "config", None)
    out = {k: str(v).lstrip("v") for k, v in ((getattr(config, "versions", None) or {}).items())}
    for package in packages:
        if package not in out:
            target = target_version(project, package)
            if target is not None:
                out[package] = target.version
    return out


def edge_note(framework: str, version: str, origin: str = "") -> str:
    """``OpenRLHF 0.11.2 (pinned in requirements.txt:3) is newer than the newest release rlhf-lint knows, 0.11.0``."""
    where = f" ({origin})" if origin else ""
    return (f"{label(framework)} {version.lstrip('v')}{where} is newer than the newest release rlhf-lint knows, "
            f"{newest_known(framework)}")


def past_edge(project, framework: str) -> Target | None:
    """The targeted release when it is newer than the framework's table, else None."""
    target = target_version(project, framework)
    if target is not None and is_past(target.version, newest_known(framework)):
        return target
    return None


@record(frozen=True)
class Stale:
    target: Target
    what: str  # "flag table", "key table", "requirement facts"
    newest: str


def stale_knowledge(project) -> list[Stale]:
    """Every targeted release newer than the table that judges it, once per package (tables before requirements)."""
    out: list[Stale] = []
    seen: set[str] = set()
    for package in TABLE_FRAMEWORKS:
        target = target_version(project, package)
        newest = newest_known(package)
        if target is not None and is_past(target.version, newest):
            what = "flag table" if package == "openrlhf" else "key table"
            out.append(Stale(target, what, newest))
            seen.add(package)
    for package in REQUIRES_PACKAGES:
        if package in seen:
            continue
        target = target_version(project, package)
        if target is None or target.how != "pin":
            continue
        newest = newest_requirements(package)
        if is_past(target.version, newest):
            out.append(Stale(target, "requirement facts", newest))
    return out


# -- pins whose version cannot be known here (issue 14, item 5) ---------------------------------------------------
@record(frozen=True)
class Unresolvable:
    path: str
    span: Span
    text: str  # the requirement as written
    name: str  # the distribution, "" when the line does not say
    why: str


def _why(target: str) -> str | None:
    """Why the release a requirement installs cannot be read from it; None when it can (or is no URL/path)."""
    import re

    url = target.split(";", 1)[0].strip()
    if "@" in url and not re.match(r"^[a-z][a-z0-9+.-]*://", url, re.IGNORECASE) and not url.startswith("git+"):
        url = url.split("@", 1)[1].strip()  # ``name @ url``
    lowered = url.lower()
    if lowered.startswith(("git+", "hg+", "svn+", "bzr+")) or lowered.endswith(".git"):
        ref = re.search(r"\.git@([^#]+)|@([0-9a-f]{7,40})(?:#|$)|@([^/#@]+)(?:#|$)", url.split("://", 1)[-1])
        name = next((g for g in ref.groups() if g), "") if ref else ""
        if re.fullmatch(r"[0-9a-f]{7,40}", name):
            return f"a git URL at commit {name}: which release that commit is cannot be known without fetching it"
        if name:
            return (f"a git URL at {name!r}: a tag or branch name is not a version rlhf-lint can trust (a branch "
                    "moves)")
        return "a git URL without a commit: each install takes the head of the default branch"
    if re.match(r"^(?:file:|\.{1,2}(?:/|$|\[)|/|~)", url):
        if lowered.endswith(".whl"):
            return None  # a wheel's name carries its version
        return "a local path: it installs whatever that checkout holds, whose version is not written here"
    if re.match(r"^[a-z][a-z0-9+.-]*://", url, re.IGNORECASE):
        if lowered.split("#", 1)[0].split("?", 1)[0].endswith(".whl"):
            return None
        return "a URL archive: its version is not in the requirement"
    return None


def unresolvable_pins(project) -> list[Unresolvable]:
    """Requirements installed from a git URL, a local path (``-e .``) or a URL archive: rlhf-lint cannot know the
    release they install, so no version rule reads them (a pin of the same package elsewhere still counts)."""
    from rlhf_lint.readers.kinds import may_declare_pins
    from rlhf_lint.readers.pins import pins_of

    out: list[Unresolvable] = []
    seen: set[tuple[str, int]] = set()
    for source in project.sources.values():
        if not may_declare_pins(source):
            continue
        if source.kind == "requirements" and not source.skipped:  # over its read bound (F004): not read here either
            out.extend(_requirement_lines(source, seen))
        try:
            pins = pins_of(source).pins
        except Exception:  # another module's reader: a file it chokes on is reported by the F rules
            continue
        for pin in pins:
            if pin.url is None or pin.version is not None or (pin.path, pin.span.start) in seen:
                continue
            why = _why(pin.url)
            if why is not None:
                seen.add((pin.path, pin.span.start))
                out.append(Unresolvable(pin.path, pin.span, pin.text, pin.name, why))
    return out


def _requirement_lines(source, seen: set) -> list[Unresolvable]:
    """Lines of a requirements file the pins reader keeps no version for, ``-e .`` and bare git URLs included."""
    import re

    from rlhf_lint.readers.pins import _logical_lines, _strip_comment

    out = []
    for start, line in _logical_lines(source.text):
        body = _strip_comment(line).rstrip("\r").rstrip()
        stripped = body.strip()
        if not stripped:
            continue
        lead = len(body) - len(body.lstrip())
        m = re.match(r"^(?:-e|--editable)(?:\s+|=)(\S.*)$", stripped)
        target = m.group(1).strip() if m else stripped
        if stripped.startswith("-") and not m:
            continue  # index options, includes: they install nothing by themselves
        why = _why(target)
        if why is None:
            continue
        offset = start + lead + (stripped.find(target) if m else 0)
        egg = re.search(r"[#&]egg=([A-Za-z0-9_.\-]+)", target)
        named = re.match(r"^([A-Za-z0-9][\w.-]*)\s*(?:\[[^\]]*\])?\s*@", target)
        name = (named.group(1) if named else egg.group(1) if egg else "").lower()
        seen.add((source.path, offset))
        out.append(Unresolvable(source.path, Span(offset, offset + len(target)), stripped, name, why))
    return out
