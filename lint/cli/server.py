"""`rlhf-lint server`: a Language Server Protocol server (pygls, the optional extra `lsp`) over stdio.

It publishes diagnostics when a file the linter reads (ds_config and other JSON, shell, YAML, Python, requirements)
is opened, changed or saved, and offers each fix as a quick-fix code action (unsafe ones say so and are never the
preferred action). The editor's text is linted in the context of the file on disk: its configuration (nearest
rlhf-lint.toml / pyproject.toml) and the other files of its repository (the ds_config a launch names, the pins).

pygls is imported only by `serve()`: the check command never pays for it (tests/cli/test_server.py holds this).
"""
from __future__ import annotations

import os

import click

from rlhf_lint import __version__

EXIT_ERROR = 2


def _project_items(path: str, workspace_root: str | None, exclude: list[str]) -> tuple[tuple, list[tuple[str, bool]]]:
    """The real folder the files are read under, and the files checked with ``path``: its repository (nearest folder
    with a marker, as the CLI's groups), else the editor's workspace folder holding it, else its own folder;
    ``path`` itself always, first."""
    from rlhf_lint.engine.discovery import discover
    from rlhf_lint.engine.groups import partition, repository_root

    folder = os.path.dirname(path)
    root = repository_root(folder, {})
    if not root:
        inside = workspace_root and (folder + os.sep).startswith(os.path.join(workspace_root, ""))
        root = workspace_root if inside else folder
    items = [(path, True)] + [(os.path.abspath(p), False) for p, _ in discover([root], exclude)
                              if os.path.abspath(p) != path]
    roots = (os.path.realpath(root),)  # a symlink out of it is not read, as in the CLI
    group = next(g for g in partition(items, root, roots) if any(p == path for p, _ in g))
    return roots, group


def lint_buffer(path: str, text: str, workspace_root: str | None = None):
    """Diagnostics of ``path`` with ``text`` in place of its bytes on disk, and the project's Sources by path (for
    the positions of related locations). ``([], {})`` for a file the linter does not read. Raises ConfigError."""
    from rlhf_lint.engine.config import find_config_file, load_config
    from rlhf_lint.engine.runner import (Options, check_project, filter_suppressed, project_of, read_group,
                                         selected_rules)
    from rlhf_lint.readers.kinds import kind_from_content, kind_from_name
    from rlhf_lint.readers.source import Source

    path = os.path.abspath(path)
    raw = text.encode("utf-8")
    kind = kind_from_name(os.path.basename(path)) or kind_from_content(raw)
    if kind is None:
        return [], {}
    config = load_config(find_config_file(path))
    rules = selected_rules(config, Options())
    roots, items = _project_items(path, workspace_root, config.exclude)
    sources, unreadable, _ = read_group(items, roots)
    sources = [s for s in sources if s.path != path]
    unreadable = [u for u in unreadable if u.path != path]
    sources.insert(0, Source.from_text(path, text, kind=kind))
    project = project_of(sources, config)
    diagnostics = filter_suppressed(project, check_project(project, unreadable, rules), rules)
    return [d for d in diagnostics if d.path == path], dict(project.sources)


