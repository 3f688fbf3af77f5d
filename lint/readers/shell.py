"""Reading launch scripts: bash parsed with tree-sitter, words expanded the way bash would, without running anything.

The reader walks the statements in order with an environment of variables (assignments, ``export``, ``local``,
arrays, the ``read -r -d '' VAR <<EOF`` heredoc idiom, files sourced from inside the repository) and expands each
simple command's arguments into argv Words. A value that cannot be known without running something (``$(cmd)``,
positional parameters, a variable the script never sets) is UNKNOWN. Every Word keeps the span of the text it came
from, and for a value that came out of a variable, the span of the assignment, so that fixes edit there.
Which of those commands launch training (deepspeed, torchrun, accelerate, ray, srun, python) is the frameworks' concern:
rlhf_lint.frameworks.launchers turns them into ``Command``s.
"""
from __future__ import annotations

import os
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any, Callable

from rlhf_lint.startup.records import field, record
from rlhf_lint.readers.commands import Word, WordPart
from rlhf_lint.model import HARDWARE_KEYS, OverBounds, ParseError, Span, UNKNOWN
from rlhf_lint.readers.source import Source, bisect_right, within
from rlhf_lint.startup.lazyre import lazy_compile

MAX_DEPTH = 200  # statement nesting we follow; deeper input is not real launch code
MAX_SOURCE_DEPTH = 4  # nested `source` / `bash -c` levels
# pieces a variable's value may hold: `A="$A$A"` doubles them per line, so twenty such lines would hold a million
# (850 MB); a value past this is unknown, as if set by a command
MAX_VALUE_PIECES = 4096
# pieces all expansions of variables may copy in one script (each `$A` copies A's pieces): far more than a launch
# script needs, and a hostile one stays at tens of megabytes
MAX_EXPANDED_PIECES = 50_000

_IFS = lazy_compile(r"[ \t\n]+")
HARDWARE_RE = lazy_compile(r"#\s*rlhf-lint:\s*hardware\b(?P<body>[^\n]*)")
_WORD = lazy_compile(r"\S+")
_QUOTE_CHARS = ("'", '"')


def _compiled_binding(package: str):
    """``package._binding``, the compiled module, loaded without running ``package/__init__.py``: for tree_sitter
    that file imports typing (~2 ms), for tree_sitter_bash importlib.resources (pathlib, tempfile, zipfile: ~7 ms),
    neither of which a parse needs. None when the install is not laid out that way."""
    import sys

    name = f"{package}._binding"
    if name in sys.modules:
        return sys.modules[name]
    try:
        # the path finder on sys.meta_path is importlib.machinery.PathFinder, without importing importlib
        PathFinder = next(f for f in sys.meta_path if getattr(f, "__name__", "") == "PathFinder")
        spec = PathFinder.find_spec(name, PathFinder.find_spec(package).submodule_search_locations)
        binding = spec.loader.create_module(spec)  # importlib.util.module_from_spec costs ~0.6 ms more to import
        binding.__spec__, binding.__loader__ = spec, spec.loader
        spec.loader.exec_module(binding)
    except Exception:  # an unusual install (zip, frozen): the caller imports the package the ordinary way
        return None
    sys.modules[name] = binding  # a later ``import package`` reuses it: one set of Node/Tree types per process
    return binding


@lru_cache(maxsize=1)
def _parser():
    tree_sitter = _compiled_binding("tree_sitter")
    if tree_sitter is None:
        import tree_sitter
    bash = _compiled_binding("tree_sitter_bash")
    if bash is None:
        import tree_sitter_bash as bash

    return tree_sitter.Parser(tree_sitter.Language(bash.language()))


# tree-sitter's error recovery is superlinear on deeply nested broken text (a 52 KB fuzzed script took 3.7 s, twice
# that size 5.6 s; a real script of the 64 KiB read bound parses in milliseconds): a parse past this budget is
# abandoned and the file reported as not checked
PARSE_SECONDS = 1.5
_CHUNK = 1 << 16


# tree-sitter-bash 0.25's scanner passes code points to ctype's isdigit/isalpha (after `{`, `$` in a heredoc, `-` in
# a test, `?`), which index a 384-entry table: a character past U+7FFFF read unmapped memory and killed the process
# (about half the parses of "{" + U+F37FD, glibc). The parser sees every non-ASCII byte as ":", which like them is
# a word character that no variable name holds (`"$OUT目录"` expands OUT); offsets stay the same and all text is
# sliced from the real bytes.
_ASCII_FOR_SCANNER = bytes(range(128)) + b":" * 128


def _parse(data: bytes, bounded: bool = True):
    """The tree of ``data``; a bounded parse past PARSE_SECONDS is abandoned with OverBounds."""
    from time import monotonic

    data, parser = data.translate(_ASCII_FOR_SCANNER), _parser()
    if not bounded:
        return parser.parse(data)
    # slices of a memoryview: tree-sitter keeps the chunks the read callback returns, and bytes slices of a broken
    # 52 KB script held 170 MB by the time the budget ran out (memoryview slices: 20 MB)
    start, view, seconds = monotonic(), memoryview(data), PARSE_SECONDS
    try:
        return parser.parse(lambda offset, _point: view[offset:offset + _CHUNK],
                            progress_callback=lambda *_: monotonic() - start > seconds)
    except ValueError:  # the progress callback cancelled the parse
        parser.reset()  # else the next parse resumes this one
        raise OverBounds(f"this script did not parse within {seconds:g} s (deeply nested or broken text): "
                         "not checked") from None


