"""Version-compatibility knowledge (schemas/pins/*.tsv) and what it says about a project's pins.

Every fact is a row with its source URL. The analysis is pure: it reads Sources already parsed, the project's jobs
and ds_configs (for hazards that apply only under a setting actually used), and the tables.
"""
from __future__ import annotations

import functools
import os
import re
from collections import defaultdict

from rlhf_lint.startup.lazyre import lazy_compile
from rlhf_lint.startup.records import field, record, replace
from rlhf_lint.model import Related, Setting, Span
from rlhf_lint.readers.pins import UV_GROUP, Pin, canonical, pin_documents

# The machine a training job runs on, for evaluating environment markers of requirements.
DEFAULT_MARKER_ENV = {
    "python_version": "3.10", "python_full_version": "3.10.12", "platform_system": "Linux", "sys_platform": "linux",
    "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
    "platform_python_implementation": "CPython", "extra": "",
}
CRITICAL_PACKAGES = ("torch", "vllm", "deepspeed", "transformers")
TRAINING_PACKAGES = frozenset({"deepspeed", "openrlhf", "verl", "trl", "accelerate", "peft", "vllm", "ray",
                               "orz", "flash-attn"})
KIND_PRECEDENCE = {"requirements": 0, "pyproject_toml": 1, "setup_cfg": 2, "python": 2, "yaml": 3, "dockerfile": 4,
                   "shell": 5}
WHEN_LABELS = {
    "zero3": "ZeRO stage 3 is used",
    "zero12": "ZeRO stage 1/2 is used",
    "zero2": "ZeRO stage 2 is used",
    "offload": "ZeRO offload is used",
    "hf_trainer": "TRL (a Hugging Face Trainer-based stack) is used",
    "deepspeed": "DeepSpeed is used",
    "llamafactory_json": "a `llamafactory-cli` launch reads its config from a JSON file",
}


# -- the tables ---------------------------------------------------------------------------------------------------
def _schema_path(name: str) -> str:
    from rlhf_lint import schemas

    return os.path.join(os.path.dirname(schemas.__file__), "pins", name)


def _read_tsv(name: str) -> list[dict[str, str]]:
    from rlhf_lint.schemas import tsv_rows

    with open(_schema_path(name), encoding="utf-8") as fh:
        return tsv_rows(fh)


@record(frozen=True)
class RequiresRow:
    package: str
    versions: object  # SpecifierSet
    extra: str
    requires: str
    source: str
    versions_text: str = ""  # the specifier as written in the table: the key of _contains' memory


@record(frozen=True)
class Fact:
    id: str
    package: str
    affected: object  # SpecifierSet
    severity: str
    when: str
    with_: str
    symptom: str
    works: str
    source: str

    def hits(self, version: str) -> bool:
        return _contains(self.affected, version)


@record(frozen=True)
class WheelRow:
    flash_attn: object  # SpecifierSet
    torch: tuple[str, ...]
    cuda: str
    source: str


@functools.lru_cache(maxsize=None)
def requires_table() -> dict[str, list[RequiresRow]]:
    from packaging.specifiers import SpecifierSet

    out: dict[str, list[RequiresRow]] = defaultdict(list)
    for row in _read_tsv("requires.tsv"):
        out[canonical(row["package"])].append(
            RequiresRow(canonical(row["package"]), SpecifierSet(row["versions"]), row["extra"], row["requires"],
                        row["source"], row["versions"]))
    return dict(out)


