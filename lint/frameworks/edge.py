"""The edge of rlhf-lint's knowledge: the newest release each table covers, the release a repository targets, and
whether that release lies past the edge.

One rule of precedence for every framework: configuration (``<framework>-version``) > an exact pin in the
repository > nothing (each framework then infers or assumes as before). A finding that rests on "not in the table"
for a release newer than the table is a warning that says so, with no rename or removal fix (issue 13, item 3).
"""
from __future__ import annotations

import os

from rlhf_lint.startup.records import record
from rlhf_lint.model import Span

REFRESH_COMMAND = "python -m rlhf_lint.schemas.build --all"
LABELS = {"openrlhf": "OpenRLHF", "deepspeed": "DeepSpeed", "verl": "verl", "accelerate": "accelerate",
          "orz": "Open-Reasoner-Zero", "trl": "TRL", "vllm": "vLLM", "transformers": "transformers", "torch": "torch"}
# frameworks whose key or flag tables findings rest on; the P rule about the edge looks at these
TABLE_FRAMEWORKS = ("openrlhf", "deepspeed", "verl", "accelerate", "orz")


def label(framework: str) -> str:
    return LABELS.get(framework, framework)


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
def _openrlhf() -> str | None:
    from rlhf_lint.frameworks.openrlhf import knowledge

    return _newest(knowledge().tags)


def _deepspeed() -> str | None:
    from rlhf_lint.frameworks.deepspeed import ds_keys

    data = ds_keys()
    return _listed(data) or _listed(data.get("deepspeed", {}))


def _verl() -> str | None:
    from rlhf_lint.schemas import load

    return _newest(load("verl/ppo_trainer_defaults.json")["releases"])


def _accelerate() -> str | None:
    from rlhf_lint.schemas import load

    return _listed(load("accelerate/deepspeed_keys.json"))  # today the table names a commit only: None


def _orz() -> str | None:
    from rlhf_lint.schemas import load

    return _listed(load("orz/base_defaults.json"))  # a commit ("3fdd9a0"), ORZ publishes no releases: None


_NEWEST = {"openrlhf": _openrlhf, "deepspeed": _deepspeed, "verl": _verl, "accelerate": _accelerate, "orz": _orz}


def newest_known(framework: str) -> str | None:
    """The newest release the framework's table covers, or None when the table names no release."""
    reader = _NEWEST.get(framework)
    return reader() if reader is not None else None


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


def target_version(project, package: str) -> Target | None:
    """The release of ``package`` the repository targets: configuration first, then an exact pin (a direct one
    before one implied by a framework pin); None when neither says."""
    config = getattr(project, "config", None)
    given = (getattr(config, "versions", None) or {}).get(package)
    if given:
        return Target(package, str(given).lstrip("v"), "config", f"set by {package}-version",
                      getattr(config, "path", None))
    if project is None or not project.declares_pins():  # the pins reader and facts load only when some file pins
        return None
    from rlhf_lint.frameworks.versions import pinned_version

    try:
        pinned = pinned_version(project, package)
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