# -- positions: the linter counts code points, LSP counts UTF-16 code units --------------------------------------
def _utf16_position(text: str, offset: int):
    from lsprotocol import types

    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line = text.count("\n", 0, line_start)
    return types.Position(line=line, character=len(text[line_start:offset].encode("utf-16-le")) // 2)


def _range(text: str, start: int, end: int):
    from lsprotocol import types

    return types.Range(start=_utf16_position(text, start), end=_utf16_position(text, end))


def _offsets(text: str, d) -> tuple[int, int]:
    if d.span is not None:
        return d.span.start, d.span.end
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    def at(p):
        return starts[min(p.line, len(starts)) - 1] + p.column - 1
    return at(d.start), at(d.end)


def to_lsp(d, text: str, sources: dict):
    """An lsprotocol Diagnostic for one of ours: the rule's page as codeDescription, related spans as
    relatedInformation."""
    from lsprotocol import types
    from pygls.uris import from_fs_path

    from rlhf_lint.engine.registry import REGISTRY

    severity = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
                "info": types.DiagnosticSeverity.Information}[d.severity.label]
    rule = REGISTRY.get(d.code)
    related = []
    for r in d.related:
        source = sources.get(os.path.abspath(r.path))
        span = r.span
        rng = _range(source.text, span.start, span.end) if source is not None and span is not None \
            else _range("", 0, 0)
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=from_fs_path(os.path.abspath(r.path)), range=rng), message=r.message))
    return types.Diagnostic(
        range=_range(text, *_offsets(text, d)), message=d.message, severity=severity, code=d.code,
        code_description=types.CodeDescription(href=rule.url) if rule is not None else None,
        source="rlhf-lint", related_information=related or None, data={"name": d.name})


def code_actions(uri: str, text: str, diagnostics, wanted) -> list:
    """A quick fix per fixable diagnostic whose range meets ``wanted`` (an lsprotocol Range)."""
    from lsprotocol import types

    from rlhf_lint.model import Applicability

    actions = []
    for d in diagnostics:
        if d.fix is None or d.fix.applicability == Applicability.DISPLAY:
            continue
        lsp = to_lsp(d, text, {})
        if (lsp.range.end.line, lsp.range.end.character) < (wanted.start.line, wanted.start.character) or \
                (lsp.range.start.line, lsp.range.start.character) > (wanted.end.line, wanted.end.character):
            continue
        safe = d.fix.applicability == Applicability.SAFE
        edits = [types.TextEdit(range=_range(text, e.start, e.end), new_text=e.content) for e in d.fix.edits]
        actions.append(types.CodeAction(
            title=f"{d.code}: {d.fix.message}" + ("" if safe else " (unsafe fix: changes behaviour)"),
            kind=types.CodeActionKind.QuickFix, diagnostics=[lsp], is_preferred=safe,
            edit=types.WorkspaceEdit(changes={uri: edits})))
    return actions


def serve() -> None:
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer
    from pygls.uris import to_fs_path

    from rlhf_lint.engine.config import ConfigError

    server = LanguageServer("rlhf-lint", __version__)
    linted: dict[str, tuple[str, list]] = {}  # uri -> (text, our diagnostics) for code actions

    def workspace_root():
        root = server.workspace.root_path
        return os.path.abspath(root) if root else None

    def publish(uri: str) -> None:
        path = to_fs_path(uri)
        if not path:
            return
        text = server.workspace.get_text_document(uri).source
        try:
            diagnostics, sources = lint_buffer(path, text, workspace_root())
        except ConfigError as exc:
            server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                               message=f"rlhf-lint: {exc}"))
            diagnostics, sources = [], {}
        linted[uri] = (text, diagnostics)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=[to_lsp(d, text, sources) for d in diagnostics]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: types.DidOpenTextDocumentParams):
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: types.DidChangeTextDocumentParams):
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: types.DidSaveTextDocumentParams):
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: types.DidCloseTextDocumentParams):
        linted.pop(params.text_document.uri, None)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                                diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls, params: types.CodeActionParams):
        text, diagnostics = linted.get(params.text_document.uri, ("", []))
        return code_actions(params.text_document.uri, text, diagnostics, params.range)

    server.start_io()


@click.command("server")
def server() -> None:
    """Run the Language Server Protocol server on stdio (needs the `lsp` extra: pip install 'rlhf-lint[lsp]')."""
    import importlib.util
    import sys

    if importlib.util.find_spec("pygls") is None or importlib.util.find_spec("lsprotocol") is None:
        click.echo("rlhf-lint: error: the server needs pygls: pip install 'rlhf-lint[lsp]'", err=True)
        sys.exit(EXIT_ERROR)
    serve()