@functools.lru_cache(maxsize=64)
def requirements_on(package: str, dep: str) -> tuple:
    """(row, the SpecifierSet it asks of ``dep``) for each row of requires.tsv in which releases of ``package``
    (extras included: the row says which) require ``dep``."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for row in requires_table().get(canonical(package), []):
        try:
            req = Requirement(row.requires)
        except InvalidRequirement:
            continue
        if canonical(req.name) == canonical(dep):
            out.append((row, req.specifier))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def known_bad_table() -> dict[str, list[Fact]]:
    from packaging.specifiers import SpecifierSet

    out: dict[str, list[Fact]] = defaultdict(list)
    for row in _read_tsv("known_bad.tsv"):
        out[canonical(row["package"])].append(
            Fact(row["id"], canonical(row["package"]), SpecifierSet(row["affected"]), row["severity"], row["when"],
                 row["with"], row["symptom"], row["works"], row["source"]))
    return dict(out)


@functools.lru_cache(maxsize=None)
def wheel_table() -> list[WheelRow]:
    from packaging.specifiers import SpecifierSet

    return [WheelRow(SpecifierSet(r["flash_attn"]), tuple(r["torch"].split()), r["cuda"], r["source"])
            for r in _read_tsv("flash_attn_wheels.tsv")]


@functools.lru_cache(maxsize=1024)  # keyed by the names a pin file gives: bounded
def releases(package: str) -> tuple[str, ...]:
    """Known released versions of a package, oldest first (PyPI history, or the framework tables)."""
    from packaging.version import InvalidVersion, Version

    package = canonical(package)
    found: set[str] = set()
    for row in _read_tsv("releases.tsv"):
        if canonical(row["package"]) == package:
            found.update(row["versions"].split())
    for row in requires_table().get(package, []):
        for spec in row.versions:
            if spec.operator == "==" and "*" not in spec.version:
                found.add(spec.version)
    out = []
    for v in found:
        try:
            out.append((Version(v), v))
        except InvalidVersion:
            continue
    return tuple(v for _, v in sorted(out))


_CONTAINS: dict = {}  # (specifier text, version) -> bool, for the process: every group asks about the same pins
MAX_CONTAINS = 16_384  # ~150 bytes an entry with its key: full at 200,000 it could hold 30 MB


def _contains(specifier, version: str, text: str | None = None) -> bool:
    """Whether ``specifier`` admits ``version``; with ``text`` (the specifier as a string, which the caller has
    anyway) the answer is remembered for the process: hashing a SpecifierSet costs more than the test itself."""
    if text is not None:
        hit = _CONTAINS.get((text, version))
        if hit is not None:
            return hit
    try:
        answer = specifier.contains(version, prereleases=True)
    except ValueError:  # InvalidVersion, or a mangled pin's 4300-digit part that int() refuses
        answer = False
    if text is not None:
        if len(_CONTAINS) >= MAX_CONTAINS:  # bounded: a hostile pin file cannot grow it without limit
            _CONTAINS.clear()
        _CONTAINS[(text, version)] = answer
    return answer


def marker_applies(marker, extra: str = "") -> bool:
    if marker is None:
        return True
    try:
        from packaging.markers import Marker

        m = marker if not isinstance(marker, str) else Marker(marker)
        return m.evaluate(dict(DEFAULT_MARKER_ENV, extra=extra) if extra else DEFAULT_MARKER_ENV)
    except Exception:  # an unevaluable marker: assume it applies rather than hide a pin
        return True


# -- install sets -------------------------------------------------------------------------------------------------
@record
class InstallSet:
    id: str
    path: str
    kind: str
    pins: list[Pin] = field(default_factory=list)
    env: str = ""  # the environment this set installs into after the sets before it (Pin.env)
    start: int = 0  # where it is written: the order of an environment's sets

    def declares(self, pin: Pin) -> bool:
        """Whether ``pin`` is written in this set itself, not in a file it includes."""
        return self.id in (pin.group, pin.env)


@record(frozen=True)
class Constraint:
    """One requirement on a package inside an install set: written directly (chain empty) or implied by a
    framework pin (``vllm==0.7.2`` implies ``torch==2.5.1``)."""

    name: str
    specifier: object  # SpecifierSet
    text: str
    root: Pin
    chain: tuple[tuple[str, str, str], ...] = ()  # (who requires, package, requirement as shown) per step
    exact: str | None = None
    requirers: tuple[tuple[str, str], ...] = ()  # (package, version) of each step's requirer, the root first

    @property
    def direct(self) -> bool:
        return not self.chain

    @property
    def through(self) -> tuple[str, ...]:
        """Packages the requirement passes through between the written pin and this constraint."""
        return tuple(step[1] for step in self.chain[:-1])

    def why(self) -> str:
        if not self.chain:
            return f"{self.root.display()} is pinned"
        first = self.chain[0]
        return ", ".join([f"{first[0]} requires {first[2]}"] + [f"which requires {step[2]}" for step in self.chain[1:]])


def _cached(project, key: str, build):
    cache = project.__dict__.setdefault("_pins_cache", {})
    if key not in cache:
        cache[key] = build()
    return cache[key]


def resolutions(project) -> list[InstallSet]:
    """The pins each install resolves at once: one requirements file with its includes, one pyproject extra, one
    pip command with the files its -r/-c name."""
    return _cached(project, "sets", lambda: _build_install_sets(project))


def install_sets(project) -> list[InstallSet]:
    """The pins installed side by side: a resolution, or for an environment that several pip commands install into
    one after another (a Dockerfile stage) the pins no later command replaced."""
    return _cached(project, "installed", lambda: _build_environments(project))


_EXTRA_SET = lazy_compile(r"^(.*)\[([^\]]+)\]$")  # the install set of an extra: "pyproject.toml[vllm]"


def _build_install_sets(project) -> list[InstallSet]:
    docs = pin_documents(project)
    sets: dict[str, InstallSet] = {}
    uv: dict[str, list[Pin]] = {}

    def open_set(group: str, path: str, kind: str, env: str, start: int) -> InstallSet:
        s = sets.get(group)
        if s is None:
            s = sets[group] = InstallSet(group, path, kind, env=env, start=start)
        return s

    for path, doc in docs.items():
        kind = project.sources[path].kind
        for pin in doc.pins:
            if pin.group == path + UV_GROUP:
                uv.setdefault(path, []).append(pin)
                continue
            open_set(pin.group, path, kind, pin.env, pin.span.start).pins.append(pin)
        by_group: dict[str, list] = {}
        for include in doc.includes:
            by_group.setdefault(include.group or path, []).append(include)
        for group, includes in by_group.items():
            s = open_set(group, path, kind, includes[0].env, includes[0].span.start)
            s.pins.extend(_included_pins(project, docs, path, includes, {os.path.realpath(path)}))
    for set_id, s in list(sets.items()):
        m = _EXTRA_SET.match(set_id)
        if m and m.group(1) in sets:  # an extra installs on top of the base dependencies
            s.pins[:0] = sets[m.group(1)].pins
    for s in sets.values():
        if s.path in uv and s.id != f"{s.path}:build":  # uv applies them to the whole project's resolution
            s.pins.extend(uv[s.path])
    return [s for s in sets.values() if s.pins]


def _environment_steps(project) -> dict[str, list[InstallSet]]:
    """Each environment's resolutions (its pip commands) in the order they install."""

    def build():
        steps: dict[str, list[InstallSet]] = {}
        for s in resolutions(project):
            if s.env:
                steps.setdefault(s.env, []).append(s)
        return {env: sorted(sets, key=lambda s: s.start) for env, sets in steps.items()}

    return _cached(project, "steps", build)


