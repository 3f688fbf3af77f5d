"""What a file is, from its name first and its first bytes second, and the cheap text tests that decide whether a
file needs its reader at all (a Python file that is no ORZ config and no setup.py is never parsed)."""
from __future__ import annotations

import os
import re

from rlhf_lint.startup.lazyre import lazy_compile

SHELL_SHEBANG = lazy_compile(rb"^#!\s*\S*(?:/|env\s+)(?:ba|z|k|da)?sh\b")
PY_SHEBANG = lazy_compile(rb"^#!\s*\S*(?:/|env\s+)python")
REQUIREMENTS_NAME = lazy_compile(r"^(?:.*requirements.*|constraints.*)\.(?:txt|in)$", re.IGNORECASE)
DS_CONFIG_NAME = lazy_compile(r"(?:^|[_\-./])(?:ds|deepspeed|zero[0-3]?|zero_stage[0-3]?|ds_z[0-3])(?:[_\-.]|$)|ds_?config", re.IGNORECASE)
# [ \t], not \s: "^\s*" tried at every line start of a long run of blank lines is quadratic (minutes on 200k lines)
_ORZ_HINT = lazy_compile(r"\bBasePPOExpConfig\b|\bPPOExpConfig\b|^[ \t]*(?:from|import)[ \t]+orz\b", re.MULTILINE)


def kind_from_name(name: str) -> str | None:
    lower = name.lower()
    if lower.endswith((".sh", ".bash")):
        return "shell"
    if lower.endswith(".json"):
        return "json"
    if lower.endswith((".yaml", ".yml")):
        return "yaml"
    if lower.endswith(".py"):
        return "python"
    if REQUIREMENTS_NAME.match(lower):
        return "requirements"
    if lower in ("pyproject.toml", "setup.cfg"):
        return lower.replace(".", "_")
    if lower == "dockerfile" or lower.startswith("dockerfile.") or lower.endswith(".dockerfile"):
        return "dockerfile"
    return None


def kind_from_content(raw: bytes) -> str | None:
    head = raw[:256]
    if SHELL_SHEBANG.match(head):
        return "shell"
    if PY_SHEBANG.match(head):
        return "python"
    stripped = head.lstrip()
    if stripped.startswith((b"{", b"[")):
        return "json"
    return None


def looks_like_ds_config_name(path: str) -> bool:
    return bool(DS_CONFIG_NAME.search(os.path.basename(path)))


# a module that imports trl or transformers and calls a config, arguments or trainer class
_HF_IMPORT = lazy_compile(r"^[ \t]*(?:from|import)[ \t]+(?:trl|transformers)\b", re.MULTILINE)
_HF_CALL = lazy_compile(r"(?:Config|Arguments|Trainer|Parser)[ \t]*\(")  # Parser: HfArgumentParser, TrlParser


def looks_like_hf_script(text: str) -> bool:
    """A training script that may build its TrainingArguments or TRL config in Python (rlhf_lint.frameworks.hf_script
    reads it); str.find first keeps the usual module at two substring scans."""
    return (("trl" in text or "transformers" in text) and bool(_HF_CALL.search(text))
            and bool(_HF_IMPORT.search(text)))


def looks_like_orz(text: str) -> bool:
    """Cheap text test run before any tree walk: other Python files are ignored at the cost of one regex."""
    # every branch of the pattern holds one of these words: str.find skips the regex on the usual Python file
    # (the regex tried three branches at every character: 3 ms a file)
    return ("PPOExpConfig" in text or "orz" in text) and bool(_ORZ_HINT.search(text))


PIN_FILE_KINDS = ("requirements", "pyproject_toml", "setup_cfg", "dockerfile")


def may_declare_pins(source) -> bool:
    """False when rlhf_lint.readers.pins surely finds no pin in ``source``: a run of launch scripts without
    ``pip install`` then never imports it. Pin files, ``setup.py`` and conda environment files are read by it; a
    script or a YAML file needs at least the word ``install`` or a conda-like name."""
    if source.kind in PIN_FILE_KINDS:
        return True
    if source.kind == "python":
        return source.name == "setup.py"
    if source.kind == "yaml":
        return source.name.lower().startswith(("environment", "conda", "env"))
    return source.kind == "shell" and "install" in source.text