# ---------------------------------------------------------------------------------------------------------------
# documents: a text parsed by tree-sitter, with a map from its byte offsets to character offsets of a real file
# ---------------------------------------------------------------------------------------------------------------
class _Doc:
    """A parsed text. The top-level script maps bytes to its own characters; the payload of ``bash -c "..."`` maps
    each of its characters back to where it was written in the script."""

    def __init__(self, text: str, path: str, outer: list[int] | None = None, source: Source | None = None):
        self.text = text
        self.path = path
        self.data = text.encode("utf-8")
        self.outer = outer  # char index in this text -> char offset in the file (None: identity)
        self.source = source
        self._b2c: list[int] | None = None
        if len(self.data) != len(text):
            table: list[int] = []
            for i, ch in enumerate(text):
                table.extend([i] * len(ch.encode("utf-8")))
            table.append(len(text))
            self._b2c = table
        self.tree = _parse(self.data)

    def __getstate__(self) -> dict:
        # a tree-sitter tree cannot be pickled: a parsed script sent back by a parsing worker process
        # (rlhf_lint.engine.runner) carries the text, and the tree is parsed again on arrival (the C parser: ~1 ms);
        # the Source is needed only while the script is evaluated
        return {k: v for k, v in self.__dict__.items() if k not in ("tree", "data", "source")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.source = None
        self.data = self.text.encode("utf-8")
        self.tree = _parse(self.data, bounded=False)  # parsed within the budget once already

    def char(self, byte: int) -> int:
        c = byte if self._b2c is None else self._b2c[min(byte, len(self._b2c) - 1)]
        if self.outer is None:
            return c
        return self.outer[min(c, len(self.outer) - 1)]

    def span(self, node) -> Span:
        return self.byte_span(node.start_byte, node.end_byte)

    def byte_span(self, start: int, end: int) -> Span:
        a = self.char(start)
        if end <= start:
            return Span(a, a)
        # the end maps through the last character, so a span never covers text between two mapped characters
        b = self.char(end - 1) + 1 if self.outer is not None else self.char(end)
        return Span(a, max(a, b))

    def text_of(self, node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def slice(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def verbatim(self) -> bool:
        return self.outer is None


# ---------------------------------------------------------------------------------------------------------------
# expansion values
# ---------------------------------------------------------------------------------------------------------------
@record
class _Inst:
    """One expansion of a variable at one place: where it was written and what it expanded."""

    token: Span  # the `$VAR` token
    token_path: str
    value_span: Span | None  # the assigned value (where a fix edits)
    value_path: str
    origin: str
    full_text: Any = None  # the whole value, to tell it from a piece of it after splitting
    count: int = 0  # fragments it produced


@record
class _Frag:
    text: Any  # str or UNKNOWN
    span: Span  # where the text was written
    path: str
    quoted: bool = False  # protected from field splitting and globbing
    chain: tuple = ()  # the variable expansions that produced it, innermost first
    heredoc: bool = False  # written in a heredoc body: quotes in it are not removed
    verbatim: bool = True  # text[i] was written at span.start + i
    gap: bool = False  # an array element standing for any number of unknown words (branches that appended apart)

    def sub(self, i: int, j: int) -> "_Frag":
        if self.verbatim and self.text is not UNKNOWN:
            span = Span(self.span.start + i, self.span.start + j)
        else:
            span = self.span
        return _Frag(self.text[i:j], span, self.path, self.quoted, self.chain, self.heredoc, self.verbatim)


_BREAK = object()  # a field boundary (array elements of "${A[@]}")


@record
class Var:
    """A shell variable's value: a scalar (fragments) or an array (one fragment list per element)."""

    frags: list[_Frag] | None = None
    elements: list[list[_Frag]] | None = None
    value_span: Span | None = None
    path: str = ""
    line: int = 0
    heredoc: bool = False
    unknown: bool = False

    @classmethod
    def unknown_value(cls) -> "Var":
        return cls(unknown=True)

    def size(self) -> int:
        """Fragments held (array elements count each of theirs): what MAX_VALUE_PIECES bounds."""
        if self.elements is not None:
            return sum(len(el) for el in self.elements) + len(self.elements)
        return len(self.frags or ())

    def key(self) -> Any:
        """What two branches compare to decide whether a variable has one value after an if."""
        if self.unknown:
            return ("?", id(self))
        if self.elements is not None:
            return ("a", tuple(tuple(_ftext(f) for f in el) for el in self.elements))
        return ("s", tuple(_ftext(f) for f in self.frags or ()))

    @property
    def text(self) -> Any:
        if self.unknown or self.frags is None:
            return UNKNOWN
        return _join([f.text for f in self.frags])


def _ftext(f: _Frag) -> Any:
    if f.gap:
        return ("...",)
    return ("?",) if f.text is UNKNOWN else f.text


def _is_gap(el: list[_Frag]) -> bool:
    return len(el) == 1 and el[0].gap


def _join(parts: list[Any]) -> Any:
    if any(p is UNKNOWN for p in parts):
        return UNKNOWN
    return "".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------------------------------------
@record(eq=False)
class SimpleCommand:
    """One simple command as bash would run it: argv Words, its env prefix, where it was written."""

    path: str
    span: Span
    words: list[Word]
    env: dict[str, Any] = field(default_factory=dict)  # VAR=x before the command
    # LAUNCH_ENV variables the command's process gets: its own VAR=x prefix, or an earlier `export`
    launch_env: dict[str, Word] = field(default_factory=dict)
    heredoc_span: Span | None = None  # when the words came from a heredoc body
    depth: int = 0  # nested bash -c level


@record(eq=False)
class Heredoc:
    path: str
    variable: str  # the variable `read` stores it in ("" for other commands)
    body_span: Span
    expands: bool  # unquoted delimiter: $VAR expanded, \<newline> removed
    command_span: Span


@record(eq=False)
class ShellScript:
    path: str
    simple_commands: list[SimpleCommand] = field(default_factory=list)
    commands: list | None = None  # the launches among simple_commands (rlhf_lint.frameworks.launchers.commands_of)
    heredocs: list[Heredoc] = field(default_factory=list)
    variables: dict[str, Var] = field(default_factory=dict)  # at the end of the script
    hardware: dict = field(default_factory=dict)
    hardware_span: Span | None = None
    sourced: list[str] = field(default_factory=list)  # references of `source X` / `. X`
    # `source "$(dirname "$0")/env.sh"`: references whose value cannot be read, as written (its variables unknown)
    sourced_unread: list[str] = field(default_factory=list)
    syntax_error: tuple[str, int, int] | None = None
    unparsed: list[Span] = field(default_factory=list)  # words tree-sitter-bash misread: their values are unknown
    doc: Any = None  # the top-level _Doc (tree-sitter tree), for rules that read nodes
    _with_project: Any = None


# ---------------------------------------------------------------------------------------------------------------
# the evaluator
# ---------------------------------------------------------------------------------------------------------------
_STATEMENT_CONTAINERS = {"program", "compound_statement", "subshell", "list", "pipeline", "do_group",
                         "negated_command", "else_clause", "elif_clause", "case_item"}
_DECLARATIONS = {"export", "local", "declare", "readonly", "typeset"}
# variables of the environment that change which GPUs a launch uses (rlhf_lint.frameworks.launchers reads them)
# (and llamafactory-cli's torchrun variables: schemas/hf/launchers.json llamafactory_cli env)
# (and PyTorch's allocator options: schemas/memory/allocator.json)
LAUNCH_ENV = ("CUDA_VISIBLE_DEVICES", "FORCE_TORCHRUN", "NNODES", "NODE_RANK", "RANK", "NPROC_PER_NODE", "MASTER_ADDR",
              "USE_RAY", "USE_KT", "USE_MCA", "USE_MEGATRON_BRIDGE", "OPTIM_TORCH", "PYTORCH_CUDA_ALLOC_CONF",
              "PYTORCH_ALLOC_CONF", "FSDP_CPU_RAM_EFFICIENT_LOADING")


class _Evaluator:
    def __init__(self, script: ShellScript, source: Source, resolve: Callable[[str, str], Source | None] | None):
        self.script = script
        self.source = source
        self.resolve = resolve
        self.env: dict[str, Var] = {}
        self.exported: set[str] = set()  # names an `export` put into the environment of later commands
        self.depth = 0
        self.expanded = 0  # pieces copied out of variables so far (MAX_EXPANDED_PIECES)
        self.source_depth = 0
        self.sourcing: set[str] = {os.path.realpath(source.path)}
        self.collect = True  # commands of sourced files are not this file's commands
        for name, (value, span) in source.shell_env.items():  # the environment the script starts in: exported
            line = source.position(span.start).line if span is not None else 0
            self.env[name] = Var(frags=[_Frag(value, span or Span(0, 0), source.path, True, verbatim=span is not None)],
                                 value_span=span, path=source.path, line=line)
            self.exported.add(name)

    # -- statements --------------------------------------------------------------------------------------------
    def run(self, doc: _Doc, node) -> None:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                return
            self._statement(doc, node)
        finally:
            self.depth -= 1

    def _children(self, doc: _Doc, node) -> None:
        for child in node.named_children:
            self.run(doc, child)

    def _statement(self, doc: _Doc, node) -> None:
        t = node.type
        if t in _STATEMENT_CONTAINERS:
            self._children(doc, node)
        elif t == "variable_assignment":
            self._assign(doc, node)
        elif t == "variable_assignments":
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self._assign(doc, child)
        elif t == "declaration_command":
            self._declaration(doc, node)
        elif t == "unset_command":
            for child in node.named_children:
                if child.type in ("word", "variable_name"):
                    self.env.pop(doc.text_of(child), None)
        elif t == "redirected_statement":
            self._redirected(doc, node)
        elif t == "command":
            self._command(doc, node, heredoc=None)
        elif t == "if_statement":
            self._if(doc, node)
        elif t in ("for_statement", "c_style_for_statement", "while_statement", "until_statement"):
            self._loop(doc, node)
        elif t == "case_statement":
            before = self.env
            results = []
            for item in node.named_children:
                if item.type == "case_item":
                    self.env = dict(before)
                    self._children(doc, item)
                    results.append(self.env)
            results.append(before)  # no pattern matched
            self.env = _merge(results)
        elif t == "ERROR":
            self._recovered(doc, node)
        elif t == "function_definition":
            before = self.env
            self.env = dict(before)
            body = node.child_by_field_name("body")
            if body is not None:
                self.run(doc, body)
            self.env = _merge([before, self.env])  # the function may never be called
        # comments, test commands, heredoc bodies reached directly and anything else: nothing to run

    def _recovered(self, doc: _Doc, node) -> None:
        """The statements of an ERROR node: tree-sitter could not build the construct around them (an `if`
        without its `fi`), but each is a whole command that the script means to run, read in order. A name left
        loose among them is one the construct sets (a loop variable, an assignment tree-sitter took apart): its
        value is unknown, as after _loop."""
        for child in node.named_children:
            if child.type == "variable_name":
                self.env[doc.text_of(child)] = Var.unknown_value()
            else:
                self.run(doc, child)

    def _if(self, doc: _Doc, node) -> None:
        before = self.env
        branches = []
        has_else = False
        current = dict(before)
        self.env = current
        for child in node.named_children:
            field_name = _field_of(node, child)
            if field_name == "condition":
                self.run(doc, child)
                before = self.env  # conditions run on every path
                self.env = dict(before)
            elif child.type in ("elif_clause", "else_clause"):
                branches.append(self.env)
                has_else = has_else or child.type == "else_clause"
                self.env = dict(before)
                if child.type == "elif_clause":
                    for sub in child.named_children:
                        if _field_of(child, sub) == "condition":
                            self.run(doc, sub)
                            before = self.env
                            self.env = dict(before)
                        else:
                            self.run(doc, sub)
                else:
                    self._children(doc, child)
            else:
                self.run(doc, child)
        branches.append(self.env)
        if not has_else:
            branches.append(before)
        self.env = _merge(branches)

    def _loop(self, doc: _Doc, node) -> None:
        var = node.child_by_field_name("variable")
        if var is not None:
            self.env[doc.text_of(var)] = Var.unknown_value()
        before = self.env
        self.env = dict(before)
        for child in node.named_children:
            if child.type == "do_group" or _field_of(node, child) in ("body", "condition"):
                self.run(doc, child)
        self.env = _merge([before, self.env])  # zero or more iterations

    def _declaration(self, doc: _Doc, node) -> None:
        keyword = node.children[0].type if node.children else ""
        for child in node.named_children:
            if keyword == "export" and child.type in ("variable_assignment", "variable_name"):
                name_node = child.child_by_field_name("name") if child.type == "variable_assignment" else child
                if name_node is not None:
                    self.exported.add(doc.text_of(name_node))
            if child.type == "variable_assignment":
                self._assign(doc, child)
            elif child.type == "variable_name" and keyword == "local":
                self.env[doc.text_of(child)] = Var.unknown_value()

    def _assign(self, doc: _Doc, node) -> None:
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name_node is None:
            return
        name = doc.text_of(name_node)
        if name_node.type == "subscript":  # A[i]=x: the array is no longer known element by element
            base = name_node.child_by_field_name("name")
            if base is not None:
                self.env[doc.text_of(base)] = Var.unknown_value()
            return
        append = any(c.type == "+=" for c in node.children)
        line = self.source.position(doc.char(node.start_byte)).line if doc.path == self.source.path else 0
        if value is None:
            new = Var(frags=[], value_span=Span(doc.char(node.end_byte), doc.char(node.end_byte)), path=doc.path,
                      line=line)
        elif value.type == "array":
            elements = []
            for el in value.named_children:
                if el.type == "comment":
                    continue
                fields = _split_fields(self._expand(doc, el, quoted=False), doc, el)
                if len(fields) == 1 and doc.verbatim():
                    # one element as written: a finding points at it, a fix edits inside its quotes
                    inst = _Inst(doc.span(el), doc.path, _inner_span(doc, el), doc.path, f"${name} element",
                                 full_text=_join([f.text for f in fields[0]]))
                    fields = [[_mark(f, inst, f.quoted, keep_quoted=True) for f in fields[0]]]
                elements.extend(fields)
            new = Var(elements=[[f for f in el] for el in elements], value_span=doc.span(value), path=doc.path,
                      line=line)
        else:
            frags = self._expand(doc, value, quoted=True)  # no field splitting in an assignment
            new = Var(frags=[f for f in frags if f is not _BREAK], value_span=_inner_span(doc, value), path=doc.path,
                      line=line)
        if append:
            old = self.env.get(name)
            if old is not None and old.unknown:
                new = Var.unknown_value()
            elif new.elements is not None:
                prev = (old.elements if old.elements is not None else [old.frags]) if old is not None else []
                new = Var(elements=list(prev) + new.elements, value_span=new.value_span, path=doc.path, line=line)
            elif old is not None and old.frags is not None:
                new = Var(frags=list(old.frags) + (new.frags or []), value_span=None, path=doc.path, line=line)
            elif old is not None:
                new = Var.unknown_value()
        if new.size() > MAX_VALUE_PIECES:
            new = Var.unknown_value()
        self.env[name] = new

    def _redirected(self, doc: _Doc, node) -> None:
        body = node.child_by_field_name("body")
        heredoc = None
        for child in node.named_children:
            if child.type == "heredoc_redirect":
                heredoc = child
        if body is None:
            self._children(doc, node)
            return
        if body.type == "command":
            self._command(doc, body, heredoc=heredoc)
        else:
            self.run(doc, body)

    # -- commands ----------------------------------------------------------------------------------------------
    def _command(self, doc: _Doc, node, heredoc) -> None:
        env_prefix: dict[str, Any] = {}
        launch_env: dict[str, Word] = {}
        argv: list[Word] = []
        for child in node.named_children:
            f = _field_of(node, child)
            if child.type == "variable_assignment" and f != "argument":
                name_node = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                frags = self._expand(doc, value, quoted=True) if value is not None else []
                env_prefix[doc.text_of(name_node) if name_node is not None else ""] = _join(
                    [f.text for f in frags if f is not _BREAK])
                if name_node is not None and doc.text_of(name_node) in LAUNCH_ENV:
                    span = _inner_span(doc, value) if value is not None else doc.span(child)
                    launch_env[doc.text_of(name_node)] = Word(env_prefix[doc.text_of(name_node)], span, doc.path)
            elif f == "name" or f == "argument" or child.type == "command_name":
                target = child.named_children[0] if child.type == "command_name" and child.named_children else child
                argv.extend(self._words(doc, target))
        if not argv:
            return
        name = argv[0].text
        heredoc_info = None
        if heredoc is not None:
            heredoc_info = self._heredoc(doc, heredoc, node, name, argv)
        if name in ("source", ".") and len(argv) > 1:
            self._source(argv[1])
            return
        if self.collect:
            for env_name in LAUNCH_ENV:
                var = self.env.get(env_name)
                if env_name not in launch_env and env_name in self.exported and var is not None:
                    launch_env[env_name] = Word(var.text, var.value_span or doc.span(node), var.path or doc.path,
                                                origin=f"export {env_name} on line {var.line}" if var.line
                                                else f"export {env_name}")
            self.script.simple_commands.append(SimpleCommand(
                path=doc.path, span=doc.span(node), words=argv, env=env_prefix, launch_env=launch_env,
                heredoc_span=heredoc_info.body_span if heredoc_info else None, depth=self.source_depth))
        if name in ("bash", "sh", "zsh") or (name == "srun" and any(w.text == "-c" for w in argv)):
            self._bash_c(doc, node, argv)

    def _heredoc(self, doc: _Doc, redirect, command_node, name: Any, argv: list[Word]) -> Heredoc | None:
        start = redirect.child_by_field_name("start") or next(
            (c for c in redirect.named_children if c.type == "heredoc_start"), None)
        body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
        if body is None:
            return None
        delim = doc.text_of(start) if start is not None else ""
        expands = not any(q in delim for q in ("'", '"', "\\"))
        variable = ""
        if name == "read":
            # `read -r -d '' VAR`: the word after -d is the delimiter, the last plain word the variable
            plain = []
            skip = False
            for w in argv[1:]:
                if skip:
                    skip = False
                    continue
                if w.known and w.text in ("-d", "-p", "-n", "-N", "-t", "-u", "-a", "-i"):
                    skip = True
                    continue
                if w.known and w.text.startswith("-"):
                    continue
                plain.append(w)
            if plain and plain[-1].known:
                variable = plain[-1].text
        info = Heredoc(path=doc.path, variable=variable, body_span=doc.span(body), expands=expands,
                       command_span=doc.span(command_node))
        if self.collect:
            self.script.heredocs.append(info)
        if variable:
            frags = self._heredoc_frags(doc, body, expands)
            line = self.source.position(doc.char(body.start_byte)).line if doc.path == self.source.path else 0
            # read strips leading and trailing IFS whitespace; word splitting later ignores it anyway
            heredoc_value = Var(frags=frags, value_span=doc.span(body), path=doc.path, line=line, heredoc=True)
            self.env[variable] = heredoc_value if heredoc_value.size() <= MAX_VALUE_PIECES else Var.unknown_value()
        return info

    def _heredoc_frags(self, doc: _Doc, body, expands: bool) -> list[_Frag]:
        frags: list[_Frag] = []
        pos = body.start_byte
        if expands:
            for child in body.named_children:
                if child.type == "heredoc_content":
                    continue
                if child.start_byte > pos:
                    frags.extend(_escaped_literal(doc, pos, child.start_byte, _HEREDOC_ESCAPES, heredoc=True))
                for f in self._expand(doc, child, quoted=True):
                    if f is not _BREAK:
                        f.quoted = False  # the text is split later, when the variable is expanded unquoted
                        frags.append(f)
                pos = max(pos, child.end_byte)
            if body.end_byte > pos:
                frags.extend(_escaped_literal(doc, pos, body.end_byte, _HEREDOC_ESCAPES, heredoc=True))
        else:
            text = doc.slice(body.start_byte, body.end_byte)
            frags.append(_Frag(text, doc.byte_span(body.start_byte, body.end_byte), doc.path, heredoc=True,
                               verbatim=doc.verbatim()))
        return frags

    def _source(self, word: Word) -> None:
        if word.known:
            self.script.sourced.append(word.text)
        elif self.source is not None and word.path == self.source.path:
            self.script.sourced_unread.append(self.source.text[word.span.start:word.span.end])
        if self.resolve is None or not word.known or self.source_depth >= MAX_SOURCE_DEPTH:
            return
        target = self.resolve(self.source.path, word.text)
        if target is None:
            return
        real = os.path.realpath(target.path)
        if real in self.sourcing:
            return
        self.sourcing.add(real)
        saved = (self.collect, self.source, self.source_depth)
        try:
            self.collect, self.source, self.source_depth = False, target, self.source_depth + 1
            try:
                doc = _Doc(target.text, target.path, source=target)
            except OverBounds:  # that file reports it itself; here it is not followed
                return
            # a sourced script sees positional parameters we cannot know; its commands are its own file's
            self.run(doc, doc.tree.root_node)
        finally:
            self.collect, self.source, self.source_depth = saved
            self.sourcing.discard(real)

    def _bash_c(self, doc: _Doc, node, argv: list[Word]) -> None:
        """`bash -c "..."`: the payload is a script of its own, parsed again with a map back to this file."""
        if self.source_depth >= MAX_SOURCE_DEPTH:
            return
        args = [c for c in node.named_children if _field_of(node, c) == "argument"]
        for i, child in enumerate(args[:-1]):
            if doc.text_of(child) == "-c":
                payload = args[i + 1]
                break
        else:
            return
        mapped = _unquote_with_map(doc, payload)
        if mapped is None:
            return
        text, outer = mapped
        try:
            sub = _Doc(text, doc.path, outer=outer + [outer[-1] + 1 if outer else doc.char(payload.end_byte)],
                       source=doc.source)
        except OverBounds:  # a payload that does not parse in bounded time: its commands stay unread
            return
        saved_env = self.env
        self.env = dict(self.env)
        self.source_depth += 1
        try:
            self.run(sub, sub.tree.root_node)
        finally:
            self.source_depth -= 1
            self.env = saved_env  # a child shell's assignments do not come back

    # -- words -------------------------------------------------------------------------------------------------
    def _words(self, doc: _Doc, node) -> list[Word]:
        frags = self._expand(doc, node, quoted=False)
        fields = _split_fields(frags, doc, node)
        token = doc.span(node)
        return [_word(fl, token, doc.path) for fl in fields]

    def _expand(self, doc: _Doc, node, quoted: bool) -> list:
        t = node.type
        if t in ("word", "number", "variable_name"):  # tree-sitter reads `2e` in ${X:-2e-6} as a name
            text = doc.text_of(node)
            if text.startswith("~"):
                return [_Frag(UNKNOWN, doc.span(node), doc.path, quoted)]
            return _unescape_word(doc, node, text, quoted)
        if t == "raw_string":
            inner = Span(doc.char(node.start_byte + 1), doc.char(node.end_byte - 1)) if doc.verbatim() else doc.span(node)
            return [_Frag(doc.text_of(node)[1:-1], inner, doc.path, quoted=True, verbatim=doc.verbatim())]
        if t in ("string", "translated_string"):
            return self._string(doc, node)
        if t == "ansi_c_string":
            return [_Frag(_ansi_c(doc.text_of(node)), doc.span(node), doc.path, quoted=True, verbatim=False)]
        if t == "concatenation":
            out: list = []
            for child in node.children:
                out.extend(self._expand(doc, child, quoted))
            return out
        if t == "simple_expansion":
            name_node = node.named_children[0] if node.named_children else None
            name = doc.text_of(name_node) if name_node is not None else ""
            return self._variable(doc, node, name, quoted)
        if t == "expansion":
            return self._braced(doc, node, quoted)
        if t in ("string_content", "heredoc_content"):
            return [_Frag(doc.text_of(node), doc.span(node), doc.path, quoted, verbatim=doc.verbatim())]
        # $(...), `...`, $((...)), <(...), anything else: not known without running it
        return [_Frag(UNKNOWN, doc.span(node), doc.path, quoted)]

    def _string(self, doc: _Doc, node) -> list:
        out: list = []
        start = node.start_byte + 1 if doc.data[node.start_byte : node.start_byte + 1] == b'"' else node.start_byte + 2
        end = node.end_byte - 1
        pos = start
        for child in node.named_children:
            if child.start_byte > pos:
                out.extend(_escaped_literal(doc, pos, child.start_byte, _DQ_ESCAPES))
            if child.type == "string_content":
                out.extend(_escaped_literal(doc, child.start_byte, child.end_byte, _DQ_ESCAPES))
            else:
                out.extend(self._expand(doc, child, quoted=True))
            pos = max(pos, child.end_byte)
        if end > pos:
            out.extend(_escaped_literal(doc, pos, end, _DQ_ESCAPES))
        if not out:
            at = doc.char(start)
            out.append(_Frag("", Span(at, at), doc.path, quoted=True))
        return out

    def _variable(self, doc: _Doc, node, name: str, quoted: bool, index: str | None = None) -> list:
        token = doc.span(node)
        var = self.env.get(name)
        if var is None or var.unknown or not (name.isascii() and name.isidentifier()):  # [A-Za-z_][A-Za-z0-9_]*
            return [_Frag(UNKNOWN, token, doc.path, quoted)]
        self.expanded += var.size()
        if self.expanded > MAX_EXPANDED_PIECES:  # a value expanded over and over: unknown from here on
            return [_Frag(UNKNOWN, token, doc.path, quoted)]
        origin = f"${name} from line {var.line}" if var.line else f"${name}"
        inst = _Inst(token, doc.path, var.value_span, var.path, origin,
                     full_text=var.text if var.elements is None else None)
        if var.elements is not None:
            if index in ("@", "*"):
                out: list = []
                for n, el in enumerate(var.elements):
                    if n:
                        out.append(_BREAK if (quoted and index == "@") or not quoted else _Frag(" ", token, doc.path, True))
                    if _is_gap(el):  # unknown words, shown where the array is expanded
                        out.append(_Frag(UNKNOWN, token, doc.path, quoted))
                        continue
                    out.extend(_mark(f, inst, quoted) for f in el)
                return out
            if index is None:  # ${A} is ${A[0]}
                index = "0"
            if index.isascii() and index.isdigit():
                i = int(index)
                if any(_is_gap(el) for el in var.elements[: i + 1]):  # a gap moves every element after it
                    return [_Frag(UNKNOWN, token, doc.path, quoted)]
                el = var.elements[i] if i < len(var.elements) else []
                return [_mark(f, inst, quoted) for f in el]
            return [_Frag(UNKNOWN, token, doc.path, quoted)]
        if index not in (None, "0", "@", "*"):
            return [_Frag(UNKNOWN, token, doc.path, quoted)]
        frags = [_mark(f, inst, quoted) for f in var.frags or []]
        if not frags and quoted:
            frags = [_Frag("", token, doc.path, True)]
        return frags

    def _braced(self, doc: _Doc, node, quoted: bool) -> list:
        token = doc.span(node)
        unknown = [_Frag(UNKNOWN, token, doc.path, quoted)]
        children = node.children
        op = node.child_by_field_name("operator")
        named = [c for c in node.named_children]
        if not named:
            return unknown
        target = named[0]
        if children and len(children) > 1 and children[1].type in ("#", "!"):
            return unknown  # ${#X} length, ${!X} indirection
        if target.type == "subscript":
            base = target.child_by_field_name("name")
            index = target.child_by_field_name("index")
            if base is None or op is not None:
                return unknown
            return self._variable(doc, node, doc.text_of(base), quoted,
                                  index=doc.text_of(index) if index is not None else None)
        if target.type not in ("variable_name", "special_variable_name"):
            return unknown
        name = doc.text_of(target)
        if op is None:
            if len(named) > 1:
                return unknown
            return self._variable(doc, node, name, quoted)
        operator = op.type
        rest = [c for c in named[1:]]
        var = self.env.get(name)
        if operator not in (":-", "-", ":=", "=", ":+", "+"):
            return unknown  # ${X%/*}, ${X/a/b}, ${X:1:2}, ${X:?msg}: not worth simulating
        if var is not None and var.unknown:
            return unknown
        if var is None and not (name.isascii() and name.isidentifier()):  # [A-Za-z_][A-Za-z0-9_]*
            return unknown  # ${1:-x}: a positional parameter may be set
        is_set = var is not None
        empty = is_set and var.elements is None and var.text == ""
        use_default = (not is_set) or (operator.startswith(":") and empty)
        if operator.endswith("+"):
            if not is_set or (operator == ":+" and empty):
                return [_Frag("", token, doc.path, True)] if quoted else []
            return self._default_words(doc, node, rest, quoted, f"alternative of ${{{name}}}")
        if not use_default:
            return self._variable(doc, node, name, quoted)
        frags = self._default_words(doc, node, rest, quoted, f"default of ${{{name}}}")
        if operator in (":=", "="):
            plain = [f for f in frags if f is not _BREAK]
            self.env[name] = Var(frags=[_Frag(f.text, f.span, f.path, True, f.chain, f.heredoc, f.verbatim)
                                        for f in plain],
                                 value_span=_span_of(plain), path=doc.path)
        return frags

    def _default_words(self, doc: _Doc, node, rest, quoted: bool, origin: str) -> list:
        if any(c.has_error for c in rest):
            # a default tree-sitter misread (_syntax_errors): its pieces are no words of it, and split they are garbage
            return [_Frag(UNKNOWN, doc.span(node), doc.path, quoted)]
        frags: list = []
        for child in rest:
            frags.extend(self._expand(doc, child, quoted))
        plain = [f for f in frags if f is not _BREAK]
        if not plain:
            return [_Frag("", doc.span(node), doc.path, True)] if quoted else []
        inst = _Inst(doc.span(node), doc.path, _span_of(plain), doc.path, origin,
                     full_text=_join([f.text for f in plain]))
        out = []
        for f in frags:
            out.append(f if f is _BREAK else _mark(f, inst, f.quoted, keep_quoted=True))
        return out


def _span_of(frags: list[_Frag]) -> Span | None:
    if not frags:
        return None
    return Span(min(f.span.start for f in frags), max(f.span.end for f in frags))


def _mark(f: _Frag, inst: _Inst, quoted: bool, keep_quoted: bool = False) -> _Frag:
    inst.count += 1
    return _Frag(f.text, f.span, f.path, f.quoted if keep_quoted else quoted, f.chain + (inst,), f.heredoc,
                 f.verbatim)


_FIELDS: dict[int, tuple] = {}  # parent node id -> (the node, {child id: field name}); the node keeps its tree alive


def _field_of(parent, child) -> str | None:
    # one pass over the parent's children, remembered: scanning them for every child is quadratic, and a command
    # with 100k words took minutes
    memo = _FIELDS.get(parent.id)
    if memo is None or memo[0] != parent:
        if len(_FIELDS) > 64:
            _FIELDS.clear()
        memo = (parent, {c.id: parent.field_name_for_child(i) for i, c in enumerate(parent.children)})
        _FIELDS[parent.id] = memo
    return memo[1].get(child.id)


def _merge(envs: list[dict[str, Var]]) -> dict[str, Var]:
    """Variables after branches: a value every path agrees on, else UNKNOWN; an array keeps the elements every path
    starts with, then a gap where they part (``A+=(...)`` in one branch)."""
    first = envs[0]
    out: dict[str, Var] = {}
    names = set()
    for env in envs:
        names.update(env)
    for name in names:
        values = [env.get(name) for env in envs]
        if any(v is None for v in values):
            out[name] = Var.unknown_value()
            continue
        keys = {v.key() for v in values}
        if len(keys) == 1:
            out[name] = values[0]
        elif all(v.elements is not None and not v.unknown for v in values):
            out[name] = _common_ends(values)
        else:
            out[name] = Var.unknown_value()
    del first
    return out


def _common_ends(arrays: list[Var]) -> Var:
    """The elements every array starts with, one gap for what differs by path (in number too), then the elements
    every array ends with: verl's ``LAUNCH=(python3)``, ``LAUNCH=(uv run ... python3)`` in a branch, is a gap and
    then python3."""
    rows = [[tuple(_ftext(f) for f in el) for el in v.elements] for v in arrays]
    n = 0
    while all(n < len(r) for r in rows) and len({r[n] for r in rows}) == 1:
        n += 1
    shortest = min(len(r) for r in rows)
    m = 0  # the common tail, never reaching into the common head of the shortest
    while n + m < shortest and len({r[len(r) - 1 - m] for r in rows}) == 1:
        m += 1
    first = arrays[0]
    kept = first.elements[:n]
    if not (kept and _is_gap(kept[-1])):  # a gap already stands for any words after it
        kept = kept + [[_Frag(UNKNOWN, first.value_span or Span(0, 0), first.path, gap=True)]]
    if m and not any(_is_gap(el) for el in first.elements[len(first.elements) - m:]):
        kept = kept + first.elements[len(first.elements) - m:]
    # no value_span: no one assignment holds the whole value, so no fix may edit it as one
    return Var(elements=kept, path=first.path, line=first.line)


def _inner_span(doc: _Doc, value) -> Span:
    """The span a fix of an assigned value edits: inside the quotes of ``X="3"`` so quoting is preserved."""
    if value.type == "raw_string" and doc.verbatim():
        return Span(doc.char(value.start_byte + 1), doc.char(value.end_byte - 1))
    if value.type == "string" and doc.verbatim():
        named = value.named_children
        if all(c.type == "string_content" for c in named):
            return Span(doc.char(value.start_byte + 1), doc.char(value.end_byte - 1))
    return doc.span(value)


def _unescape_word(doc: _Doc, node, text: str, quoted: bool) -> list[_Frag]:
    if "\\" not in text:
        return [_Frag(text, doc.span(node), doc.path, quoted, verbatim=doc.verbatim())]
    out = []
    i = 0
    buf = []
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                buf.append(text[i + 1])
            i += 2
            continue
        if ch == "\\":
            i += 1
            continue
        buf.append(ch)
        i += 1
    # an escaped character is quoted: `a\ b` is one word, `\*` does not glob
    out.append(_Frag("".join(buf), doc.span(node), doc.path, True, verbatim=False))
    return out


_DQ_ESCAPES = (b"$", b"`", b'"', b"\\", b"\n")  # what a backslash escapes inside double quotes
_HEREDOC_ESCAPES = (b"$", b"`", b"\\", b"\n")  # and in the body of an unquoted heredoc


def _escaped_literal(doc: _Doc, start: int, end: int, escapes: tuple[bytes, ...],
                     heredoc: bool = False) -> list[_Frag]:
    """Literal text in which a backslash escapes only ``escapes`` (an escaped newline is a line continuation and
    disappears): double-quoted text (quoted fragments) or a heredoc body (unquoted, its quotes kept)."""
    quoted = not heredoc
    raw = doc.slice(start, end)
    if "\\" not in raw:
        return [_Frag(raw, doc.byte_span(start, end), doc.path, quoted, heredoc=heredoc, verbatim=doc.verbatim())] \
            if raw else []
    out = []
    data = doc.data
    seg = start
    i = start
    while i < end:
        if data[i : i + 1] == b"\\" and i + 1 < end and data[i + 1 : i + 2] in escapes:
            if i > seg:
                out.append(_Frag(doc.slice(seg, i), doc.byte_span(seg, i), doc.path, quoted, heredoc=heredoc,
                                 verbatim=doc.verbatim()))
            if data[i + 1 : i + 2] != b"\n":
                out.append(_Frag(doc.slice(i + 1, i + 2), doc.byte_span(i + 1, i + 2), doc.path, quoted,
                                 heredoc=heredoc, verbatim=doc.verbatim()))
            i += 2
            seg = i
            continue
        i += 1
    if end > seg:
        out.append(_Frag(doc.slice(seg, end), doc.byte_span(seg, end), doc.path, quoted, heredoc=heredoc,
                         verbatim=doc.verbatim()))
    return out


def _ansi_c(text: str) -> str:
    body = text[2:-1]
    table = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "r": "\r", "e": "\x1b", "a": "\a", "0": "\0"}
    out = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append(table.get(body[i + 1], "\\" + body[i + 1]))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def _split_fields(frags: list, doc: _Doc, node) -> list[list[_Frag]]:
    """Word splitting: unquoted expansion results split on blanks; quoted text and literal words do not."""
    fields: list[list[_Frag]] = []
    current: list[_Frag] = []
    started = False  # the current field has something that makes it exist (even if empty, like "")

    def flush():
        nonlocal current, started
        if current and (started or any(f.text for f in current)):
            fields.append(current)
        current = []
        started = False

    for f in frags:
        if f is _BREAK:
            flush()
            continue
        splittable = not f.quoted and (bool(f.chain) or f.heredoc) and f.text is not UNKNOWN
        if not splittable:
            current.append(f)
            if f.quoted or f.text is UNKNOWN or f.text:
                started = True
            continue
        text = f.text
        pos = 0
        for m in _IFS.finditer(text):
            if m.start() > pos:
                current.append(f.sub(pos, m.start()))
                started = True
            flush()
            pos = m.end()
        if pos < len(text):
            current.append(f.sub(pos, len(text)))
            started = True
    flush()
    return fields


def _word(frags: list[_Frag], token: Span, path: str) -> Word:
    word = _word_of(frags, token, path)
    if word.text is UNKNOWN:
        word.suffix = _known_suffix(frags)
    return word


def _known_suffix(frags: list[_Frag]) -> str:
    """The known text after the last fragment whose value is unknown (and not an unknown array gap)."""
    last = max((i for i, f in enumerate(frags) if f.text is UNKNOWN), default=-1)
    tail = frags[last + 1:]
    return "".join(f.text for f in tail) if all(isinstance(f.text, str) for f in tail) else ""


def _word_of(frags: list[_Frag], token: Span, path: str) -> Word:
    text = _join([f.text for f in frags])
    literal_quotes = any(f.heredoc and f.text is not UNKNOWN and any(q in f.text for q in _QUOTE_CHARS)
                         for f in frags)
    # the expansions every fragment of this word came through, innermost first
    common = [i for i in frags[0].chain if all(any(i is j for j in f.chain) for f in frags[1:])]
    if not common:
        # literal text of this token, or literal text and expansions mixed: the token as written
        origins = []
        for f in frags:
            if f.chain and f.chain[-1].origin not in origins:
                origins.append(f.chain[-1].origin)
        return Word(text, token, path, origin=", ".join(origins), literal_quotes=literal_quotes,
                    parts=_parts(frags, path) if text is not UNKNOWN else (),
                    **(_literal_prefix(frags, token) if text is UNKNOWN else {}))

    def whole(inst: _Inst) -> bool:
        return (text == inst.full_text) if text is not UNKNOWN else inst.count == len(frags)

    wholes = [i for i in common if whole(i) and i.value_span is not None]
    if wholes:
        # the whole value of `$VAR`: reported at the outermost `$VAR`, fixed where the value was written
        outer = wholes[-1]
        origin_span = next((i.value_span for i in wholes if i.value_path == outer.token_path), None)
        return Word(text, outer.token, outer.token_path, origin=outer.origin, origin_span=origin_span,
                    literal_quotes=literal_quotes)
    if all(f.path == frags[0].path for f in frags):
        # a piece of a split expansion (a heredoc body, $FLAGS): where it is written
        return Word(text, _span_of(frags), frags[0].path, origin=common[-1].origin, literal_quotes=literal_quotes)
    return Word(text, token, path, origin=common[-1].origin, literal_quotes=literal_quotes)


def _literal_prefix(frags: list[_Frag], token: Span) -> dict:
    """Word fields for the text written literally at the token's start (an opening quote allowed), up to the first
    fragment whose value is unknown: ``{"prefix": ..., "prefix_start": ...}``, or {} when there is none."""
    out: list[str] = []
    first = frags[0].span.start if frags else -1
    if first not in (token.start, token.start + 1):
        return {}
    at = first
    for f in frags:
        if f.text is UNKNOWN or f.chain or f.heredoc or not f.verbatim or f.span.start not in (at, at + 1):
            break  # at + 1: a quote between two literal stretches (`--flag="..."`) is no text of the word
        if f.span.start == at + 1 and out and not f.quoted:
            break
        out.append(f.text)
        at = f.span.end
    return {"prefix": "".join(out), "prefix_start": first} if out else {}


def _parts(frags: list[_Frag], path: str) -> tuple[WordPart, ...]:
    """The expansions of a mixed word whose whole value it holds, with the text offsets they cover."""
    runs: list[tuple[int, list[_Frag]]] = []
    offset = 0
    for f in frags:
        outer = f.chain[-1] if f.chain else None
        if outer is not None and runs and runs[-1][1][-1].chain and runs[-1][1][-1].chain[-1] is outer:
            runs[-1][1].append(f)
        else:
            runs.append((offset, [f]))
        offset += len(f.text)
    out = []
    for start, run in runs:
        if not run[0].chain:
            continue
        text = "".join(f.text for f in run)
        common = [i for i in run[0].chain if all(any(i is j for j in f.chain) for f in run[1:])]
        wholes = [i for i in common if i.full_text == text and i.value_span is not None and i.value_path == path]
        if wholes:
            out.append(WordPart(start, start + len(text), wholes[-1].origin, wholes[0].value_span))
    return tuple(out)


def _unquote_with_map(doc: _Doc, node) -> tuple[str, list[int]] | None:
    """The text a `bash -c` payload argument gives the child shell, with a file offset per character.
    Expansions are left in place (the child shell expands them the same way); only quotes are removed."""
    if node.type == "raw_string":
        start = node.start_byte + 1
        text = doc.slice(start, node.end_byte - 1)
        outer, offset = [], start
        for ch in text:  # the byte offset of each character, kept as we go (re-encoding each prefix was quadratic)
            outer.append(doc.char(offset))
            offset += len(ch.encode("utf-8")) if ch >= "\x80" else 1
        return text, outer
    if node.type == "string":
        chars: list[str] = []
        outer: list[int] = []
        data = doc.data
        i = node.start_byte + 1
        end = node.end_byte - 1
        while i < end:
            b = data[i : i + 1]
            if b == b"\\" and i + 1 < end and data[i + 1 : i + 2] in _DQ_ESCAPES:
                if data[i + 1 : i + 2] != b"\n":
                    chars.append(data[i + 1 : i + 2].decode())
                    outer.append(doc.char(i + 1))
                i += 2
                continue
            # a multi-byte character: copy it whole
            j = i + 1
            while j < end and (data[j] & 0xC0) == 0x80:
                j += 1
            chars.append(data[i:j].decode("utf-8", "replace"))
            outer.append(doc.char(i))
            i = j
        return "".join(chars), outer
    if node.type in ("word",):
        text = doc.text_of(node)
        if "\\" in text:
            return None
        return text, [doc.char(node.start_byte) + k for k in range(len(text))]
    return None


# ---------------------------------------------------------------------------------------------------------------
# syntax errors
# ---------------------------------------------------------------------------------------------------------------
# Words that tree-sitter-bash 0.25 misreads in places bash accepts: a ${X...} expansion, which bash reads to its
# matching `}` and expands only when it runs (arithmetic as in `${N:-$(((a + b) * 2))}`, brackets as in
# `${L:-['npu','cpu']}`), and an unquoted heredoc body, which bash expands only when it runs. An error tree-sitter
# recovers from inside such a word, whose end it still finds, is a gap of rlhf-lint's parser, not of the file:
# that word's value is unknown and the rest of the file is read. What bash does parse inside a ${...} when it reads
# it, a command substitution, stays a syntax error.
MAX_WORD_NESTING = 8  # ${...} in ${...}: real scripts nest two or three
_PARSED_INSIDE = lazy_compile(r"\$\((?!\()|[<>]\(|`")  # $(...) but not $((...)), <(...), >(...), `...`


def _syntax_errors(doc: _Doc) -> tuple[tuple[str, int, int] | None, list[tuple[int, int]]]:
    """(the first syntax error, as (message, start, end), or None; the character spans of the words tree-sitter
    could not parse but recovered from inside, up to that error)."""
    error, unparsed = _tree_errors(doc)
    stray = _stray_reserved_word(doc)
    if stray is None or (error is not None and error[1] <= stray[1]):
        return error, unparsed
    return stray, [span for span in unparsed if span[1] <= stray[1]]


def _tree_errors(doc: _Doc) -> tuple[tuple[str, int, int] | None, list[tuple[int, int]]]:
    """_syntax_errors for the errors tree-sitter marks in its tree (ERROR and MISSING nodes)."""
    root = doc.tree.root_node
    if not root.has_error:
        return None, []
    unparsed: list[tuple[int, int]] = []
    # a root that is itself an ERROR: tree-sitter found no script structure at all, and nothing in it is trusted
    stack = list(reversed(_inner(doc, root, (False if root.type == "ERROR" else None, False, 0))))
    while stack:  # in document order
        node, state = stack.pop()
        word = state[0]
        if node.is_missing or node.type == "ERROR":
            if _misread(doc, node, state):
                span = (doc.char(word.start_byte), doc.char(word.end_byte))
                if not unparsed or unparsed[-1] != span:
                    unparsed.append(span)
                continue
            if _tolerated(doc, node):
                continue
            if node.type == "ERROR":
                node = _error_node(doc, node, state) or node
            if node.is_missing:
                return _describe_error(doc, node), unparsed
            return _unclosed(doc, node) or _describe_error(doc, node), unparsed
        stack.extend(reversed(_inner(doc, node, state)))
    # an ERROR root holding no smaller error: tree-sitter could not close a construct (three nested `if`s without
    # their `fi`s); said only where the tokens show which one
    return (_unclosed(doc, root) if root.type == "ERROR" else None), unparsed


def _inner(doc: _Doc, node, state: tuple) -> list[tuple]:
    """The children of ``node`` that hold an error, each with its state: (the innermost word around it that bash
    reads whole, or None, or False inside a ${...} bash would not close there; whether it is in a heredoc body; how
    many ${...} enclose it)."""
    word, body, nest = state
    t = node.type
    if t == "expansion" and word is not False:
        nest += 1
        # deeper nesting is no launch code: not followed (each ${...} on the way is scanned, so it stays linear)
        closed = nest <= MAX_WORD_NESTING and _closed(doc, node)
        word = node if closed else (word if body else False)
    elif t in ("command_substitution", "process_substitution") and not body \
            and not doc.text_of(node).startswith("$(("):
        word = None  # bash parses the command inside when it reads the ${...}
    return [(c, (c if t == "heredoc_body" and word is not False else word,  # the piece of a body that holds it
                 body or t == "heredoc_body", nest))
            for c in node.children if c.has_error or c.is_missing]


def _tolerated(doc: _Doc, node) -> bool:
    """Errors bash lets pass: a heredoc without its end (bash warns and reads it up to the end of the file), a
    dangling `\\` at the end of the file (bash continues into nothing and runs the command)."""
    if node.is_missing:
        return node.type == "heredoc_end"
    return doc.text_of(node).strip() in ("", "\\")


def _misread(doc: _Doc, node, state: tuple) -> bool:
    """Whether an ERROR or MISSING node lies in a word bash reads whole without parsing it there."""
    word, body, _ = state
    return bool(word) and (body or not _PARSED_INSIDE.search(doc.text_of(node)))


def _closed(doc: _Doc, node) -> bool:
    """Whether a ${...} ends with its own `}` (not one tree-sitter supplied), the one bash matches to its `${`."""
    last = node.children[-1] if node.child_count else None
    return last is not None and last.type == "}" and not last.is_missing and _matched_at_end(doc.text_of(node))


_OPENERS = {"{": "}", "(": ")", "[": "]"}


def _matched_at_end(text: str) -> bool:
    """Whether bash, reading ``text`` from its opening `${`, finds the matching `}` at its last character. Followed
    as bash's parse_matched_pair does: escapes, quotes, backquotes and nested `${`, `$(`, `$[`, `<(`, `>(` (a plain
    `{` does not nest, a `(` does inside `$(`). An error tree-sitter recovered from that opened one of these would
    make bash read past the `}`: that is a syntax error of the file, not a word rlhf-lint misread."""
    closers: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        top = closers[-1] if closers else ""
        if ch == "\\":
            i += 2
            continue
        if (ch == "$" and i + 1 < n and text[i + 1] in _OPENERS) or (ch in "<>" and text.startswith("(", i + 1)):
            closers.append(_OPENERS[text[i + 1]])
            i += 2
            continue
        if ch == top:
            closers.pop()
            if not closers:
                return i == n - 1
        elif ch == "`":
            i = _quote_end(text, i, "`")
        elif top == '"':
            pass
        elif ch == "'":
            i = _quote_end(text, i, "'")
        elif ch == '"':
            closers.append('"')
        elif ch in "([" and top == _OPENERS[ch]:
            closers.append(top)
        if i < 0:
            return False
        i += 1
    return False


def _quote_end(text: str, i: int, quote: str) -> int:
    """The offset of the quote closing the one at ``i`` (backquotes honour escapes), or -1."""
    j = i + 1
    while True:
        j = text.find(quote, j)
        if j < 0 or quote == "'" or text[j - 1] != "\\":
            return j
        j += 1


# a reserved word as bash delimits it: between blanks or operators
_WORD_DELIMITER = rb"(?:^|(?<=[\s;&|()<>`]))%s(?=$|[\s;&|()<>`])"

# what closes each opener tree-sitter leaves as a loose token of an ERROR node when it finds no closer for it
_CLOSERS = {"if": "fi", "case": "esac", "for": "done", "select": "done", "while": "done", "until": "done",
            "{": "}", "${": "}", "(": ")", "$(": ")", "<(": ")", ">(": ")", "((": "))", "$((": "))", "[[": "]]",
            '"': '"', "`": "`"}


def _unclosed(doc: _Doc, node) -> tuple[str, int, int] | None:
    """The innermost opener tree-sitter left unclosed among the tokens of the ERROR ``node``, as (message, start,
    end) at the opener, when bash cannot close it either: its closer occurs nowhere after it in the file (bash
    then fails at the end of the file). None when the tokens show none, or a closer follows that tree-sitter may
    have misread (a case item without its `;;` makes it read `esac` as a command)."""
    openers = []
    for child in node.children:
        if child.is_named:  # a whole command, word or expansion: balanced
            continue
        if openers and child.type == _CLOSERS[openers[-1].type]:
            openers.pop()
        elif child.type in _CLOSERS:
            openers.append(child)
    if not openers:
        return None
    opener = openers[-1]
    closer = _CLOSERS[opener.type]
    if _occurs_after(doc, closer, opener.end_byte):
        return None
    return (f"syntax error: {opener.type!r} is never closed (missing {closer!r})", doc.char(opener.start_byte),
            doc.char(opener.end_byte))


_KEYWORD_CLOSERS = {word: lazy_compile(_WORD_DELIMITER % word.encode()) for word in ("fi", "esac", "done")}


def _occurs_after(doc: _Doc, closer: str, byte: int) -> bool:
    """Whether ``closer`` occurs in the file after ``byte``: as a word for a keyword, anywhere for punctuation."""
    keyword = _KEYWORD_CLOSERS.get(closer)
    if keyword is not None:
        return keyword.search(doc.data, byte) is not None
    return doc.data.find(closer.encode(), byte) >= 0


# Reserved words that end or continue a compound command, and the constructs they belong to. tree-sitter-bash reads
# one that has nothing to end or continue as the name of a command (a `fi` left over after an edit); bash stops
# there with "syntax error near unexpected token".
_RESERVED_GROUPS = {"if": ("if",), "then": ("if",), "elif": ("if",), "else": ("if",), "fi": ("if",),
                    "case": ("case",), "esac": ("case",), "in": ("case", "loop"), "for": ("loop",),
                    "select": ("loop",), "while": ("loop",), "until": ("loop",), "do": ("loop",), "done": ("loop",),
                    "{": ("{",), "}": ("{",)}
_CLOSING_WORDS = {"fi", "esac", "done", "}"}
_ENDING_WORDS = _CLOSING_WORDS | {"then", "elif", "else", "in", "do"}
_OPENING_WORDS = set(_RESERVED_GROUPS) - _ENDING_WORDS
_OPENING_WORD = lazy_compile(_WORD_DELIMITER % (b"(?:" + b"|".join(w.encode().replace(b"{", rb"\{")
                                                                  for w in sorted(_OPENING_WORDS)) + b")"))


def _stray_reserved_word(doc: _Doc) -> tuple[str, int, int] | None:
    """The first command named by a reserved word that ends or continues nothing, as (message, start, end).
    An opening word counts wherever tree-sitter put it but in a comment: it reads one after `time`, `!` or
    `coproc` as a plain word (`time for ...; do ...; done`), and a quote it misreads can swallow one into a string.
    Only text before tree-sitter's first ERROR is read: past it, its recovery may have read a keyword as a command
    (`esac` after a case item without its `;;`). One walk of the tree and one scan of the text: linear."""
    ending, keywords, comments = _structure_before_error(doc)
    if not ending:
        return None
    openings = (m for m in _OPENING_WORD.finditer(doc.data, 0, ending[-1].start_byte)
                if m.start() not in keywords and not _inside(comments, m.start()))
    open_words = dict.fromkeys(("if", "case", "loop", "{"), 0)
    opening = next(openings, None)
    for node in ending:
        while opening is not None and opening.start() < node.start_byte:
            open_words[_RESERVED_GROUPS[opening.group().decode()][0]] += 1
            opening = next(openings, None)
        word = doc.text_of(node)
        owner = next((group for group in _RESERVED_GROUPS[word] if open_words[group]), None)
        if owner is None:
            return (f"syntax error near unexpected token {word!r}", doc.char(node.start_byte),
                    doc.char(node.end_byte))
        if word in _CLOSING_WORDS:
            open_words[owner] -= 1
    return None


def _structure_before_error(doc: _Doc) -> tuple[list, set[int], list[tuple[int, int]]]:
    """In document order up to tree-sitter's first ERROR node (also one it does not flag with has_error): the
    first words of simple commands that are ending reserved words (not after an assignment or a redirection: `x=1
    fi` runs a command named fi), where the opening keywords tree-sitter parsed as such start (their constructs
    are whole), and the byte ranges of comments. Text bash parses only when it runs it (`...`, heredoc bodies) is
    skipped."""
    ending: list = []
    keywords: set[int] = set()
    comments: list[tuple[int, int]] = []
    cursor = doc.tree.root_node.walk()
    while True:
        node = cursor.node
        t = node.type
        if t == "ERROR":
            break
        skip = t in ("comment", "heredoc_body") or (t == "command_substitution" and node.child(0).type == "`")
        if t == "comment":
            comments.append((node.start_byte, node.end_byte))
        elif t in _OPENING_WORDS and not node.is_named:
            keywords.add(node.start_byte)
        elif t == "command":  # (a node's parent or sibling costs a walk from the root: only children are read)
            word = _first_word(node)
            # tree-sitter may cut a word inside a multi-byte character (a stray byte-order mark): compare, never fail
            text = doc.data[word.start_byte:word.end_byte].decode(errors="replace") if word is not None else None
            if text in _ENDING_WORDS:
                ending.append(word)
        if not skip and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return ending, keywords, comments
    return ending, keywords, comments


def _first_word(command):
    """The plain word a simple command starts with, when its name comes first and is one."""
    name = command.named_child(0)
    if name is None or name.type != "command_name" or name.child_count != 1:
        return None
    word = name.child(0)
    return word if word.type == "word" else None


def _inside(ranges: list[tuple[int, int]], byte: int) -> bool:
    """Whether ``byte`` lies in one of the ordered, disjoint ``ranges``."""
    i = bisect_right(ranges, (byte, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= byte < ranges[i][1]


def _describe_error(doc: _Doc, node) -> tuple[str, int, int]:
    if node.is_missing:
        start = doc.char(node.start_byte)
        return (f"syntax error: missing {node.type!r}", start, start)
    first_byte = _error_start(node)
    start = doc.char(first_byte)
    text = doc.slice(first_byte, node.end_byte)
    first = text.strip().splitlines()[0][:40] if text.strip() else ""
    end = doc.char(first_byte + len(text.split("\n")[0].encode("utf-8")))
    return (f"syntax error near {first!r}" if first else "syntax error", start, max(start + 1, end))


# what an ERROR node may begin with that is whole: tree-sitter puts the statements before the error into it too
_WHOLE_STATEMENTS = {"comment", "command", "variable_assignment", "variable_assignments", "declaration_command",
                     "unset_command", "redirected_statement", "list", "pipeline", "negated_command", "subshell",
                     "compound_statement", "if_statement", "case_statement", "for_statement",
                     "c_style_for_statement", "while_statement", "function_definition", ";", "&"}


def _error_start(node) -> int:
    """Where the ERROR ``node`` goes wrong: at its first child that is not a whole statement."""
    return next((child.start_byte for child in node.children if child.type not in _WHOLE_STATEMENTS),
                node.start_byte)


def _error_node(doc: _Doc, node, state: tuple):
    """The first, innermost ERROR or MISSING node in ``node`` that is not in a misread word (the innermost one
    points at the offending token)."""
    for child, inner in _inner(doc, node, state):
        if child.is_missing or child.type == "ERROR":
            if _misread(doc, child, inner) or _tolerated(doc, child):
                continue
            return child if child.is_missing else _error_node(doc, child, inner) or child
        found = _error_node(doc, child, inner)
        if found is not None:
            return found
    return None


# ---------------------------------------------------------------------------------------------------------------
# hardware comment
# ---------------------------------------------------------------------------------------------------------------
def _hardware_comment(text: str):
    return HARDWARE_RE.search(text) if "rlhf-lint" in text else None


def _words_of(m) -> list[tuple[str, str, Span]]:
    items = []
    for word in _WORD.finditer(m.group("body")):
        key, _eq, value = word.group(0).partition("=")
        start = m.start("body") + word.start()
        items.append((key.lower().replace("_", "-"), value, Span(start, start + len(word.group(0)))))
    return items


def hardware_items(text: str) -> list[tuple[str, str, Span]]:
    """Each word of the `# rlhf-lint: hardware ...` comment as (key, value, where): the key lowercased with `_` as
    `-`; the value "" when the word has no `=`. Keys and values are checked by the configuration's rules
    (rlhf_lint.engine.config.Hardware.checked; M008 reports the refused ones)."""
    m = _hardware_comment(text)
    return _words_of(m) if m else []


def declared_hardware(items: list[tuple[str, str, Span]]) -> dict:
    """The words of ``hardware_items`` with a known key and a value, as {key: value} (the last one of a key wins),
    not yet checked (Config.hardware_for keeps the valid values)."""
    return {key: value for key, value, _span in items if key in HARDWARE_KEYS and value}


def parse_hardware(text: str) -> tuple[dict, Span | None]:
    """`# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 ...` -> ({"gpu": "A100-80GB", "gpus-per-node": "8"},
    the comment's span): declared_hardware of its words."""
    m = _hardware_comment(text)
    return (declared_hardware(_words_of(m)), Span(m.start(), m.end())) if m else ({}, None)


# ---------------------------------------------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------------------------------------------
def read_script(source: Source, resolve: Callable[[str, str], Source | None] | None = None) -> ShellScript:
    script = ShellScript(path=source.path)
    doc = _Doc(source.text, source.path, source=source)
    script.doc = doc
    script.syntax_error, unparsed = _syntax_errors(doc)
    script.unparsed = [Span(start, end) for start, end in unparsed]
    evaluator = _Evaluator(script, source, resolve)
    evaluator.run(doc, doc.tree.root_node)
    script.variables = evaluator.env
    declared, script.hardware_span = parse_hardware(source.text)
    script.hardware = {**source.shell_hardware, **declared}
    return script


def parse_shell_source(source: Source) -> ShellScript:
    script = read_script(source)
    if script.syntax_error is not None:
        message, start, end = script.syntax_error
        raise ParseError(message, start, end)
    return script


def script_of(source: Source, project=None) -> ShellScript | None:
    script = source.tree if isinstance(source.tree, ShellScript) else None
    if script is None:
        if source.kind != "shell" or source.parse_error is not None or source.skipped:
            return None  # a script over its bound (F004) is not evaluated here either
        cached = getattr(source, "_shell_script", None)
        if cached is None:
            try:
                cached = read_script(source)
            except OverBounds:
                return None
            source._shell_script = cached
        script = cached
    if project is None or not script.sourced:
        return script
    if script._with_project is None:
        # a configuration file marks the repository; without one, the root would be the working directory, and a
        # tree linted from elsewhere would lose its sourced files (project.resolve only finds checked files)
        config = project.config
        root = os.path.realpath(config.root) if getattr(config, "path", None) else None

        def resolve(from_path: str, reference: str) -> Source | None:
            found = project.resolve(from_path, reference)
            if found is None or found.kind != "shell":
                return None
            real = os.path.realpath(found.path)
            if root is not None and not within(real, (root,)):
                return None  # never read outside the repository
            return found

        try:
            script._with_project = read_script(source, resolve)
        except OverBounds:  # parsed once within the budget, not the second time: keep the first reading
            script._with_project = script
    return script._with_project