def _build_environments(project) -> list[InstallSet]:
    out: list[InstallSet] = []
    steps = dict(_environment_steps(project))
    for s in resolutions(project):
        if not s.env:
            out.append(s)
        elif s.env in steps:  # the environment, where its first set is listed
            out.append(_environment(s, steps.pop(s.env)))
    return out


def _environment(first: InstallSet, ordered: list[InstallSet]) -> InstallSet:
    env = InstallSet(first.env, first.path, first.kind, env=first.env, start=first.start)
    for k, step in enumerate(ordered):  # a pin stays unless a later command installs its package again
        env.pins.extend(p for p in step.pins if not any(_replaces(installs(later).get(p.name, ()), p)
                                                        for later in ordered[k + 1:]))
    return env


def _replaces(found, pin: Pin) -> bool:
    """Whether a later command with these constraints on ``pin``'s package replaces what ``pin`` installed: pip
    reinstalls only a version the new requirements exclude ("Requirement already satisfied" otherwise)."""
    if pin.version is not None:
        return any(not _contains(c.specifier, pin.version) for c in found)
    return any(c.direct and c.exact for c in found)  # the version ``pin`` left is unknown: a later exact one decides


def installs(install_set: InstallSet) -> dict[str, list[Constraint]]:
    """constraints() less those of constraints files, which restrict versions but install nothing."""
    cached = install_set.__dict__.get("_installs")
    if cached is None:
        cached = install_set.__dict__["_installs"] = {
            name: [c for c in items if not c.root.constraint] for name, items in constraints(install_set).items()}
    return cached


