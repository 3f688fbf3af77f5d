"""README.md's Usage and configuration examples name only rules and subcommands that exist: a reader who copies
`rlhf-lint rule D101` must not get "no rule"."""
from __future__ import annotations

import os
import re

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
