"""Reading version pins, with exact spans, from every place a training repository writes them.

requirements*.txt / constraints*.txt (with -r/-c includes), pyproject.toml dependency arrays, setup.cfg and setup.py
install requirements, conda environment.yml pip sections, and ``pip install`` commands in Dockerfiles and launch
scripts. Nothing is executed: setup.py is read through CPython's ast, TOML and YAML by scanning their text.

A Pin keeps the span of the requirement as written and, for an exact pin (``==X``), the span of the version token,
which is what a fix rewrites. Pins that are resolved together form an install set (``Pin.group``): one requirements
file with its includes, one pyproject extra, one ``pip install`` command with the files its ``-r``/``-c`` name. The
commands of one Dockerfile stage install one after another into one environment (``Pin.env``).
"""
from __future__ import annotations

import re

from rlhf_lint.startup.records import field, record, replace
from rlhf_lint.model import ParseError, Span
from rlhf_lint.readers.source import Source
from rlhf_lint.startup.lazyre import lazy_compile

# Options of pip (and ``uv pip``) that take a value: the value is not a requirement.
VALUE_OPTIONS = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url",
    "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--src", "--upgrade-strategy", "--no-binary",
    "--only-binary", "--platform", "--python-version", "--implementation", "--abi", "--trusted-host",
    "--cache-dir", "--log", "--progress-bar", "-C", "--config-settings", "--global-option", "--install-option",
    "--index-strategy", "--python", "--extra", "--group", "--report", "--hash", "--use-feature", "--retries",
    "--timeout", "--proxy", "--cert", "--client-cert", "--exists-action", "--keyring-provider", "-p",
})
CONDA_NAMES = {"pytorch": "torch"}  # conda package name -> PyPI distribution name


@record(frozen=True)
class Pin:
    name: str  # canonical distribution name (``flash-attn``)
    text: str  # the requirement as written
    path: str
    span: Span  # the requirement as written
    specifier: str  # PEP 440 specifier set as text ("" = any version)
    version: str | None = None  # the exact version for ``==X`` / ``===X`` / a wheel URL / conda ``=X.Y.Z``
    version_span: Span | None = None  # where that version is written (what a fix rewrites); None for URLs
    extras: tuple[str, ...] = ()
    marker: str | None = None
    group: str = ""  # install-set id
    constraint: bool = False  # from a constraints file (-c): restricts, installs nothing
    url: str | None = None
    source_build: bool = False  # installed with --no-build-isolation / --no-binary: compiling is intended
    env: str = ""  # the environment later pip commands install over, in order (a Dockerfile stage); "" for none
    override: bool = False  # uv override-dependencies: replaces every requirement on this package

    @property
    def exact(self) -> bool:
        return self.version is not None

    def display(self) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{extras}{self.specifier}" if not self.url else f"{self.name}{extras} @ {self.url}"


@record(frozen=True)
class Include:
    option: str  # "-r" or "-c"
    target: str
    span: Span
    group: str = ""  # the install set the included pins join ("" = the including file's own)
    env: str = ""  # that set's environment (Pin.env)


@record
class PinDocument:
    pins: list[Pin] = field(default_factory=list)
    includes: list[Include] = field(default_factory=list)


# -- one requirement string ---------------------------------------------------------------------------------------
def canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


def _exact_version(specifier) -> str | None:
    for spec in specifier:
        if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
            return spec.version
    return None


def _wheel_name_version(url: str) -> tuple[str, str] | None:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    filename = url.split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1]
    if not filename.endswith(".whl"):
        return None
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    return str(name), str(version)