def _moves(found, version: str) -> bool:
    """Whether a command with these constraints on a package installed at ``version`` restates or replaces it: it
    names the package, or requires another version. Either way the package's requirements are this command's."""
    return any(c.direct or not _contains(c.specifier, version) for c in found)


def _included_pins(project, docs, path: str, includes, seen: set[str]) -> list[Pin]:
    out: list[Pin] = []
    for include in includes:
        target = project.resolve(path, include.target)
        if target is None or target.kind != "requirements":
            continue
        real = os.path.realpath(target.path)
        if real in seen:
            continue
        seen.add(real)
        pins = docs[target.path].pins + _included_pins(project, docs, target.path, docs[target.path].includes, seen)
        out.extend(replace(p, constraint=True) if include.option == "-c" else p for p in pins)
    return out


def constraints(install_set: InstallSet) -> dict[str, list[Constraint]]:
    # several rules ask for the same set's constraints; its pins are final once install_sets() returned it
    cached = install_set.__dict__.get("_constraints")
    if cached is None:
        cached = install_set.__dict__["_constraints"] = _constraints(install_set)
    return cached


def _constraints(install_set: InstallSet) -> dict[str, list[Constraint]]:
    from packaging.specifiers import SpecifierSet

    out: dict[str, list[Constraint]] = defaultdict(list)
    # a uv override replaces every other requirement on its package, its marker deciding whether it applies at all
    # (an `extra == 'x'` marker: in the install set of that extra)
    overridden = frozenset(pin.name for pin in install_set.pins if pin.override)
    extra = _EXTRA_SET.match(install_set.id)
    for pin in install_set.pins:
        if pin.override and not marker_applies(pin.marker, extra.group(2) if extra else ""):
            continue
        if not pin.override and (not marker_applies(pin.marker) or pin.name in overridden):
            continue
        out[pin.name].append(Constraint(pin.name, SpecifierSet(pin.specifier), pin.display(), pin, (), pin.version))
        if pin.version:
            _implied(out, pin.name, pin.version, pin.extras, pin, (), 0, overridden)
    return out


def _implied(out, name: str, version: str, extras, root: Pin, chain: tuple, depth: int,
             overridden: frozenset[str] = frozenset(), requirers: tuple = ()) -> None:
    from packaging.requirements import InvalidRequirement, Requirement

    if depth > 3:
        return
    requirers = requirers + ((name, version),)
    for row in requires_table().get(name, []):
        if not _contains(row.versions, version, row.versions_text) or (row.extra and row.extra not in extras):
            continue
        try:
            req = Requirement(row.requires)
        except InvalidRequirement:
            continue
        if not marker_applies(req.marker):
            continue
        dep = canonical(req.name)
        if dep in overridden:
            continue
        shown = f"{dep}{req.specifier}" if str(req.specifier) else dep
        step = (f"{name} {version}{f' [{row.extra}]' if row.extra else ''}", dep, shown)
        from rlhf_lint.readers.pins import _exact_version

        exact = _exact_version(req.specifier)
        c = Constraint(dep, req.specifier, shown, root, chain + (step,), exact, requirers)
        out[dep].append(c)
        if exact:
            _implied(out, dep, exact, tuple(req.extras), root, chain + (step,), depth + 1, overridden, requirers)


def exact_version(cons: dict[str, list[Constraint]], name: str) -> Constraint | None:
    """The constraint that fixes ``name`` to one version in this set (a direct pin first)."""
    found = [c for c in cons.get(canonical(name), []) if c.exact]
    found.sort(key=lambda c: not c.direct)
    return found[0] if found else None


def compatible(specifiers, package: str = "") -> bool:
    """Whether some version satisfies every specifier set: tried on the versions they mention, just above each,
    and the known releases of the package."""
    for c in _candidates(specifiers, package):
        if all(_contains(s, c) for s in specifiers):
            return True
    return False


