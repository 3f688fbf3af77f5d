"""Every diagnostic message the rule fixtures produce (their .expected snapshots) reads as one clean sentence: no
doubled words ("vllm vllm reservation"), parentheses balanced and never nested (quoted upstream text aside),
verbs that agree with the roles they follow ("actor needs", "actor + critic need"); and the text report wraps a
long message for the terminal instead of printing a 300-character line."""
import glob
import os
import re

import pytest

from lintutil import ROOT
from rlhf_lint.engine.runner import Result
from rlhf_lint.model import Diagnostic, Position, Severity, Span
from rlhf_lint.reporters.text import render_text

LINE = re.compile(r"^([A-Z]\d{3}) \d+:\d+ (?:error|warning|info): (.*?)(?: \[fix [^\]]*\])?$")
QUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"|`[^`]*`")  # upstream error text and values, quoted as is
ROLES = r"(?:actor|critic|reference|reward|policy|vllm|engine)"


def _messages():
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.expected"), recursive=True)):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                m = LINE.match(line.rstrip("\n"))
                if m:
                    out.append((os.path.relpath(path, ROOT), m.group(1), m.group(2)))
    return out


MESSAGES = _messages()


def test_the_fixtures_give_messages_to_check():
    assert len(MESSAGES) > 100 and len({code for _, code, _ in MESSAGES}) > 50


def _problems(message: str) -> list[str]:
    problems = []
    doubled = re.search(r"\b(\w+)\s+\1\b", message, re.IGNORECASE)
    if doubled and not doubled.group(1).isdigit():
        problems.append(f"doubled word {doubled.group(0)!r}")
    depth = 0
    for ch in QUOTED.sub("", message):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth > 1:
            problems.append("nested parentheses")
            break
        if depth < 0:
            break
    if depth != 0 and "nested parentheses" not in problems:
        problems.append("unbalanced parentheses")
    agreement = re.search(rf"(?:^|: |\d )({ROLES}) (need|have|are|run|use)\b", message)
    if agreement:
        problems.append(f"{agreement.group(0).strip()!r}: one role takes a singular verb")
    plural = re.search(rf"\b{ROLES}(?: \+ {ROLES})+ (needs|has|is|runs|uses)\b", message)
    if plural:
        problems.append(f"{plural.group(0)!r}: several roles take a plural verb")
    return problems


def test_style_checker_finds_what_it_looks_for():
    assert _problems("vllm vllm reservation 71 GiB") == ["doubled word 'vllm vllm'"]
    assert _problems("(DeepSpeed 0.19 assumed (set deepspeed-version))") == ["nested parentheses"]
    assert _problems("raises NotImplementedError('both amp with (legacy) fp16')") == []
    assert _problems("x (y") == ["unbalanced parentheses"]
    assert _problems("actor need 86.8 GiB") and _problems("actor + critic needs 9 GiB")
    assert _problems("actor + critic need 9 GiB; actor needs 3 GiB") == []


@pytest.mark.parametrize("where,code,message", MESSAGES, ids=[f"{c}:{p}" for p, c, _ in MESSAGES])
def test_message_reads_cleanly(where, code, message):
    assert _problems(message) == [], f"{where}: {message}"


def test_long_messages_wrap_on_a_terminal():
    message = max((m for _, _, m in MESSAGES), key=len)
    assert len(message) > 300  # the longest fixture message, as issue 16 found them
    d = Diagnostic("M001", "gpu-out-of-memory", Severity.ERROR, message, "train.sh", Span(0, 1), Position(9, 1),
                   Position(9, 2), source_line="deepspeed train.py")
    wrapped = render_text(Result(diagnostics=[d], files_checked=1), width=100)
    lines = wrapped.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    assert lines[0].startswith("train.sh:9:1: M001 error ")
    # nothing of the message is lost: the wrapped lines join back to it
    body = " ".join(line.strip() for line in lines[:lines.index("    deepspeed train.py")])
    assert body.endswith(message)
    # without a terminal width (a pipe, a CI log, an editor's problem matcher) a diagnostic stays one line
    assert render_text(Result(diagnostics=[d], files_checked=1)).splitlines()[0].endswith(message)


def test_wrapping_keeps_colour_and_whole_long_paths():
    d = Diagnostic("D001", "unknown-ds-config-key", Severity.ERROR, "word " * 40, "p" * 120 + ".json", Span(0, 1),
                   Position(1, 1), Position(1, 2))
    text = render_text(Result(diagnostics=[d], files_checked=1), width=80, color=True)
    assert text.splitlines()[0].count("word") == 40  # the path is wider than the terminal: one line, unwrapped
    d.path = "ds_config.json"
    lines = render_text(Result(diagnostics=[d], files_checked=1), width=80, color=True).splitlines()
    assert "\x1b[31merror\x1b[0m word" in lines[0] and lines[1].startswith("    word")