def requirement_pin(text: str, start: int, path: str, group: str, constraint: bool = False) -> Pin | None:
    """A Pin from one requirement string written at ``start``; None for what names no distribution.
    Raises ValueError when the text is not a valid requirement."""
    from packaging.requirements import InvalidRequirement, Requirement

    stripped = text.strip()
    if not stripped:
        return None
    start += len(text) - len(text.lstrip())
    text = stripped
    if "${" in text or text.startswith("$"):
        return None  # an environment variable: the value cannot be known here
    named = re.match(r"^[A-Za-z0-9][\w.-]*\s*(?:\[[^\]]*\])?\s*@", text)
    if not named and (re.match(r"^(?:[a-z][a-z0-9+.-]*://|\.{0,2}/|file:)", text, re.IGNORECASE)
                      or text.endswith((".whl", ".tar.gz", ".zip"))):
        return _bare_url_pin(text, start, path, group, constraint)
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise ValueError(str(exc).splitlines()[0]) from None
    name = canonical(req.name)
    span = Span(start, start + len(text))
    marker = str(req.marker) if req.marker else None
    extras = tuple(sorted(req.extras))
    if req.url:
        wheel = _wheel_name_version(req.url)
        version = wheel[1] if wheel and canonical(wheel[0]) == name else None
        return Pin(name, text, path, span, f"=={version}" if version else "", version, None, extras, marker, group,
                   constraint, req.url)
    version = _exact_version(req.specifier)
    version_span = None
    if version is not None:
        head = text.split(";", 1)[0]
        m = re.search(r"===?\s*(" + re.escape(version) + r")(?![\w.+])", head)
        if m:
            version_span = Span(start + m.start(1), start + m.end(1))
    return Pin(name, text, path, span, str(req.specifier), version, version_span, extras, marker, group, constraint)


def _bare_url_pin(text: str, start: int, path: str, group: str, constraint: bool) -> Pin | None:
    url = text.split()[0]
    egg = re.search(r"[#&]egg=([A-Za-z0-9_.\-]+)", url)
    wheel = _wheel_name_version(url)
    if wheel:
        name, version = canonical(wheel[0]), wheel[1]
        return Pin(name, text, path, Span(start, start + len(url)), f"=={version}", version, None, (), None, group,
                   constraint, url)
    if egg:
        return Pin(canonical(egg.group(1)), text, path, Span(start, start + len(url)), "", None, None, (), None,
                   group, constraint, url)
    return None


# -- requirements files ---------------------------------------------------------------------------------------------
_PER_REQUIREMENT_OPTION = lazy_compile(r"\s--?(?:hash|global-option|install-option|config-settings|C)\b")
_OPTION = lazy_compile(r"^(--?[A-Za-z][\w-]*)(?:=|\s+)?(.*)$")


def _logical_lines(text: str):
    """(start offset, line text) with backslash continuations joined; the backslash and line break become spaces
    so offsets into the joined text equal offsets into the file."""
    pos = 0
    n = len(text)
    buf: list[str] = []
    buf_start = 0
    while pos <= n:
        end = text.find("\n", pos)
        if end == -1:
            end = n
        line = text[pos:end]
        body = line[:-1] if line.endswith("\r") else line
        if not buf:
            buf_start = pos
        if body.endswith("\\") and end < n:
            buf.append(body[:-1] + " " * (len(line) - len(body) + 2))
        else:
            buf.append(line)
            yield buf_start, "".join(buf)
            buf = []
        pos = end + 1


def _strip_comment(line: str) -> str:
    m = re.search(r"(?:^|\s)#", line)
    return line[: m.start()] if m else line


def parse_requirements_source(source: Source) -> PinDocument:
    doc = PinDocument()
    constraint_file = source.name.lower().startswith("constraints")
    for start, line in _logical_lines(source.text):
        body = _strip_comment(line).rstrip("\r").rstrip()
        if not body.strip():
            continue
        lead = len(body) - len(body.lstrip())
        stripped = body.strip()
        if stripped.startswith("-"):
            m = _OPTION.match(stripped)
            option, value = (m.group(1), m.group(2).strip()) if m else (stripped, "")
            if option.startswith("-r") and option not in ("-r",) and not option.startswith("--"):
                option, value = "-r", option[2:] + value  # -rfile.txt
            elif option.startswith("-c") and option != "-c" and not option.startswith("--"):
                option, value = "-c", option[2:] + value
            if option in ("-r", "--requirement", "-c", "--constraint") and value:
                vstart = start + lead + stripped.find(value)
                doc.includes.append(Include("-c" if option in ("-c", "--constraint") else "-r", value,
                                            Span(vstart, vstart + len(value))))
            elif option in ("-e", "--editable") and value:
                vstart = start + lead + stripped.find(value)
                pin = _safe_pin(value, vstart, source.path, source.path, constraint_file)
                if pin is not None:
                    doc.pins.append(pin)
            continue  # index options, --pre, --hash-only lines and the like install nothing by themselves
        cut = _PER_REQUIREMENT_OPTION.search(stripped)
        requirement = stripped[: cut.start()] if cut else stripped
        try:
            pin = requirement_pin(requirement, start + lead, source.path, source.path, constraint_file)
        except ValueError as exc:
            raise ParseError(f"invalid requirement {requirement!r}: {exc}", start + lead,
                             start + lead + len(requirement)) from None
        if pin is not None:
            doc.pins.append(pin)
    return doc