def satisfying(specifiers, package: str = "") -> list[int]:
    """For each specifier set, a bit mask of the candidate versions (as compatible() tries them, pooled over all
    the sets) it admits: two sets are compatible when their masks share a bit. Pairs of a package's constraints
    then cost an AND each, not a search of every release (25 continued lines of pins: 45 s before)."""
    pool = sorted(_candidates(specifiers, package))
    masks = []
    memo: dict[str, int] = {}
    for s in specifiers:
        key = str(s)
        if key not in memo:
            memo[key] = sum(1 << i for i, c in enumerate(pool) if _contains(s, c, key))
        masks.append(memo[key])
    return masks


def _candidates(specifiers, package: str) -> set[str]:
    from packaging.version import Version

    candidates = {"0"}
    for spec_set in specifiers:
        for spec in spec_set:
            v = spec.version.replace(".*", "")
            candidates.update({v, v + ".0.0.0.1"})
            try:
                parsed = Version(v)
                release = list(parsed.release)
                release[-1] += 1
                candidates.add(".".join(map(str, release)))
            except ValueError:  # InvalidVersion, or a part too long for int()
                continue
    if package:
        candidates.update(releases(package))
    return candidates


# -- settings a hazard may depend on (project-wide) ---------------------------------------------------------------
def setting_evidence(project, governs: str | None = None) -> dict[str, Related]:
    """Settings in use (ZeRO stage, offload, ...) among the files an install set governs: those in the folder of its
    file and below, so a hazard of one sub-project's pins is not triggered by another's settings. A pin file in a
    folder with nothing else to govern (``docker/Dockerfile``, ``requirements/base.txt``) governs its parent's tree."""
    scope = _governed_dir(project, governs) if governs else None
    return _cached(project, f"evidence:{scope}", lambda: _build_evidence(project, scope))


def _under(path: str | None, scope: str | None) -> bool:
    if scope is None:
        return True
    if path is None:
        return False
    return os.path.abspath(path).startswith(scope + os.sep)


def _governed_dir(project, pin_file: str) -> str:
    holding = _cached(project, "governed-folders", lambda: _folders_holding_governed(project))
    scope = os.path.dirname(os.path.abspath(pin_file))
    root = os.path.abspath(project.config.root)
    while True:
        if scope in holding:
            return scope
        parent = os.path.dirname(scope)
        if parent == scope or not scope.startswith(root) or scope == root:
            return scope
        scope = parent


def _folders_holding_governed(project) -> frozenset[str]:
    """Every folder with a file a pin set governs somewhere under it (the folders ``_under`` would accept), found
    once per project: asking each pin file's every parent about every file cost 40,000 abspath calls on verl."""
    folders: set[str] = set()
    for source in project.sources.values():
        if source.kind in ("ds_config", "shell", "python", "yaml"):
            folder = os.path.dirname(os.path.abspath(source.path))
            while folder not in folders and not folder.endswith(os.sep):  # the root: _under never matches it
                folders.add(folder)
                folder = os.path.dirname(folder)
    return frozenset(folders)


STAGE_CONDITIONS = {1: ("zero12",), 2: ("zero12", "zero2"), 3: ("zero3",)}  # the `when` keys a ZeRO stage meets


