"""README.md's Usage and configuration examples name only rules and subcommands that exist: a reader who copies
`rlhf-lint rule D101` must not get "no rule"."""
from __future__ import annotations

import os
import re
import subprocess

from lintutil import ROOT
from rlhf_lint.cli.app import main
from rlhf_lint.engine.registry import REGISTRY

# a rule code, not a GPU name such as A100-80GB
CODE_RE = re.compile(r"\b([A-Z][0-9]{3})\b(?!-)")
# `rlhf-lint WORD ...`: WORD is a subcommand when it reads like one (not an option, a path or a file name)
SUBCOMMAND_RE = re.compile(r"(?<![\w./-])rlhf-lint[ \t]+([a-z][a-z-]*)(?=\s|$)", re.MULTILINE)


def code_text(markdown: str) -> list[str]:
    """The fenced code blocks and inline code spans of a Markdown text."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", markdown, re.DOTALL | re.MULTILINE)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", markdown, flags=re.DOTALL | re.MULTILINE)
    return blocks + re.findall(r"`([^`\n]+)`", rest)


def readme_code() -> list[str]:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        return code_text(fh.read())


def test_code_text_finds_blocks_and_spans_only():
    text = "D999 in prose\n```bash\nrlhf-lint rule D101   # x\n```\nsee `--ignore D105` and `A100-80GB`\n"
    found = code_text(text)
    assert found == ["rlhf-lint rule D101   # x\n", "--ignore D105", "A100-80GB"]
    assert [m for t in found for m in CODE_RE.findall(t)] == ["D101", "D105"]
    assert SUBCOMMAND_RE.findall(found[0]) == ["rule"]
    assert SUBCOMMAND_RE.findall("rlhf-lint train.sh; rlhf-lint examples/; rlhf-lint --fix .; x/rlhf-lint env") == []


def test_every_rule_code_in_readme_exists():
    codes = {m for text in readme_code() for m in CODE_RE.findall(text)}
    assert codes, "the README's examples name no rule code: the pattern is broken"
    assert sorted(c for c in codes if REGISTRY.get(c) is None) == []


def test_every_subcommand_in_readme_exists():
    names = {m for text in readme_code() for m in SUBCOMMAND_RE.findall(text)}
    assert {"rules", "rule", "estimate", "env"} <= names, names
    assert sorted(names - set(main.list_commands(None))) == []


def test_pre_commit_local_hook_matches_the_published_hook():
    import yaml

    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        blocks = re.findall(r"^```yaml\n(.*?)^```", fh.read(), re.DOTALL | re.MULTILINE)
    local = [yaml.safe_load(b) for b in blocks if "repo: local" in b]
    assert len(local) == 1
    hook = local[0]["repos"][0]["hooks"][0]
    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml"), encoding="utf-8") as fh:
        published = {h["id"]: h for h in yaml.safe_load(fh)}["rlhf-lint"]
    assert hook["entry"] == published["entry"] and hook["files"] == published["files"]
    assert hook["language"] == "system"  # runs the installed rlhf-lint: no URL needed


def test_install_lines_do_not_promise_what_does_not_exist():
    text = "\n".join(readme_code())
    # not on PyPI: a bare `pip install rlhf-lint` would install nothing (or someone else's package)
    assert not re.search(r"pip install (-q )?rlhf-lint\b(?![@\w])", text)
    # no release tag exists: a `rev: vX.Y.Z` would not resolve
    tags = subprocess.run(["git", "tag"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for rev in re.findall(r"^[ \t]*rev:[ \t]*(\S+)", text, re.MULTILINE):
        assert rev in tags, rev