def _safe_pin(text: str, start: int, path: str, group: str, constraint: bool = False) -> Pin | None:
    try:
        return requirement_pin(text, start, path, group, constraint)
    except ValueError:
        return None


# -- pyproject.toml -------------------------------------------------------------------------------------------------
# uv's project-wide resolution settings, each to whether it overrides (replaces every other requirement on the
# package) or constrains (adds to them): https://docs.astral.sh/uv/reference/settings/#override-dependencies
UV_SETTINGS = {"tool.uv.override-dependencies": True, "tool.uv.constraint-dependencies": False}
UV_GROUP = ":tool.uv"  # the group suffix of those pins: they join every install set of the file but its build
_TABLE = lazy_compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_ARRAY_KEY = lazy_compile(r"^\s*(\"[^\"]+\"|'[^']+'|[A-Za-z0-9_.-]+)\s*=\s*\[")


def parse_pyproject_source(source: Source) -> PinDocument:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        tomllib.loads(source.text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+), column (\d+)", str(exc))
        offset = source.offset(int(m.group(1)), int(m.group(2))) if m else 0
        raise ParseError(f"invalid TOML: {str(exc).split(' (at line')[0]}", offset) from None
    doc = PinDocument()
    text = source.text
    table = ""
    for line_start, line in _physical_lines(text):
        t = _TABLE.match(line)
        if t:
            table = t.group(1).strip()
            continue
        k = _ARRAY_KEY.match(line)
        if not k:
            continue
        key = k.group(1).strip("\"'")
        group = None
        if table == "project" and key == "dependencies":
            group = source.path
        elif table == "project.optional-dependencies":
            group = f"{source.path}[{key}]"
        elif table == "dependency-groups":
            group = f"{source.path}:{key}"
        elif table == "build-system" and key == "requires":
            group = f"{source.path}:build"
        uv = f"{table}.{key}" if table else key
        if uv in UV_SETTINGS:
            group = f"{source.path}{UV_GROUP}"
        if group is None:
            continue
        for value, offset in _toml_array_strings(text, line_start + k.end() - 1):
            pin = _safe_pin(value, offset, source.path, group)
            if pin is not None and uv in UV_SETTINGS:
                # neither installs anything by itself: they bind what the project's requirements install
                pin = replace(pin, constraint=True, override=UV_SETTINGS[uv])
            if pin is not None:
                doc.pins.append(pin)
    return doc


def _physical_lines(text: str):
    pos = 0
    for line in text.split("\n"):
        yield pos, line
        pos += len(line) + 1


def _toml_array_strings(text: str, open_bracket: int):
    """The string items of the TOML array whose '[' is at ``open_bracket``, as (value, offset of the value)."""
    i = open_bracket + 1
    depth = 1
    n = len(text)
    while i < n and depth:
        ch = text[i]
        if ch == "#":
            nl = text.find("\n", i)
            i = n if nl == -1 else nl
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch in "\"'":
            if text.startswith(ch * 3, i):
                end = text.find(ch * 3, i + 3)
                i = n if end == -1 else end + 3
                continue
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if (ch == '"' and text[j] == "\\") else 1
            raw = text[i + 1 : j]
            if depth == 1 and "\\" not in raw:
                yield raw, i + 1
            i = j + 1
            continue
        i += 1


