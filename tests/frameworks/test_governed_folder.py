"""The folder a pin file governs, found from one set of folders per project (issue 17 throughput), is the one the
scan of every file from every parent folder found."""
from __future__ import annotations

import os
import random
from types import SimpleNamespace

from rlhf_lint.frameworks.versions import _governed_dir, _under


def _scan(project, pin_file: str) -> str:  # the search before the folder set
    paths = [s.path for s in project.sources.values() if s.kind in ("ds_config", "shell", "python", "yaml")]
    scope = os.path.dirname(os.path.abspath(pin_file))
    root = os.path.abspath(project.config.root)
    while True:
        if any(_under(p, scope) for p in paths):
            return scope
        parent = os.path.dirname(scope)
        if parent == scope or not scope.startswith(root) or scope == root:
            return scope
        scope = parent


def test_governed_folder_matches_the_scan(tmp_path):
    rng = random.Random(8)
    folders = ["", "a", "a/b", "a/b/c", "docker", "requirements", "x/y", "a/bc"]
    kinds = ["shell", "python", "yaml", "ds_config", "requirements", "dockerfile", "json"]
    for _ in range(300):
        sources = {}
        for i in range(rng.randrange(1, 8)):
            path = str(tmp_path / rng.choice(folders) / f"f{i}")
            sources[path] = SimpleNamespace(path=path, kind=rng.choice(kinds))
        project = SimpleNamespace(sources=sources, config=SimpleNamespace(root=str(tmp_path)))
        for folder in folders:
            pin = str(tmp_path / folder / "requirements.txt")
            assert _governed_dir(project, pin) == _scan(project, pin)
