"""Rule metadata and the registry.

A rule is a pure function decorated with ``@rule``: it receives a context (the parsed file, the project around it,
the configuration) and yields Findings. Its documentation is its docstring, in fixed sections (What it does, Why it
matters, Example, Fix, References) so that ``rlhf-lint rule CODE`` and docs/rules.md come from one text.
"""
from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Callable, Iterable, Iterator

from rlhf_lint.model import Finding, Severity
from rlhf_lint.startup.records import field, record
from rlhf_lint.startup.lazyre import lazy_compile
from rlhf_lint.startup import import_module

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

# every rule's page is its section of docs/rules.md on the project's repository page (SARIF helpUri, the text
# report, `rlhf-lint rule CODE`); a fork that publishes elsewhere changes this one constant
RULES_PAGE_URL = "https://github.com/rlhf-lint/rlhf-lint/blob/main/docs/rules.md"

# what a rule may declare it needs (@rule(when=...)), per scope; Project.has answers them
FACTS = {
    "file": ("parse error", "over bounds", "unparsed constructs"),
    "job": ("gpu", "host memory"),
    "project": ("pins", "unreadable files", "pin files", "versions"),
}

CODE_RE = lazy_compile(r"^[A-Z][0-9]{3}$")
NAME_RE = lazy_compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@record(eq=False)
class Rule:
    """A rule's metadata, and its function once its module is imported. Rules known from the index
    (rlhf_lint.engine.rule_index) start without ``func``: a run imports only the rule modules it needs."""

    code: str
    name: str
    severity: Severity
    kinds: frozenset[str]  # file kinds it reads; empty with scope "job" or "project"
    scope: str = "file"  # "file": once per matching Source; "job": once per launch; "project": once per run
    frameworks: frozenset[str] = frozenset()  # scope "job": only launches of these frameworks (empty: every launch)
    fixable: bool = False
    default_enabled: bool = True
    module: str = ""  # where the rule is defined
    when: str = ""  # a fact of the project the rule needs (Project.has): without it the rule is not even imported
    func: Callable[..., Iterable[Finding]] | None = None
    docstring: str = field(default="", repr=False)

    def metadata(self) -> tuple:
        """What the rule index stores (one row of rlhf_lint.engine.rule_index, in this order)."""
        return (self.code, self.name, int(self.severity), tuple(sorted(self.kinds)), self.scope,
                tuple(sorted(self.frameworks)), self.fixable, self.default_enabled, self.module, self.when)

    def _defined(self) -> "Rule":
        if self.func is None and self.module:
            import_module(self.module)  # its @rule decorators fill in func and docstring
            if self.func is None:
                raise RuntimeError(f"rule {self.code} is in the rule index but {self.module} does not define it: "
                                   "regenerate the index with `python -m rlhf_lint.engine.registry --write-index`")
        return self

    @property
    def family(self) -> str:
        return self.code[0]

    @property
    def anchor(self) -> str:
        """The anchor GitHub gives the rule's heading `### CODE name` in docs/rules.md."""
        return f"{self.code.lower()}-{self.name}"

    @property
    def url(self) -> str:
        return f"{RULES_PAGE_URL}#{self.anchor}"

    @property
    def doc(self) -> str:
        import inspect  # only for documentation output; inspect costs ~6 ms to import

        return inspect.cleandoc(self._defined().docstring or "")

    @property
    def summary(self) -> str:
        doc = self.doc.strip()
        return " ".join(doc.split("\n\n")[0].split()) if doc else self.name  # the first paragraph, on one line

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

    def markdown(self, heading: str = "#") -> str:
        """The rule's page: `rlhf-lint rule CODE`, its section of docs/rules.md and the SARIF help text."""
        sections = self.sections()
        fix = "yes" if self.fixable else "no"
        lines = [f"{heading} {self.code} {self.name}", "",
                 f"{sections.get('', self.summary).strip()}", "",
                 f"Default severity: {self.severity.label}. Fixable: {fix}."
                 + ("" if self.default_enabled else " Not enabled by default (select it explicitly).")]
        for title, body in sections.items():
            if title and body.strip():
                lines += ["", f"{heading}# {title}", "", body.strip()]
        return "\n".join(lines) + "\n"

    def references(self) -> list[str]:
        return re.findall(r"https?://[^\s)>\]]+", self.sections().get("References", ""))

    def run(self, ctx) -> Iterator[Finding]:
        yield from self._defined().func(ctx)