# -- setup.cfg ------------------------------------------------------------------------------------------------------
def parse_setup_cfg_source(source: Source) -> PinDocument:
    doc = PinDocument()
    section = ""
    key = None
    for line_start, raw_line in _physical_lines(source.text):
        line = raw_line.rstrip("\r")
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section, key = stripped[1:-1].strip(), None
            continue
        if line[:1].isspace() and key is not None:
            value, offset = stripped, line_start + line.index(stripped)
        else:
            if "=" not in line:
                key = None
                continue
            name, _, value = line.partition("=")
            name = name.strip()
            if section == "options" and name in ("install_requires", "setup_requires"):
                key = source.path if name == "install_requires" else f"{source.path}:setup"
            elif section == "options.extras_require":
                key = f"{source.path}[{name}]"
            else:
                key = None
                continue
            offset = line_start + len(line) - len(value) + (len(value) - len(value.lstrip()))
            value = value.strip()
        value = _strip_comment(value).rstrip()
        for part_offset, part in _split_semicolon_free(value, offset):
            pin = _safe_pin(part, part_offset, source.path, key)
            if pin is not None:
                doc.pins.append(pin)
    return doc


def _split_semicolon_free(value: str, offset: int):
    """setup.cfg puts one requirement per line; a value on the key's own line may list several, comma-free."""
    if value:
        yield offset, value


# -- setup.py (CPython's ast, never executed) ----------------------------------------------------------------------
def setup_py_pins(source: Source) -> tuple[list[Pin], list[Include]]:
    """The pins of ``install_requires`` / ``extras_require`` list literals (or top-level names bound to one) and a
    ``read("requirements.txt")``-style include, from the ast.Module readers/python.py made of setup.py."""
    import ast

    module = source.tree
    if not isinstance(module, ast.Module) or ("install_requires" not in source.text
                                              and "extras_require" not in source.text):
        return [], []
    assigned: dict[str, ast.expr] = {}
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigned[stmt.targets[0].id] = stmt.value
    pins: list[Pin] = []
    includes: list[Include] = []

    def literal(node) -> tuple[int, str, int] | None:
        """(offset of the literal, its text, length of prefix + opening quote) of a plain one-part str literal."""
        if (not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or node.end_lineno != node.lineno
                or node.lineno > source.line_count()):  # a lone CR ends a line for CPython, not for line_starts
            return None
        line = source.line_text(node.lineno)
        raw = line.encode("utf-8", "surrogatepass")
        start = source.offset(node.lineno, len(raw[:node.col_offset].decode("utf-8", "replace")) + 1)
        end = source.offset(node.lineno, len(raw[:node.end_col_offset].decode("utf-8", "replace")) + 1)
        text = source.text[start:end]
        prefix = len(text) - len(text.lstrip("rRuU"))
        quote = 3 if text[prefix:prefix + 3] in ('"""', "'''") else 1
        if text[prefix + quote:len(text) - quote] != node.value:
            return None  # escapes or implicit concatenation: offsets would not line up
        quote_len = prefix + quote
        return start, text, quote_len

    def file_reference(node) -> None:
        """``install_requires=read("requirements.txt")``: the named file's pins are the install requirements."""
        if isinstance(node, ast.Call) and node.args:
            got = literal(node.args[0])
            if got is not None and node.args[0].value.endswith((".txt", ".in")):
                start, text, _ = got
                includes.append(Include("-r", node.args[0].value, Span(start, start + len(text))))

    def strings(node, group: str) -> None:
        if isinstance(node, ast.Name) and node.id in assigned:
            node = assigned[node.id]
        if isinstance(node, (ast.List, ast.Tuple)):
            for element in node.elts:
                got = literal(element)
                if got is not None:
                    pin = _safe_pin(element.value, got[0] + got[2], source.path, group)
                    if pin is not None:
                        pins.append(pin)

    stack: list[ast.AST] = [module]
    while stack:  # every call, in source order (an explicit stack: deep nesting cannot exhaust recursion)
        node = stack.pop()
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg == "install_requires":
                strings(keyword.value, source.path)
                file_reference(keyword.value)
            elif keyword.arg == "extras_require":
                value = keyword.value
                if isinstance(value, ast.Name) and value.id in assigned:
                    value = assigned[value.id]
                if isinstance(value, ast.Dict):
                    for key, item in zip(value.keys, value.values):
                        if isinstance(key, ast.Constant) and isinstance(key.value, str):
                            strings(item, f"{source.path}[{key.value}]")
    return pins, includes


