"""Memory flat in the number of files (issue 17): the kept report is compact, read back in order, and nothing of a
checked group stays behind in a module-level cache."""
from __future__ import annotations

import functools
import importlib
import inspect
import json
import pkgutil
import random

import rlhf_lint
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.report import Diagnostics, LineIndexes, Report
from rlhf_lint.engine.runner import Options, lint
from rlhf_lint.model import Diagnostic, Position, Severity
from rlhf_lint.readers.source import LineIndex


def _diag(path: str, line: int, column: int, code: str = "D101", message: str = "m") -> Diagnostic:
    return Diagnostic(code, "name", Severity.WARNING, message, path, None, Position(line, column),
                      Position(line, column + 1))


def test_report_reads_back_in_sort_order_with_ties_in_arrival_order():
    rng = random.Random(3)
    groups = []
    for g in range(30):
        # some groups overlap (paths shared with another group), most hold one repository of their own
        paths = [f"r{g:02d}/a", f"r{g:02d}/b"] + ([f"r{g - 1:02d}/b"] if g % 7 == 0 and g else [])
        groups.append([_diag(rng.choice(paths), rng.randrange(1, 5), rng.randrange(1, 3), message=f"g{g} {i}")
                       for i in range(rng.randrange(0, 12))])
    report = Report()
    for group in groups:
        report.add(group, {})
    expected = sorted((d for group in groups for d in group), key=Diagnostic.sort_key)  # a stable sort
    got = list(Diagnostics(report))
    assert [d.message for d in got] == [d.message for d in expected]
    assert len(Diagnostics(report)) == len(expected)
    assert Diagnostics(report) == expected


def test_report_keeps_line_indexes_of_each_group():
    report = Report()
    report.add([_diag("a/x.json", 2, 1)], {"a/x.json": LineIndex("a/x.json", [0, 5, 9], 12)})
    report.add([_diag("b/y.json", 1, 1)], {"b/y.json": LineIndex("b/y.json", [0, 3], 4)})
    indexes = LineIndexes(report)
    assert set(indexes) == {"a/x.json", "b/y.json"}
    assert indexes["a/x.json"].position(6) == Position(2, 2)
    assert indexes.get("b/y.json").position(3) == Position(2, 1)
    assert indexes.get("c/z.json") is None


def _repos(root, count: int) -> list[str]:
    for i in range(count):
        repo = root / f"repo{i:03d}"
        (repo / ".git").mkdir(parents=True)
        (repo / "ds_config.json").write_text(json.dumps(
            {"train_batch_size": 8, "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}},
             "fp16": {"enabled": True}, "bf16": {"enabled": True}}))
        (repo / "train.sh").write_text(f"deepspeed --num_gpus {i % 8 + 1} train.py --deepspeed ds_config.json "
                                       "--zero_stage 3\n")
    return sorted(str(p) for p in root.iterdir())


def test_run_report_is_the_sorted_findings_of_its_groups(tmp_path):
    paths = _repos(tmp_path, 6)
    whole = lint(paths, Config(root=str(tmp_path)), Options(jobs=1))
    assert isinstance(whole.diagnostics, Diagnostics)
    got = list(whole.diagnostics)
    assert got, "the fixture has findings"
    assert got == sorted(got, key=Diagnostic.sort_key)
    one_by_one = [d for p in paths for d in lint([p], Config(root=str(tmp_path)), Options(jobs=1)).diagnostics]
    assert [(d.path, d.start, d.code, d.message) for d in got] == [
        (d.path, d.start, d.code, d.message) for d in sorted(one_by_one, key=Diagnostic.sort_key)]
    with_fixes = {d.path for d in got if d.fix is not None}
    assert with_fixes and all(whole.sources.get(p) is not None for p in with_fixes)


def _modules():
    for info in pkgutil.walk_packages(rlhf_lint.__path__, "rlhf_lint."):
        if ".build" in info.name or info.name.endswith("__main__"):
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # an optional extra (the language server) not installed
            continue


# caches without a size bound whose keys come from a set the package itself fixes, not from the files checked
BOUNDED_BY_THE_PACKAGE = {
    "rlhf_lint.schemas.load": "one entry per knowledge file shipped in schemas/",
    "rlhf_lint.memory.catalog._arch_at": "one entry per model of the shipped catalog",
}


def test_every_functools_cache_keyed_by_input_has_a_maxsize():
    unbounded = []
    for module in _modules():
        for name, obj in vars(module).items():
            info = getattr(obj, "cache_info", None)
            if info is None or getattr(obj, "__module__", None) != module.__name__:
                continue
            wrapped = inspect.unwrap(obj)
            takes_arguments = bool(inspect.signature(wrapped).parameters)
            qualified = f"{module.__name__}.{name}"
            if takes_arguments and info().maxsize is None and qualified not in BOUNDED_BY_THE_PACKAGE:
                unbounded.append(qualified)
        for cls in [v for v in vars(module).values() if inspect.isclass(v) and v.__module__ == module.__name__]:
            for name, attr in vars(cls).items():
                if isinstance(attr, functools._lru_cache_wrapper) and attr.cache_info().maxsize is None:
                    unbounded.append(f"{module.__name__}.{cls.__name__}.{name}")
    assert not unbounded, f"caches that grow with the input without bound: {unbounded}"