def _build_evidence(project, scope: str | None = None) -> dict[str, Related]:
    from rlhf_lint.readers.json import JSONDocument, JValue

    found: dict[str, Related] = {}

    def note(key: str, path: str | None, span: Span | None, message: str) -> None:
        if key not in found and path is not None and _under(path, scope):
            found[key] = Related(path, span, message)

    def stage_note(stage: int, path: str | None, span: Span | None) -> None:
        for key in STAGE_CONDITIONS.get(stage, ()):
            note(key, path, span, f"ZeRO stage {stage} here")

    for source in project.of_kind("ds_config"):
        tree = source.tree
        if not isinstance(tree, JSONDocument):
            continue
        note("deepspeed", source.path, None, "a DeepSpeed config")
        stage = tree.lookup("zero_optimization.stage")
        if isinstance(stage, JValue) and isinstance(stage.value, int) and not isinstance(stage.value, bool):
            stage_note(stage.value, source.path, stage.span)
        for part in ("offload_optimizer", "offload_param"):
            device = tree.lookup(f"zero_optimization.{part}.device")
            if isinstance(device, JValue) and device.value in ("cpu", "nvme"):
                note("offload", source.path, device.span, f"{part} to {device.value} here")
        legacy = tree.lookup("zero_optimization.cpu_offload")
        if isinstance(legacy, JValue) and legacy.value is True:
            note("offload", source.path, legacy.span, "cpu_offload here")
    try:
        jobs = project.jobs
    except Exception:  # a job builder of another family failing must not take the pins rules down
        jobs = []
    for job in jobs:
        if not _under(job.path, scope):
            continue
        stage = job.settings.get("zero.stage")
        if stage is not None and isinstance(stage.value, int):
            note("deepspeed", stage.path, stage.span, "a DeepSpeed launch")
            stage_note(stage.value, stage.path, stage.span)
        for key in ("offload.optimizer", "offload.param"):
            s = job.settings.get(key)
            if s is not None and s.value in ("cpu", "nvme"):
                note("offload", s.path, s.span, f"{key.replace('.', ' ')} offloaded to {s.value} here")
        if job.framework in ("trl", "hf"):
            note("hf_trainer", job.path, job.span, f"a {job.framework} launch")
        if job.framework == "deepspeed":
            note("deepspeed", job.path, job.span, "a DeepSpeed launch")
        config = job.settings.get("hf.config_path")
        if job.framework == "llamafactory" and config is not None and str(config.value).endswith(".json"):
            note("llamafactory_json", config.path, config.span, "a JSON config here")
    return found


# -- findings the P rules report ----------------------------------------------------------------------------------
@record(frozen=True)
class Conflict:
    package: str
    first: Constraint
    second: Constraint
    install_set: InstallSet


def conflicts(project) -> list[Conflict]:
    return _cached(project, "conflicts", lambda: list(_find_conflicts(project)))


def _order(c: Constraint) -> tuple:
    return (c.root.path, c.root.span.start, len(c.chain))


def _find_conflicts(project):
    for s in resolutions(project):
        cons = constraints(s)
        found: list[Conflict] = []
        for name, items in cons.items():
            items = sorted(items, key=_order)
            masks = satisfying([c.specifier for c in items], name)
            for i, a in enumerate(items):
                for j in range(i + 1, len(items)):
                    b = items[j]
                    if a.root is b.root and a.direct and b.direct:
                        continue
                    if not masks[i] & masks[j]:
                        found.append(Conflict(name, a, b, s))
        contested = {(c.package, frozenset((id(c.first.root), id(c.second.root)))) for c in found}
        reported: set[tuple] = set()
        for c in found:
            roots = frozenset((id(c.first.root), id(c.second.root)))
            if len(roots) == 2 and any((m, roots) in contested for m in c.first.through + c.second.through):
                continue  # a consequence of a conflict already reported on a package the chain passes through
            key = (c.package, roots)
            if key in reported and len(roots) == 2:
                continue  # the same two pins disagree about this package along another path: once is enough
            reported.add(key)
            yield c


@record(frozen=True)
class Break:
    """A later pip command of an environment moving a package out of what an earlier-installed package requires:
    pip installs it anyway (it does not re-resolve what is installed) and prints a resolver warning."""

    package: str
    earlier: Constraint  # the requirement of the earlier-installed package
    later: Constraint  # what the later command installs
    install_set: InstallSet  # the later command


def breaks(project) -> list[Break]:
    return _cached(project, "breaks", lambda: list(_find_breaks(project)))


def _find_breaks(project):
    for ordered in _environment_steps(project).values():
        live: list[Constraint] = []  # requirements of what earlier commands installed
        for s in ordered:
            cons = installs(s)
            kept = []
            for e in live:
                if any(_moves(cons.get(name, ()), version) for name, version in e.requirers):
                    continue  # what required it is installed again: its requirements now come from this command
                later = cons.get(e.name)
                if later:
                    masks = satisfying([e.specifier] + [c.specifier for c in later], e.name)
                    broken = next((c for c, mask in zip(later, masks[1:]) if not mask & masks[0]), None)
                    if broken is not None:
                        yield Break(e.name, e, broken, s)
                        continue  # once: it stays broken
                kept.append(e)
            live = kept + [c for items in cons.values() for c in items if not c.direct]


