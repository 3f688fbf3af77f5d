"""The check command's work, free of click so that the fast entry (rlhf_lint.cli.entry) can run it without paying
click's import (about as long as a bare interpreter start). lint/cli/app.py declares the options; both paths land
here."""
from __future__ import annotations

import os
import sys

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _err(message: str) -> None:
    from rlhf_lint.reporters.escape import visible

    sys.stderr.write(visible(message, keep="\n") + "\n")  # messages quote paths, selectors, config values


def _split(values) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def run_check(paths, fix=False, unsafe_fixes=False, diff=False, show_fixes=False, select=(), extend_select=(),
              ignore=(), exclude=(), output_format="text", fail_on=None, config_path=None, gpu=None,
              gpu_memory=None, gpus_per_node=None, host_memory=None, container_memory=None, nodes=None,
              world_size=None, openrlhf_version=None, deepspeed_version=None, output=None, quiet=False,
              debug=False, no_cache=False) -> int:
    """Run a check and return the exit code."""
    from rlhf_lint.engine.config import ConfigError, Hardware, find_config_file, load_config
    from rlhf_lint.model import Severity
    from rlhf_lint.engine.runner import Options, env_jobs, lint, severity_at_least

    paths = list(paths) or ["."]
    try:
        if config_path:
            config = load_config(config_path)
        else:
            config = load_config(find_config_file(paths[0]))
        overrides = Hardware.from_mapping({"gpu": gpu, "gpu-memory": gpu_memory, "gpus-per-node": gpus_per_node,
                                           "host-memory": host_memory, "container-memory": container_memory,
                                           "nodes": nodes})
        config.hardware = config.hardware.merged(overrides)
        config.hardware_overrides = overrides
        if fail_on:
            config.fail_on = Severity.parse(fail_on)
        if world_size is not None:
            config.world_size = world_size
        for package, version in (("openrlhf", openrlhf_version), ("deepspeed", deepspeed_version)):
            if version:
                config.versions[package] = version.lstrip("v")
        config.exclude = config.exclude + list(exclude)
        env_jobs()  # a bad RLHF_LINT_JOBS is the user's configuration error, not an internal one
    except ConfigError as exc:
        return _config_error(exc)
    # --unsafe-fixes only widens --fix and --diff (as in ruff): on its own it writes nothing
    options = Options(fix=fix, unsafe_fixes=unsafe_fixes, diff=diff,
                      select=_split(select) if select else None, ignore=_split(ignore),
                      extend_select=_split(extend_select), debug=debug, cache=not no_cache)
    try:
        result = lint(paths, config, options)
    except ConfigError as exc:  # a selector matching no rule (checked before any file is read)
        return _config_error(exc)
    except KeyboardInterrupt:
        return EXIT_ERROR
    except Exception as exc:  # an internal error is ours, never the user's file: say so, exit 2
        if debug:
            raise
        _err(f"rlhf-lint: internal error: {type(exc).__name__}: {exc} (run with --debug for details)")
        return EXIT_ERROR

    from rlhf_lint.reporters import render

    try:
        stream = open(output, "w", encoding="utf-8") if output else None
    except OSError as exc:
        _err(f"rlhf-lint: error: cannot write the report to {output}: {exc.strerror or exc}")
        return EXIT_ERROR
    try:
        # --diff: the patch alone on stdout (``rlhf-lint --diff . > p.patch && git apply p.patch``), the text
        # report on stderr, as ruff does
        report_to = sys.stderr if diff else (stream or sys.stdout)
        text = render(output_format, result, show_fixes=show_fixes, quiet=quiet, fixing=options.fix and not diff,
                      color=_use_color(stream, report_to), dry_run=diff, width=_terminal_width(stream, report_to))
        if diff:
            from rlhf_lint.reporters.diff import unified_diff

            patch = unified_diff(result.changed)  # bytes: git apply needs the files' own bytes, BOM included
            if stream is not None:
                stream.flush()
                stream.buffer.write(patch)
                stream.buffer.flush()
            else:
                sys.stdout.flush()
                sys.stdout.buffer.write(patch)
                sys.stdout.buffer.flush()
            if output_format != "text":
                text = ""
        report_to.write(text)
        report_to.flush()
    finally:
        if stream:
            stream.close()
    for message in result.messages:
        _err(message)
    for message in result.write_errors:
        _err(f"rlhf-lint: {message}")
    if result.internal_errors:
        _err(f"rlhf-lint: {result.internal_errors} internal error(s) (F010): some checks are incomplete; "
             "run with --debug for the traceback")
        return EXIT_ERROR
    if diff:  # as ruff: 1 when fixes are pending (the patch is not empty), whatever else was found
        return EXIT_FINDINGS if result.changed else EXIT_CLEAN
    if result.write_errors:
        return EXIT_FINDINGS  # the file on disk still has what the fix would have changed
    return EXIT_FINDINGS if severity_at_least(result.diagnostics, config.fail_on) else EXIT_CLEAN


def _config_error(exc) -> int:
    for line in str(exc).splitlines():
        _err(f"rlhf-lint: error: {line}")
    return EXIT_ERROR


def _terminal_width(stream, target) -> int | None:
    """Columns to wrap long messages at on a terminal; None (one line per diagnostic) for files and pipes, which
    grep and problem matchers read."""
    try:
        if (stream is not None and target is stream) or not target.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    import shutil

    return max(60, shutil.get_terminal_size().columns)


def _use_color(stream, target) -> bool:
    if (stream is not None and target is stream) or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return target.isatty()
