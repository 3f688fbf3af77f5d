"""Helpers of the shell rules: which variables a script assigns, read from its syntax tree."""
from __future__ import annotations

# builtins whose identifier arguments become variables (`read -r a b`, `getopts "x:" opt`, `mapfile -t lines`,
# `printf -v out`, `let n=1`): every such argument counts, an over-count only spares findings
_ASSIGNING_BUILTINS = frozenset({"read", "getopts", "mapfile", "readarray", "printf", "let", "export", "declare",
                                 "local", "typeset", "readonly"})
# commands after which any name may be set: the rules that need the full set of names give up on such a script
_DYNAMIC = frozenset({"eval", "compgen", "set"})


class Assignments:
    """The names a script (and the files it sources inside the repository) assigns anywhere, in any branch, with
    the first line each is assigned on; ``complete`` is False when something may set names the tree does not show
    (`eval`, `set -a`, a sourced file that cannot be read)."""

    def __init__(self) -> None:
        self.first_line: dict[str, int] = {}
        self.complete = True

    def add(self, name: str, line: int) -> None:
        if name not in self.first_line or line < self.first_line[name]:
            self.first_line[name] = line


def _identifier(text: str) -> bool:
    return text.isascii() and text.isidentifier()


def _collect(doc, out: Assignments, same_file: bool) -> None:
    stack = [doc.tree.root_node]
    while stack:
        node = stack.pop()
        t = node.type
        line = node.start_point[0] + 1 if same_file else 0
        if t == "variable_assignment":
            name = node.child_by_field_name("name")
            if name is not None and name.type == "subscript":
                name = name.child_by_field_name("name")
            if name is not None:
                out.add(doc.text_of(name), line)
        elif t == "for_statement":
            var = node.child_by_field_name("variable")
            if var is not None:
                out.add(doc.text_of(var), line)
        elif t == "ERROR":  # a loose name: an assignment or loop variable tree-sitter took apart (as the reader)
            for child in node.named_children:
                if child.type == "variable_name":
                    out.add(doc.text_of(child), child.start_point[0] + 1 if same_file else 0)
        elif t in ("declaration_command", "unset_command"):
            for child in node.named_children:
                if child.type == "variable_name":
                    out.add(doc.text_of(child), line)
                elif child.type in ("command_substitution", "expansion", "simple_expansion", "string"):
                    out.complete = False  # `export $(grep -v '^#' .env | xargs)`: names made at run time
        elif t in ("arithmetic_expansion", "compound_statement") and doc.text_of(node).startswith(("((", "$((")):
            for sub in _descendants(node):
                if sub.type == "variable_name":  # `(( n = 1 ))`: counted as assigned, whatever the operator
                    out.add(doc.text_of(sub), line)
        elif t == "command":
            name = node.child_by_field_name("name")
            word = doc.text_of(name).strip() if name is not None else ""
            if word in _DYNAMIC:
                args = [doc.text_of(c) for c in node.children_by_field_name("argument")]
                if word != "set" or any(a.startswith("-") and "a" in a.lstrip("-") for a in args):
                    out.complete = False  # `eval`, `compgen -v`, `set -a` (allexport)
            elif word in _ASSIGNING_BUILTINS:
                for arg in node.children_by_field_name("argument"):
                    text = doc.text_of(arg).strip("'\"").split("=", 1)[0]
                    if _identifier(text):
                        out.add(text, line)
                    elif text.startswith(("$", "`")):
                        out.complete = False  # `export $(grep -v '^#' .env | xargs)`: names read at run time
        stack.extend(node.children)


def _descendants(node):
    stack = list(node.children)
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def assignments(source, project) -> Assignments | None:
    """The names ``source`` assigns, with those of the files it sources inside the repository; None when the
    script was not parsed."""
    from rlhf_lint.readers.shell import script_of

    script = script_of(source)
    if script is None or script.doc is None:
        return None
    cache = getattr(script, "_assignments", None)
    if cache is not None:
        return cache
    out = Assignments()
    _collect(script.doc, out, True)
    if script.sourced_unread:
        out.complete = False  # a file sourced by a path the reader cannot know: any name may come from it
    for reference in script.sourced:
        found = project.resolve(source.path, reference) if project is not None else None
        sub = script_of(found) if found is not None and found.kind == "shell" else None
        if sub is None or sub.doc is None or sub.sourced:
            out.complete = False  # names we cannot see (a file outside the repository, or sourcing more)
            continue
        _collect(sub.doc, out, False)
    script._assignments = out
    return out


def sourced_by_others(source, project) -> bool:
    """Whether another shell file of the project sources this one (its variables may then come from that file): a
    `source` / `.` whose reference resolves to it, or, when the reference cannot be read (`"$(dirname "$0")/x.sh"`),
    ends in its file name."""
    import os

    if project is None:
        return False
    targets = getattr(project, "_sourced_targets", None)
    if targets is None:
        targets = set()
        for other in project.of_kind("shell"):
            targets.update(_sourced_references(other, project))
        project._sourced_targets = targets
    return os.path.realpath(source.path) in targets or "name:" + os.path.basename(source.path) in targets


def _sourced_references(other, project) -> set[str]:
    """Real paths of the files ``other`` sources, and "name:" + the last path component of every reference, readable
    or not."""
    import os
    from rlhf_lint.readers.shell import script_of

    script = script_of(other)
    if script is None:
        return set()
    out = set()
    for reference in script.sourced:
        found = project.resolve(other.path, reference)
        if found is not None:
            out.add(os.path.realpath(found.path))
    for written in script.sourced + script.sourced_unread:
        out.add("name:" + written.strip("'\"").rsplit("/", 1)[-1])
    return out