@record(frozen=True)
class BadHit:
    fact: Fact
    pin: Pin  # the pin written in the file (the framework pin when the version is implied)
    version: str
    constraint: Constraint
    reason: Related | None  # the setting or pin that makes a conditional fact apply
    target: str | None  # the nearest release no applicable fact hits (for exact, direct pins)
    install_set: InstallSet


def known_bad_hits(project) -> list[BadHit]:
    return _cached(project, "bad", lambda: list(_find_bad(project)))


def _condition(fact: Fact, cons, evidence: dict[str, Related]) -> tuple[bool, Related | None]:
    from packaging.requirements import InvalidRequirement, Requirement

    reason = None
    if fact.when:
        reason = evidence.get(fact.when)
        if reason is None and fact.when in ("hf_trainer", "deepspeed"):
            names = ("trl",) if fact.when == "hf_trainer" else ("deepspeed",)
            for n in names:
                if cons.get(n):
                    c = cons[n][0]
                    reason = Related(c.root.path, c.root.span, f"{c.text} in the same install")
                    break
        if reason is None:
            return False, None
    if fact.with_:
        try:
            req = Requirement(fact.with_)
        except InvalidRequirement:
            return False, None
        name = canonical(req.name)
        if not str(req.specifier):
            if not cons.get(name):
                return False, None
            c = cons[name][0]
        else:
            c = exact_version(cons, name)
            if c is None or not _contains(req.specifier, c.exact):
                return False, None
        if reason is None:
            reason = Related(c.root.path, c.root.span, f"{c.why()}" if not c.direct else f"{c.text} here")
    return True, reason


def _find_bad(project):
    sets = install_sets(project)
    if not sets:
        return  # no pins: skip loading the table (it imports packaging.specifiers, ~25 ms of start-up)
    table = known_bad_table()
    for s in sets:
        evidence = setting_evidence(project, s.path)
        cons = constraints(s)
        for name, items in cons.items():
            facts = table.get(name)
            if not facts:
                continue
            applicable = []
            for fact in facts:
                ok, reason = _condition(fact, cons, evidence)
                if ok:
                    applicable.append((fact, reason))
            if not applicable:
                continue
            for c in items:
                if not c.exact or c.root.constraint and not c.direct:
                    continue
                version = _public(c.exact)
                hit = [(f, r) for f, r in applicable if f.hits(version)]
                if not hit:
                    continue
                target = None
                if c.direct and c.root.version_span is not None:
                    others = [o for o in items if o is not c]
                    target = nearest_good(name, version, [f for f, _ in applicable], others)
                for fact, reason in hit:
                    yield BadHit(fact, c.root, version, c, reason, target, s)


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def nearest_good(package: str, version: str, facts, others) -> str | None:
    """The closest release above ``version`` (else below) that no fact hits and every other constraint admits."""
    from packaging.version import Version

    current = Version(version)
    good = []
    for v in releases(package):
        parsed = Version(v)
        if parsed.is_prerelease or parsed.is_devrelease:
            continue
        if any(f.hits(v) for f in facts) or not all(_contains(o.specifier, v) for o in others):
            continue
        good.append((parsed, v))
    above = [v for p, v in good if p > current]
    if above:
        return above[0]
    below = [v for p, v in good if p < current]
    return below[-1] if below else None


@record(frozen=True)
class WheelGap:
    pin: Pin
    row: WheelRow
    torch: Constraint
    target: str | None


def wheel_gaps(project) -> list[WheelGap]:
    return _cached(project, "wheels", lambda: list(_find_wheel_gaps(project)))


def _torch_minor(version: str) -> str:
    from packaging.version import Version

    v = Version(version)
    return f"{v.major}.{v.minor}"


