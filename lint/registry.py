"""Rule metadata and the registry.

A rule is a pure function decorated with ``@rule``: it receives a context (the parsed file, the project around it,
the configuration) and yields Findings. Its documentation is its docstring, in fixed sections (What it does, Why it
matters, Example, Fix, References) so that ``rlhf-lint rule CODE`` and docs/rules.md come from one text.
"""
from __future__ import annotations

import importlib
import inspect
import os
import re
from .records import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Callable, Iterable, Iterator

from .model import Finding, Severity

FAMILIES = {
    "F": "Files, parsing and suppressions",
    "D": "DeepSpeed config",
    "S": "Shell launch scripts",
    "O": "OpenRLHF",
    "V": "verl",
    "Z": "Open-Reasoner-Zero",
    "A": "accelerate / TRL",
    "M": "Memory",
    "P": "Pins and versions",
}

RULES_PACKAGE = "rlhf_lint.rules"

CODE_RE = re.compile(r"^[A-Z][0-9]{3}$")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@record(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    func: Callable[..., Iterable[Finding]]
    kinds: frozenset[str]  # file kinds it reads; empty with scope "project"
    scope: str = "file"  # "file": once per matching Source; "project": once per run
    fixable: bool = False
    default_enabled: bool = True
    doc: str = ""

    @property
    def family(self) -> str:
        return self.code[0]

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0].strip() if self.doc.strip() else self.name

    def sections(self) -> dict[str, str]:
        """The docstring split into its '## Heading' sections ('' holds the summary)."""
        out: dict[str, list[str]] = {"": []}
        current = ""
        for line in self.doc.splitlines():
            stripped = line.strip()
            if stripped.startswith("## "):
                current = stripped[3:].strip()
                out[current] = []
            else:
                out[current].append(line)
        return {k: "\n".join(v).strip("\n") for k, v in out.items()}

    def references(self) -> list[str]:
        return re.findall(r"https?://[^\s)>\]]+", self.sections().get("References", ""))

    def run(self, ctx) -> Iterator[Finding]:
        yield from self.func(ctx)


@record
class Registry:
    rules: dict[str, Rule] = field(default_factory=dict)
    by_name: dict[str, Rule] = field(default_factory=dict)
    loaded: bool = False

    def add(self, r: Rule) -> None:
        if not CODE_RE.match(r.code):
            raise ValueError(f"bad rule code {r.code!r}")
        if not NAME_RE.match(r.name):
            raise ValueError(f"bad rule name {r.name!r}")
        if r.family not in FAMILIES:
            raise ValueError(f"unknown rule family in {r.code}")
        if r.code in self.rules or r.name in self.by_name:
            raise ValueError(f"duplicate rule {r.code} {r.name}")
        self.rules[r.code] = r
        self.by_name[r.name] = r

    def load(self) -> "Registry":
        if not self.loaded:
            self.loaded = True
            # every module of the rules package registers its rules at import time; rule modules keep heavy
            # imports (libcst, jsonschema) inside the functions that need them, so this stays cheap
            package = importlib.import_module(RULES_PACKAGE)
            for name in _module_names(package.__path__):
                if not name.startswith("_"):
                    importlib.import_module(f"{RULES_PACKAGE}.{name}")
        return self

    def all(self) -> list[Rule]:
        self.load()
        return sorted(self.rules.values(), key=lambda r: r.code)

    def get(self, code_or_name: str) -> Rule | None:
        self.load()
        key = code_or_name.strip()
        return self.rules.get(key.upper()) or self.by_name.get(key.lower())

    def match(self, selector: str) -> list[Rule]:
        """Rules matched by a code, a code prefix (``D``, ``D1``), a name, or ``ALL``."""
        self.load()
        sel = selector.strip()
        if not sel:
            return []
        if sel.upper() == "ALL":
            return self.all()
        if sel.lower() in self.by_name:
            return [self.by_name[sel.lower()]]
        up = sel.upper()
        if re.match(r"^[A-Z][0-9]{0,3}$", up):
            return [r for r in self.all() if r.code.startswith(up)]
        return []


def _module_names(path) -> list[str]:
    """The modules of a package, sorted: ``pkgutil.iter_modules`` for the usual case of folders of ``.py`` files
    without importing pkgutil, which pulls in typing (~2 ms of every start)."""
    names: set[str] = set()
    try:
        for folder in path:
            for entry in os.listdir(folder):
                if entry.endswith(".py") and entry[:-3].isidentifier() and entry != "__init__.py":
                    names.add(entry[:-3])
                elif entry.isidentifier() and os.path.isfile(os.path.join(folder, entry, "__init__.py")):
                    names.add(entry)
    except OSError:  # not a folder (a zip or frozen install): ask pkgutil
        import pkgutil

        return sorted({info.name for info in pkgutil.iter_modules(path)})
    return sorted(names)


REGISTRY = Registry()


def rule(
    code: str,
    name: str,
    severity: Severity,
    *,
    kinds: Iterable[str] = (),
    scope: str = "file",
    fixable: bool = False,
    default_enabled: bool = True,
) -> Callable[[Callable[..., Iterable[Finding]]], Callable[..., Iterable[Finding]]]:
    def decorate(func: Callable[..., Iterable[Finding]]) -> Callable[..., Iterable[Finding]]:
        REGISTRY.add(
            Rule(
                code=code,
                name=name,
                severity=severity,
                func=func,
                kinds=frozenset(kinds),
                scope=scope,
                fixable=fixable,
                default_enabled=default_enabled,
                doc=inspect.cleandoc(func.__doc__ or ""),
            )
        )
        return func

    return decorate