# -- conda environment.yml -----------------------------------------------------------------------------------------
def environment_yml_pins(source: Source) -> list[Pin]:
    import yaml

    from rlhf_lint.readers.yaml import mapping_get

    pins: list[Pin] = []
    for doc in source.tree or []:
        deps = mapping_get(doc, "dependencies")
        if not isinstance(deps, yaml.SequenceNode):
            continue
        for item in deps.value:
            if isinstance(item, yaml.ScalarNode):
                pin = _conda_pin(source, item)
                if pin is not None:
                    pins.append(pin)
            pip = mapping_get(item, "pip")
            if isinstance(pip, yaml.SequenceNode):
                for entry in pip.value:
                    if isinstance(entry, yaml.ScalarNode) and not entry.value.lstrip().startswith("-"):
                        start, _ = _scalar_bounds(source, entry)
                        pin = _safe_pin(entry.value, start, source.path, source.path)
                        if pin is not None:
                            pins.append(pin)
    return pins


def _scalar_bounds(source: Source, node) -> tuple[int, int]:
    start, end = node.start_mark.index, node.end_mark.index
    if source.text[start : start + 1] in ("'", '"'):
        start, end = start + 1, end - 1
    return start, end


def _conda_pin(source: Source, node) -> Pin | None:
    start, end = _scalar_bounds(source, node)
    text = source.text[start:end]
    if text != node.value:
        return None
    m = re.match(r"^(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(.*)$", text)
    if not m:
        return None
    name = canonical(CONDA_NAMES.get(m.group(1).lower(), m.group(1)))
    rest = m.group(2)
    version = vspan = None
    spec = ""
    eq = re.match(r"^(==?)\s*([0-9][\w.+!]*)(?:=\S*)?$", rest)
    if eq and (eq.group(1) == "==" or eq.group(2).count(".") >= 2):
        version = eq.group(2)
        vstart = start + m.start(2) + eq.start(2)
        vspan = Span(vstart, vstart + len(version))
        spec = f"=={version}"
    elif rest:
        return None  # conda match specs other than an exact version: not compared
    return Pin(name, text, source.path, Span(start, end), spec, version, vspan, (), None, source.path)


# -- pip install commands (Dockerfiles, launch scripts) -------------------------------------------------------------
_PIP_INSTALL = lazy_compile(
    r"(?:^|(?<=[\s;&|(`]))(?:python[0-9.]*\s+-m\s+pip|pip[0-9.]*|uv\s+pip)\s+install\b")
_TERMINATORS = ("&&", "||", ";", "|", ")", "`")


def _words(text: str, pos: int):
    """Shell-like words from ``pos`` to the end of the command: (value, start offset of the value, quoted).
    Backslash-newline joins lines; a word with an expansion (``$``) is returned as None."""
    n = len(text)
    while pos < n:
        ch = text[pos]
        if ch == "\\" and text[pos + 1 : pos + 2] in ("\n", "\r"):
            pos += 3 if text[pos + 1 : pos + 3] == "\r\n" else 2
            continue
        if ch in " \t\r":
            pos += 1
            continue
        if ch == "\n" or any(text.startswith(t, pos) for t in _TERMINATORS):
            return
        if ch == "#":
            return
        start = pos
        value: list[str] = []
        unknown = False
        value_start = None
        while pos < n:
            ch = text[pos]
            if ch in " \t\r\n" or any(text.startswith(t, pos) for t in _TERMINATORS if t != ")") or ch == ")":
                break
            if ch == "\\" and text[pos + 1 : pos + 2] in ("\n", "\r"):
                break
            if ch in "\"'":
                end = text.find(ch, pos + 1)
                if end == -1:
                    end = n
                if value_start is None:
                    value_start = pos + 1
                chunk = text[pos + 1 : end]
                unknown |= ch == '"' and "$" in chunk
                value.append(chunk)
                pos = end + 1
                continue
            if ch == "$":
                unknown = True
            if value_start is None:
                value_start = pos
            value.append(ch)
            pos += 1
        yield (None if unknown else "".join(value)), (value_start if value_start is not None else start)


