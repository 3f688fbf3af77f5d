"""F: problems with the files themselves (unreadable, too large, not parseable) and with suppressions."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity, Span
from rlhf_lint.engine.registry import rule


@rule("F001", "unreadable-file", Severity.ERROR, scope="project")
def unreadable_file(ctx):
    """A file could not be read or decoded, so nothing in it was checked.

    ## What it does
    Reports files named on the command line or found in a folder that could not be opened, are not UTF-8 text,
    contain NUL bytes (binary), or are of a type rlhf-lint does not know when named explicitly.

    ## Why it matters
    A launch script that silently went unchecked is worse than one that failed loudly: the job still runs.

    ## Example
    `rlhf-lint model.safetensors` reports `F001 cannot check: binary file (contains NUL bytes)`.

    ## Fix
    Point rlhf-lint at text files, or exclude the path (`--exclude`, `exclude = [...]` in configuration).
    """
    for item in getattr(ctx.project, "unreadable", []):
        if item.code == "F001":
            yield Finding(None, item.message, path=item.path)


@rule("F002", "file-too-large", Severity.WARNING, scope="project")
def file_too_large(ctx):
    """A file is larger than rlhf-lint reads (10 MiB) and was skipped.

    ## What it does
    Reports files over the size limit instead of reading them. Real launch scripts and configs are kilobytes.

    ## Why it matters
    Bounding input keeps pre-commit fast and memory flat; the message says the file was not checked.

    ## Example
    A 50 MB JSON dump named `ds_config_dump.json` is skipped with this warning.

    ## Fix
    Exclude generated data from linting.
    """
    for item in getattr(ctx.project, "unreadable", []):
        if item.code == "F002":
            yield Finding(None, item.message, path=item.path)


@rule("F003", "parse-error", Severity.ERROR, kinds={"json", "ds_config", "shell", "python", "yaml", "requirements",
                                                    "pyproject_toml", "setup_cfg", "dockerfile", "unparsed"})
def parse_error(ctx):
    """A file does not parse, so the tool that reads it at launch will fail too.

    ## What it does
    Reports the first syntax error of a JSON, YAML, Python, shell or requirements file at its exact position.
    JSON Lines data saved under a `.json` name (every line a document of its own) and files named as templates
    (`ds_config_TEMPLATE.json`, filled in by a script) are not configs and are not reported.

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
    if err is None or _data_or_template(ctx.source):
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


@rule("F010", "internal-error", Severity.ERROR, scope="project")
def internal_error(ctx):
    """The linter itself failed on a file: a bug in a parser, job builder, rule or fixer, not in your file.

    ## What it does
    When one of rlhf-lint's own parsers, job builders, rules or fixers raises an exception on a file, the run goes
    on with every other rule and file, and this diagnostic names the file, the part that failed and the exception.
    Findings of the failed part for that file are missing.

    ## Why it matters
    One bug must not hide every other finding of a run, and must not pass silently either: the exit code is 2
    and the report says which checks are incomplete.

    ## Example
    `F010 internal error in rule D102 unknown-ds-config-key: KeyError: 'zero_optimization' (checks of this rule
    on this file are incomplete; run with --debug for the traceback and please report it)`

    ## Fix
    Run `rlhf-lint --debug PATH` to see the traceback and report it with the file that triggers it. Until fixed,
    `--ignore` the failing rule, or exclude the file.
    """
    # reported by the engine, which is where the exceptions are caught
    return iter(())


@rule("F100", "unused-suppression", Severity.WARNING, scope="project")
def unused_suppression(ctx):
    """An inline `# rlhf-lint: ignore[...]` comment suppresses nothing.

    ## What it does
    Reports suppression comments whose rules reported nothing on that line (or in that file for `ignore-file`),
    and suppressions that name codes that do not exist.

    ## Why it matters
    Stale suppressions hide the next real finding on that line and make reviewers trust a line they should not.

    ## Example
    ```bash
    deepspeed train.py --zero_stage 3  # rlhf-lint: ignore[D101]
    ```

    ## Fix
    Delete the comment, or correct the code it names.
    """
    # decided by the engine after all other rules ran (it needs to know what was suppressed)
    return iter(())