def _module_state() -> dict[str, int]:
    sizes = {}
    for module in _modules():
        for name, obj in vars(module).items():
            if isinstance(obj, (dict, list, set)):
                sizes[f"{module.__name__}.{name}"] = len(obj)
    return sizes


def test_module_level_state_does_not_grow_with_the_groups_checked(tmp_path):
    paths = _repos(tmp_path, 48)
    config = Config(root=str(tmp_path))
    lint(paths[:8], config, Options(jobs=1))
    before = _module_state()
    lint(paths[8:], config, Options(jobs=1))  # five times as many groups
    after = _module_state()
    grown = {k: (before.get(k, 0), n) for k, n in after.items() if n > before.get(k, 0) + 16}
    assert not grown, f"module-level state that grows with the number of groups: {grown}"


def test_later_groups_are_compressed_against_the_first_ones_and_read_back_whole():
    import pickle
    import zlib

    report = Report()
    groups = []
    for g in range(120):
        path = f"repo{g:03d}/train.sh"
        group = [Diagnostic("D012", "fp16-and-bf16-both-enabled", Severity.ERROR,
                            f"fp16 and bf16 are both enabled in repo {g}, line {i}", path, None,
                            Position(i + 1, 3), Position(i + 1, 9), source_line=f"  --bf16 --fp16 # {i}")
                 for i in range(8)]
        groups.append(group)
        report.add(group, {path: LineIndex(path, [0, 20, 41], 60)})
    blobs = [blob for _first, _last, blob in report._groups]
    with_dictionary = [b for b in blobs if b[1] & 0x20]  # RFC 1950: FDICT
    assert 0 < len(with_dictionary) < len(blobs)  # the first groups make the dictionary of the later ones
    alone = sum(len(zlib.compress(pickle.dumps((g, {}), protocol=pickle.HIGHEST_PROTOCOL), 6)) for g in groups)
    assert sum(map(len, blobs)) < alone * 0.5  # measured 0.24
    assert list(Diagnostics(report)) == sorted((d for g in groups for d in g), key=Diagnostic.sort_key)
    assert LineIndexes(report)["repo119/train.sh"].position(45) == Position(3, 5)


def test_digests_are_a_set():
    import hashlib
    import sys

    from rlhf_lint.engine.digests import Digests

    digests = [hashlib.blake2b(str(i).encode(), digest_size=16).digest() for i in range(5000)]
    kept = Digests()
    for d in digests[:4000]:
        kept.add(d)
        kept.add(d)
    kept.add(bytes(16))  # the all-zero digest is a digest too, not an empty slot
    assert len(kept) == 4001
    assert all(d in kept for d in digests[:4000]) and not any(d in kept for d in digests[4000:])
    assert bytes(16) in kept
    # one table of 16-byte slots, at most three times as many as entries: well under a set of bytes objects
    held = sys.getsizeof(kept._table)
    as_set = sys.getsizeof(set(digests[:4000])) + sum(sys.getsizeof(d) for d in digests[:4000])
    assert held < 4001 * 16 * 3 and held < as_set * 0.6


def test_discovery_holds_little_besides_the_paths_it_yields(tmp_path):
    import tracemalloc

    from rlhf_lint.engine.config import Configs
    from rlhf_lint.engine.discovery import Exclusions, discover

    (tmp_path / ".git").mkdir()  # git's answers are asked (no .gitignore: nothing ignored)
    for folder in range(40):
        sub = tmp_path / f"repo{folder:02d}" / "scripts"
        sub.mkdir(parents=True)
        for i in range(50):
            (sub / f"train_{i:02d}.sh").write_bytes(b"")
    tracemalloc.start()
    try:
        found = list(discover([str(tmp_path)], [], Exclusions(Configs(fixed=Config(root=str(tmp_path))))))
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(found) == 2000
    # besides the 2,000 (path, explicit) pairs it yields: what it remembers of each file while walking (real paths
    # as 16-byte digests; git's answers for folders only). Measured: ~100 bytes a file, most of it the digest
    # table while it doubles; with sets of the strings, ~390
    assert (peak - kept) / len(found) < 160, (peak, kept)


def test_folder_memos_are_bounded_and_answer_the_same_once_emptied(tmp_path, monkeypatch):
    from rlhf_lint.engine import ancestors
    from rlhf_lint.engine.gitignore import GitIgnore

    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*.log\nout/\n")
    folders = []
    for i in range(30):
        sub = tmp_path / f"r{i:02d}" / ("out" if i % 3 == 0 else "src")
        sub.mkdir(parents=True)
        (sub / ".gitignore").write_text("!keep.log\n" if i % 2 else "")
        folders.append(sub)
    cases = [(str(sub / name), sub.name == "out" or (name == "a.log" or (name == "keep.log" and i % 2 == 0)))
             for i, sub in enumerate(folders) for name in ("a.log", "keep.log", "x.sh")]
    unbounded = GitIgnore()
    assert [unbounded.ignored(path) for path, _ in cases] == [want for _, want in cases]
    monkeypatch.setattr(ancestors, "MAX_MEMO", 5)
    bounded = GitIgnore()
    assert [bounded.ignored(path) for path, _ in cases] == [want for _, want in cases]
    assert max(len(bounded._worktree), len(bounded._files), len(bounded._answers)) <= 5
    memo: dict = {}
    assert [ancestors.nearest(str(sub), memo, lambda f: f if f == str(tmp_path) else None, None)
            for sub in folders] == [str(tmp_path)] * 30
    assert 0 < len(memo) <= 5
