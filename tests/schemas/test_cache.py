"""rlhf_lint.schemas.load keeps parsed knowledge files in marshal format in the cache directory: the same data
comes back, and a damaged, foreign or unwritable cache only means parsing the JSON again."""
from __future__ import annotations

import json
import os

from rlhf_lint import schemas


def _load_fresh(name):
    schemas.load.cache_clear()
    try:
        return schemas.load(name)
    finally:
        schemas.load.cache_clear()


def test_cached_copy_equals_the_json_and_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHF_LINT_CACHE_DIR", str(tmp_path))
    with open(schemas.path("gpus.json"), encoding="utf-8") as fh:
        expected = json.load(fh)
    assert _load_fresh("gpus.json") == expected
    written = [os.path.join(d, f) for d, _, files in os.walk(tmp_path / "knowledge") for f in files]
    assert len(written) == 1 and written[0].endswith(".marshal")
    assert _load_fresh("gpus.json") == expected  # read back from the cache
    with open(written[0], "wb") as fh:  # damaged: parsed from the JSON again, and rewritten
        fh.write(b"\xff\x00garbage")
    assert _load_fresh("gpus.json") == expected
    with open(written[0], "wb") as fh:
        import marshal

        fh.write(marshal.dumps("a string, not a schema"))
    assert _load_fresh("gpus.json") == expected


def test_unwritable_cache_directory_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    monkeypatch.setenv("RLHF_LINT_CACHE_DIR", str(blocker))
    assert _load_fresh("models.json")["models"]


def test_repeated_strings_are_written_once(tmp_path, monkeypatch):
    import marshal

    monkeypatch.setenv("RLHF_LINT_CACHE_DIR", str(tmp_path))
    name = "openrlhf/clis/train_ppo_ray.json"
    with open(schemas.path(name), encoding="utf-8") as fh:
        expected = json.load(fh)
    assert _load_fresh(name) == expected
    (written,) = [os.path.join(d, f) for d, _, files in os.walk(tmp_path / "knowledge") for f in files]
    assert os.path.getsize(written) < 0.7 * len(marshal.dumps(expected))  # a source URL is stored once, not 142 times
    cached = _load_fresh(name)
    assert cached == expected
    sources = {id(row["source"]) for row in cached["renames"]}
    assert len(sources) == len({row["source"] for row in cached["renames"]})
