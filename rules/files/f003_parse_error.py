"""F003 parse-error: a file does not parse, so the tool that reads it at launch will fail too."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity, Span
from rlhf_lint.engine.registry import rule
from rlhf_lint.startup.lazyre import lazy_compile


@rule("F003", "parse-error", Severity.ERROR, when="parse error",
      kinds={"json", "ds_config", "shell", "python", "yaml", "requirements", "pyproject_toml", "setup_cfg", "dockerfile",
             "unparsed"})
def parse_error(ctx):
    """A file does not parse, so the tool that reads it at launch will fail too.

    ## What it does
    Reports the first syntax error of a JSON, YAML, Python, shell or requirements file at its exact position.
    JSON Lines data saved under a `.json` name (every line a document of its own) and files named as templates
    (`ds_config_TEMPLATE.json`, filled in by a script) are not configs and are not reported; nor is JSON whose
    error is a placeholder a script fills in (`"stage": ${zero_stage}` with `sed`), unless a launch names that file
    itself as its DeepSpeed config.

    ## Why it matters
    DeepSpeed reads `ds_config.json` only after the model is loaded; a stray comma costs the whole start-up time.

    ## Example
    ```json
    {"train_batch_size": 32,, "fp16": {"enabled": true}}
    ```

    ## Fix
    Correct the syntax at the reported position.
    """
    err = ctx.source.parse_error
    if err is None or _data_or_template(ctx.source) or _unfilled_template(ctx, err):
        return
    text_len = len(ctx.source.text)
    start = min(err.offset or 0, text_len)
    end = err.end if err.end is not None else min(start + 1, text_len)
    yield Finding(Span(start, max(start, min(end, text_len))), err.message)


def _data_or_template(source) -> bool:
    """JSON that is not meant to be loaded as one document: JSON Lines data saved as .json (every line a document),
    or a template whose holes a script fills in (the name says so). Configs are neither."""
    if source.kind not in ("json", "ds_config"):
        return False
    import os

    if "template" in os.path.basename(source.path).lower():
        return True
    if source.kind != "json":
        return False
    import json

    lines = [line for line in source.text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        return all(isinstance(json.loads(line), (dict, list)) for line in lines)
    except ValueError:
        return False


_PLACEHOLDER_RE = lazy_compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{")


def _unfilled_template(ctx, err) -> bool:
    """JSON whose error is a shell or Jinja placeholder (`${zero_stage}`, `{{ lr }}`): a template a script fills in
    with sed or envsubst before DeepSpeed reads the copy. Only when no launch names this file itself: then the
    placeholder reaches DeepSpeed, and the error is real."""
    source = ctx.source
    if source.kind not in ("json", "ds_config") or err.offset is None:
        return False
    if not _PLACEHOLDER_RE.match(source.text, min(err.offset, len(source.text))):
        return False
    project = ctx.project
    return project is None or not project.jobs_referencing(source.path)