def _find_wheel_gaps(project):
    sets = install_sets(project)
    if not sets:
        return  # no pins: skip loading the table (packaging.specifiers)
    from packaging.version import Version

    rows = wheel_table()
    for s in sets:
        cons = constraints(s)
        torch = exact_version(cons, "torch")
        if torch is None:
            continue
        minor = _torch_minor(torch.exact)
        for c in cons.get("flash-attn", []):
            if not c.direct or not c.exact or c.root.constraint or c.root.source_build:
                continue
            built_for = re.search(r"torch(\d+\.\d+)", c.exact.partition("+")[2])
            if built_for:  # a wheel whose local version names the torch it was built for
                if built_for.group(1) != minor:
                    yield WheelGap(c.root, WheelRow(None, (built_for.group(1),), "", c.root.url or ""), torch, None)
                continue
            row = next((r for r in rows if _contains(r.flash_attn, _public(c.exact))), None)
            if row is None or minor in row.torch:
                continue
            target = None
            if c.root.version_span is not None:
                current = Version(_public(c.exact))
                fits = sorted((Version(spec.version), spec.version) for r in rows if minor in r.torch
                              for spec in r.flash_attn if spec.operator == "==")
                above = [v for p, v in fits if p > current]
                below = [v for p, v in fits if p < current]
                target = above[0] if above else (below[-1] if below else None)
            yield WheelGap(c.root, row, torch, target)


def is_training_repository(project, cons) -> bool:
    if setting_evidence(project):
        return True
    return any(name in TRAINING_PACKAGES for name in cons)


# -- for other families -------------------------------------------------------------------------------------------
def pinned_version(project, package: str, governs: str | None = None) -> tuple[str, Setting] | None:
    """The exact version the repository pins ``package`` to, and where: a direct ``==`` pin first (requirements
    files before pyproject/setup, environment.yml, Dockerfiles and scripts), else a version implied by a framework
    pin (``openrlhf==0.9.5`` implies ``deepspeed==0.18.7``). None when nothing pins it exactly.
    ``governs``: a file the pin must govern (setting_evidence's scopes; the deepest governing pin file first), so a
    monorepo's other sub-projects do not decide its version."""
    # asked by several rules for every ds_config: computed once per project (the constraint sets are costly)
    folder = os.path.dirname(os.path.abspath(governs)) if governs else ""
    return _cached(project, f"pinned_version:{canonical(package)}:{folder}",
                   lambda: _pinned_version(project, package, governs))


def _pinned_version(project, package: str, governs: str | None) -> tuple[str, Setting] | None:
    name = canonical(package)
    best: tuple[tuple, Constraint] | None = None
    for s in install_sets(project):
        c = exact_version(constraints(s), name)
        if c is None:
            continue
        depth = 0
        if governs:
            scope = _governed_dir(project, c.root.path)
            if not _under(governs, scope):
                continue
            depth = -len(scope)
        key = (depth, not c.direct, KIND_PRECEDENCE.get(s.kind, 9), c.root.path, c.root.span.start)
        if best is None or key < best[0]:
            best = (key, c)
    if best is None:
        return None
    c = best[1]
    version = _public(c.exact)
    if c.direct:
        span = c.root.version_span or c.root.span
        origin = f"pinned in {os.path.basename(c.root.path)}"
    else:
        span = c.root.span
        origin = "implied: " + c.why()
    return version, Setting(f"pin.{name}", version, c.root.path, span, origin, c.root.text)


def admitted_majors(project, package: str) -> frozenset[int] | None:
    """The major versions of ``package`` the repository's install sets admit: per set that constrains it (directly
    or through a framework pin), the known releases every constraint of the set allows, pooled over the sets. None
    when no set constrains it (anything may be installed) or the table knows no release of it."""
    return _cached(project, f"admitted_majors:{canonical(package)}", lambda: _admitted_majors(project, package))


def _admitted_majors(project, package: str) -> frozenset[int] | None:
    from packaging.version import Version

    name = canonical(package)
    known = releases(name)
    if not known:
        return None
    majors: set[int] = set()
    constrained = False
    for s in install_sets(project):
        found = constraints(s).get(name, [])
        if not found:
            continue
        constrained = True
        majors.update(Version(v).major for v in known
                      if all(_contains(c.specifier, v, str(c.specifier)) for c in found))
    return frozenset(majors) if constrained else None
