"""`rlhf-lint server` end to end: the server runs as a subprocess and this test speaks LSP JSON-RPC to it over stdio
(initialize, didOpen, publishDiagnostics, codeAction, didChange, shutdown/exit). The check command never imports
pygls."""
import json
import os
import subprocess
import sys
import threading
import queue

BAD = '{\n  "train_micro_batch_size_per_gpu": 2,\n  "zero_optimization": {"stage": 2, "overlap_com": true},\n' \
      '  "fp16": {"enabled": true},\n  "bf16": {"enabled": true}\n}\n'


class Client:
    def __init__(self, cwd):
        env = dict(os.environ)
        self.proc = subprocess.Popen([sys.executable, "-m", "rlhf_lint", "server"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self.messages.put(json.loads(out.read(int(headers["content-length"]))))

    def send(self, payload):
        body = json.dumps(payload).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)

    def wait(self, match, timeout=60):
        while True:
            message = self.messages.get(timeout=timeout)
            if match(message):
                return message

    def diagnostics(self, uri):
        got = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
        return got["params"]["diagnostics"]


def test_language_server_over_stdio(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    # the project context on disk: its configuration turns D012 off, so the buffer's fp16+bf16 is not reported
    (project / "rlhf-lint.toml").write_text('ignore = ["D012"]\n')
    config = project / "ds_config.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 2}\n')  # on disk: clean; the editor holds BAD
    uri = config.as_uri()
    client = Client(project)
    try:
        init = client.request("initialize", {"processId": os.getpid(), "rootUri": project.as_uri(),
                                             "capabilities": {}})
        caps = init["result"]["capabilities"]
        assert caps["codeActionProvider"] and caps["textDocumentSync"]
        client.notify("initialized", {})
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "json", "version": 1,
                                                                "text": BAD}})
        diags = client.diagnostics(uri)
        assert [d["code"] for d in diags] == ["D001"]
        (d001,) = diags
        assert d001["range"]["start"] == {"line": 2, "character": BAD.splitlines()[2].index('"overlap_com"')}
        assert d001["severity"] == 1 and d001["source"] == "rlhf-lint"
        assert d001["codeDescription"]["href"].endswith("#d001-" + d001["data"]["name"])

        reply = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": d001["range"], "context": {"diagnostics": [d001]}})
        (action,) = reply["result"]
        assert action["kind"] == "quickfix" and action["isPreferred"] is True
        (edit,) = action["edit"]["changes"][uri]
        lines = BAD.splitlines()
        start, end = edit["range"]["start"], edit["range"]["end"]
        fixed = lines[start["line"]][:start["character"]] + edit["newText"] + lines[end["line"]][end["character"]:]
        assert '"overlap_comm": true' in fixed

        # the edited text is linted again: the fix applied, nothing left
        fixed_text = BAD.replace('"overlap_com"', '"overlap_comm"')
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": fixed_text}]})
        assert client.diagnostics(uri) == []
        # on save too: the editor's text (not the file on disk) is what is linted
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                                 "contentChanges": [{"text": BAD}]})
        assert [d["code"] for d in client.diagnostics(uri)] == ["D001"]
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert [d["code"] for d in client.diagnostics(uri)] == ["D001"]

        assert client.request("shutdown", None)["result"] is None
        client.notify("exit", None)
        assert client.proc.wait(timeout=30) == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


def test_unsafe_fixes_are_marked_and_never_preferred(tmp_path):
    from lsprotocol import types

    from rlhf_lint.cli.server import code_actions
    from rlhf_lint.model import Applicability, Diagnostic, Edit, Fix, Position, Severity, Span

    text = "a\nbé😀c\n"
    fix = Fix("make it d", (Edit(4, 5, "d"),), Applicability.UNSAFE)  # replaces the emoji
    d = Diagnostic("D002", "x", Severity.WARNING, "m", "f.json", Span(4, 5), Position(2, 3), Position(2, 4), fix)
    everywhere = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=9, character=0))
    (action,) = code_actions("file:///f.json", text, [d], everywhere)
    assert action.is_preferred is False and "unsafe" in action.title
    # one code point for the linter, two UTF-16 code units for the editor
    (edit,) = action.edit.changes["file:///f.json"]
    assert (edit.range.start, edit.range.end) == (types.Position(line=1, character=2), types.Position(line=1, character=4))


def test_the_check_command_does_not_import_pygls(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 2}\n')
    code = ("import sys; from rlhf_lint.cli.entry import main\n"
            "try:\n    main(['--no-cache', '.'])\nexcept SystemExit: pass\n"
            "print('pygls' in sys.modules, 'lsprotocol' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "False False"