_INCLUDE_OPTIONS = {"-r": "-r", "--requirement": "-r", "-c": "-c", "--constraint": "-c"}


def pip_install_pins(source: Source, env_of=None) -> PinDocument:
    """Pins named on ``pip install`` command lines, each command its own install set with the requirements files its
    ``-r``/``-c`` name (pip resolves one invocation at once). ``env_of(offset)`` names the environment the commands
    install into one after another (default: none)."""
    text = source.text
    doc = PinDocument()
    for m in _PIP_INSTALL.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if re.search(r"(?:^|\s)#", text[line_start : m.start()]):
            continue  # inside a comment
        group = f"{source.path}@{m.start()}"
        env = env_of(m.start()) if env_of else ""
        skip_value = include = None
        words = list(_words(text, m.end()))
        source_build = any(w in ("--no-build-isolation", "--no-binary") or (w or "").startswith("--no-binary=")
                           for w, _ in words)
        for value, start in words:
            if include is not None and value is not None:
                doc.includes.append(Include(include, value, Span(start, start + len(value)), group, env))
            if skip_value or include:
                skip_value = include = None
                continue
            if value is None:
                continue
            if value.startswith("-"):
                option, _, attached = value.partition("=")
                if value[:2] in ("-r", "-c") and len(value) > 2 and not attached:
                    option, attached = value[:2], value[2:]  # -rrequirements.txt
                if option in _INCLUDE_OPTIONS and attached:
                    vstart = start + len(value) - len(attached)
                    doc.includes.append(Include(_INCLUDE_OPTIONS[option], attached,
                                                Span(vstart, vstart + len(attached)), group, env))
                elif option in _INCLUDE_OPTIONS:
                    include = _INCLUDE_OPTIONS[option]
                else:
                    skip_value = "=" not in value and value in VALUE_OPTIONS
                continue
            if value in (".", "..") or value.startswith((".[", "./", "/")) and not value.endswith(".whl"):
                continue
            pin = _safe_pin(value, start, source.path, group)
            if pin is not None:
                doc.pins.append(replace(pin, source_build=source_build, env=env) if source_build or env else pin)
    return doc


def parse_dockerfile_source(source: Source) -> PinDocument:
    stages = [m.start() for m in re.finditer(r"(?im)^[ \t]*FROM\s", source.text)]  # [ \t]: \s* over blank lines is quadratic

    def stage_of(offset: int) -> str:
        index = sum(1 for s in stages if s <= offset)
        return f"{source.path}#stage{index}"

    return pip_install_pins(source, stage_of)


# -- any source -----------------------------------------------------------------------------------------------------
def pin_documents(project) -> dict[str, PinDocument]:
    """``pins_of`` for every source of the project, computed once per project."""
    docs = project.__dict__.get("_pin_documents")
    if docs is None:
        docs = project.__dict__["_pin_documents"] = {path: pins_of(src) for path, src in project.sources.items()}
    return docs


def declares_pins(project) -> bool:
    """Whether any source pins or includes anything: without that, the P rules have nothing to check and the pins
    facts (their tables and packaging.specifiers, ~30 ms of a one-file run) need not be imported."""
    return any(doc.pins or doc.includes for doc in pin_documents(project).values())


def pins_of(source: Source) -> PinDocument:
    """The pins a source declares (an empty document for sources that declare none or do not parse)."""
    tree = source.tree
    if isinstance(tree, PinDocument):
        return tree
    if source.skipped:
        return PinDocument()  # over a reader's bound (F004)
    try:
        if source.kind == "python" and source.name == "setup.py" and tree is not None:
            pins, includes = setup_py_pins(source)
            return PinDocument(pins=pins, includes=includes)
        if source.kind == "yaml" and tree is not None and re.match(r"^(?:environment|conda|env)[\w.-]*\.ya?ml$",
                                                                    source.name, re.IGNORECASE):
            return PinDocument(pins=environment_yml_pins(source))
        if source.kind == "shell":
            return pip_install_pins(source)
    except (RecursionError, ValueError):
        return PinDocument()
    return PinDocument()