@record
class Registry:
    rules: dict[str, Rule] = field(default_factory=dict)
    by_name: dict[str, Rule] = field(default_factory=dict)
    indexed: bool = False  # every rule of the index is known (none of their modules need be imported)
    loaded: bool = False  # every rule module is imported

    def add(self, r: Rule) -> None:
        if not CODE_RE.match(r.code):
            raise ValueError(f"bad rule code {r.code!r}")
        if not NAME_RE.match(r.name):
            raise ValueError(f"bad rule name {r.name!r}")
        if r.family not in FAMILIES:
            raise ValueError(f"unknown rule family in {r.code}")
        if r.code in self.rules or r.name in self.by_name:
            raise ValueError(f"duplicate rule {r.code} {r.name}")
        if r.when and r.when not in FACTS.get(r.scope, ()):
            raise ValueError(f"rule {r.code}: a {r.scope}-scope rule cannot need {r.when!r} "
                             f"(known: {', '.join(FACTS.get(r.scope, ())) or 'none'})")
        self.rules[r.code] = r
        self.by_name[r.name] = r

    def define(self, r: Rule) -> None:
        """Called by @rule when a rule module is imported: fill in the indexed entry, or add a new rule."""
        known = self.rules.get(r.code)
        if known is None or known.func is not None:
            self.add(r)
            return
        if known.metadata() != r.metadata():
            raise RuntimeError(f"rule {r.code} differs from the rule index ({known.metadata()} there, "
                               f"{r.metadata()} in {r.module}): regenerate it with "
                               "`python -m rlhf_lint.engine.registry --write-index`")
        known.func, known.docstring = r.func, r.docstring

    def index(self) -> "Registry":
        """Know every rule from the generated index, without importing any rule module: importing all ~100 rule
        modules instead costs ~27 ms (paired runs on the 2-core VM, 2026-11-23), so a run imports only the modules
        of the rules that apply to its files."""
        if not self.indexed:
            self.indexed = True
            from rlhf_lint.engine.rule_index import RULES

            severities = {int(s): s for s in Severity}
            for code, name, severity, kinds, scope, frameworks, fixable, default_enabled, module, when in RULES:
                if code not in self.rules:  # rows were checked by add() when the index was written
                    r = Rule(code, name, severities[severity], frozenset(kinds), scope, frozenset(frameworks),
                             fixable, default_enabled, module, when, None, "")
                    self.rules[code] = self.by_name[name] = r
        return self

    def load(self) -> "Registry":
        if not self.loaded:
            self.index()
            self.loaded = True
            # every rule module (rules/<family>/<code>_<name>.py) registers its rule at import time; rule modules
            # keep heavy imports (libcst, jsonschema) inside the functions that need them, so this stays cheap
            package = import_module(RULES_PACKAGE)
            for family in _module_names(package.__path__):
                if not family.startswith("_"):
                    folder = import_module(f"{RULES_PACKAGE}.{family}")
                    for name in _module_names(folder.__path__):
                        if not name.startswith("_"):
                            import_module(f"{RULES_PACKAGE}.{family}.{name}")
        return self

    def all(self) -> list[Rule]:
        """Every rule, with every rule module imported (documentation, listings, the index itself)."""
        self.load()
        return sorted(self.rules.values(), key=lambda r: r.code)

    def known(self) -> list[Rule]:
        """Every rule, from the index: selecting rules this way imports no rule module."""
        self.index()
        return sorted(self.rules.values(), key=lambda r: r.code)

    def get(self, code_or_name: str) -> Rule | None:
        self.index()
        key = code_or_name.strip()
        found = self.rules.get(key.upper()) or self.by_name.get(key.lower())
        if found is None and not self.loaded:  # a rule missing from a stale index is still found
            self.load()
            found = self.rules.get(key.upper()) or self.by_name.get(key.lower())
        return found

    def match(self, selector: str) -> list[Rule]:
        """Rules matched by a code, a code prefix (``D``, ``D1``), a name, or ``ALL``."""
        self.index()
        sel = selector.strip()
        if not sel:
            return []
        if sel.upper() == "ALL":
            return self.known()
        if sel.lower() in self.by_name:
            return [self.by_name[sel.lower()]]
        up = sel.upper()
        if re.match(r"^[A-Z][0-9]{0,3}$", up):
            return [r for r in self.known() if r.code.startswith(up)]
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
    frameworks: Iterable[str] = (),
    fixable: bool = False,
    default_enabled: bool = True,
    when: str = "",
) -> Callable[[Callable[..., Iterable[Finding]]], Callable[..., Iterable[Finding]]]:
    def decorate(func: Callable[..., Iterable[Finding]]) -> Callable[..., Iterable[Finding]]:
        REGISTRY.define(
            Rule(
                code=code,
                name=name,
                severity=severity,
                kinds=frozenset(kinds),
                scope=scope,
                frameworks=frozenset(frameworks),
                fixable=fixable,
                default_enabled=default_enabled,
                module=func.__module__,
                when=when,
                func=func,
                docstring=func.__doc__ or "",
            )
        )
        return func

    return decorate


def index_source() -> str:
    """The text of rlhf_lint/engine/rule_index.py, from the rules as their modules define them."""
    REGISTRY.load()
    lines = ['"""Every rule\'s metadata, so that a run selects rules and imports only the rule modules it needs.',
             "",
             "Generated by `python -m rlhf_lint.engine.registry --write-index` from the @rule decorators;",
             "tests/engine/test_rule_index.py fails when it is stale.",
             '"""',
             "# code, name, severity, kinds, scope, frameworks, fixable, default_enabled, module, when",
             "RULES = ("]
    for r in sorted(REGISTRY.rules.values(), key=lambda r: r.code):
        if r.module.startswith(RULES_PACKAGE + "."):
            lines.append(f"    {r.metadata()!r},")
    lines.append(")")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    from rlhf_lint.engine import registry  # the module the decorators register with (this file runs as __main__)

    registry.REGISTRY.indexed = True  # define every rule from its module, not from the index being regenerated
    text = registry.index_source()
    if sys.argv[1:] == ["--write-index"]:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rule_index.py"), "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
