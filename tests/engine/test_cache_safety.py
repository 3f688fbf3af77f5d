"""The cache folder is trusted only when it is this user's private folder, and only entries sealed with this user's
key are read: a shared or restored cache cannot hide findings, a planted marshal entry is never parsed, a planted
symlink cannot redirect a write, and --no-cache reads nothing."""
import json
import os
import stat

import pytest

from lintutil import run_lint
from rlhf_lint import cachedir, schemas
from rlhf_lint.engine import cache
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint


@pytest.fixture
def cache_folder(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("RLHF_LINT_CACHE_DIR", str(folder))
    monkeypatch.setitem(cachedir._STATE, "keys", {})
    monkeypatch.setitem(cachedir._STATE, "refused", {})
    cachedir.set_enabled(True)
    yield folder
    cachedir.set_enabled(True)
    schemas.load.cache_clear()


def _repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.json").write_text('{"a": 1 2}\n')
    return repo


def _run(repo):
    result = lint([str(repo)], Config(root=str(repo)), Options(cache=True))
    return result, [d.code for d in result.diagnostics]


def _entries(folder):
    return [os.path.join(d, f) for d, _, files in os.walk(folder / f"v{cache.FORMAT}") for f in files]


def test_the_folder_and_key_are_private(cache_folder, tmp_path):
    _run(_repo(tmp_path))
    assert stat.S_IMODE(os.stat(cache_folder).st_mode) == 0o700
    key = cache_folder / cachedir.KEY_NAME
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and os.path.getsize(key) == cachedir.KEY_BYTES
    [entry] = _entries(cache_folder)
    assert stat.S_IMODE(os.stat(entry).st_mode) == 0o600


def test_a_planted_entry_cannot_hide_findings(cache_folder, tmp_path):
    repo = _repo(tmp_path)
    assert _run(repo)[1] == ["F003"]
    [entry] = _entries(cache_folder)
    key = os.path.basename(entry)[:-5]
    forged = {"diagnostics": [], "files": 1, "messages": [], "lines": {}, "key": key}
    with open(entry, "wb") as fh:  # what an attacker without the key can write: a well-formed, unsealed entry
        fh.write(b"\0" * cachedir.MAC_BYTES + json.dumps(forged).encode())
    assert _run(repo)[1] == ["F003"]


def test_a_sealed_entry_moved_to_another_name_is_refused(cache_folder):
    schemas.load.cache_clear()
    gpus, models = schemas.load("gpus.json"), schemas.load("models.json")
    written = {f.split(".")[0]: os.path.join(d, f) for d, _, files in os.walk(cache_folder / "knowledge")
               for f in files}
    with open(written["models"], "rb") as src, open(written["gpus"], "wb") as dst:
        dst.write(src.read())  # genuine and sealed, but another file's entry
    schemas.load.cache_clear()
    assert schemas.load("gpus.json") == gpus != models


def test_a_folder_others_can_write_is_not_used(cache_folder, tmp_path):
    cache_folder.mkdir(mode=0o700)
    os.chmod(cache_folder, 0o777)
    result, codes = _run(_repo(tmp_path))
    assert codes == ["F003"] and not _entries(cache_folder)
    assert any("can be written by other users" in m for m in result.messages)


def test_a_folder_of_another_user_is_not_used(cache_folder, tmp_path, monkeypatch):
    cache_folder.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(cache_folder).st_uid + 1)
    result, codes = _run(_repo(tmp_path))
    assert codes == ["F003"] and not _entries(cache_folder)
    assert any("belongs to another user" in m for m in result.messages)


def test_a_symlinked_folder_is_not_used(cache_folder, tmp_path):
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    cache_folder.symlink_to(real)
    result, _ = _run(_repo(tmp_path))
    assert not os.listdir(real) and any("is not a folder" in m for m in result.messages)


def test_a_planted_symlink_cannot_redirect_a_write(cache_folder, tmp_path):
    repo = _repo(tmp_path)
    _run(repo)
    [entry] = _entries(cache_folder)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.unlink(entry)
    folder = os.path.dirname(entry)
    # the names a writer with predictable temporary files would use
    for name in [os.path.basename(entry), f"{os.path.basename(entry)}.{os.getpid()}.tmp"]:
        os.symlink(victim, os.path.join(folder, name))
    _run(repo)
    assert victim.read_text() == "precious\n"


def test_a_planted_knowledge_entry_is_never_parsed(cache_folder):
    import marshal

    schemas.load.cache_clear()
    real = schemas.load("gpus.json")
    [written] = [os.path.join(d, f) for d, _, files in os.walk(cache_folder / "knowledge") for f in files]
    with open(written, "wb") as fh:
        fh.write(b"\0" * cachedir.MAC_BYTES + marshal.dumps({"planted": True}))
    schemas.load.cache_clear()
    assert schemas.load("gpus.json") == real


@pytest.mark.parametrize("no_cache", [False, True])
def test_no_cache_reads_nothing_from_the_folder(cache_folder, monkeypatch, no_cache):
    from lintutil import ROOT
    from rlhf_lint.cli.check import run_check

    reads = []
    real_read = cachedir._read_private
    monkeypatch.setattr(cachedir, "_read_private", lambda *a: reads.append(a) or real_read(*a))
    schemas.load.cache_clear()
    run_check([os.path.join(ROOT, "examples")], no_cache=no_cache, quiet=True)
    # the probe sees the reads of a cached run (results and parsed knowledge), and none under --no-cache
    assert bool(reads) is not no_cache
    assert cachedir.usable(), cachedir._STATE  # the setting ends with the run


def test_fix_runs_and_no_cache_leave_the_folder_alone(cache_folder, tmp_path, shout_rule):
    f = tmp_path / "s.json"
    f.write_text('{"a": "shout"}\n')
    cachedir.set_enabled(False)
    schemas.load.cache_clear()
    run_lint([f], fix=True, extend_select=["F900"])
    assert not cache_folder.exists()
