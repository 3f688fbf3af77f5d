"""The check command's work, free of click so that the fast entry (rlhf_lint.cli.entry) can run it without paying
click's import (about as long as a bare interpreter start). lint/cli/app.py declares the options; both paths land
here."""
from __future__ import annotations

import itertools
import os
import sys

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STATISTICS_FORMATS = ("text", "json")  # sarif, github and gitlab readers expect findings, not counts


def _err(message: str) -> None:
    from rlhf_lint.reporters.escape import visible

    try:
        sys.stderr.write(visible(message, keep="\n") + "\n")  # messages quote paths, selectors, config values
    except OSError:
        pass  # stderr itself is gone (a closed pipe, a full disk): there is no one left to tell


def _internal_error(exc: Exception, debug: bool) -> int:
    """An internal error is ours, never the user's file: say so in one line, exit 2 (--debug: the traceback)."""
    if debug:
        raise exc
    _err(f"rlhf-lint: internal error: {type(exc).__name__}: {exc} (run with --debug for details)")
    return EXIT_ERROR


def _reader_gone() -> None:
    """The reader of standard output closed it early (``rlhf-lint . | head``): stop writing, quietly, as ruff and
    grep do. Standard output is pointed at /dev/null so that the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _written(write, destination: str, debug: bool) -> int | None:
    """Call ``write``, which prints (part of) the report. None when it is written, or when a pipe's reader left
    early; EXIT_ERROR with one line on stderr when it cannot be written (a full disk, --output /dev/full) or a
    reporter fails, not a traceback and exit 1, which would read as findings."""
    try:
        write()
    except BrokenPipeError:
        _reader_gone()
    except OSError as exc:
        _err(f"rlhf-lint: error: cannot write the report to {destination}: {exc.strerror or exc}")
        return EXIT_ERROR
    except Exception as exc:
        return _internal_error(exc, debug)
    return None


def _split(values) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def run_check(paths, fix=False, unsafe_fixes=False, diff=False, show_fixes=False, select=(), extend_select=(),
              ignore=(), exclude=(), output_format="text", fail_on=None, config_path=None, gpu=None,
              gpu_memory=None, gpus_per_node=None, host_memory=None, container_memory=None, nodes=None,
              world_size=None, openrlhf_version=None, deepspeed_version=None, output=None, quiet=False,
              debug=False, no_cache=False, force_exclude=False, no_respect_gitignore=False, stdin_filename=None,
              statistics=False, exit_zero=False, add_noqa=False, baseline=None, write_baseline=False) -> int:
    """Run a check and return the exit code."""
    from rlhf_lint.engine.config import ConfigError, Configs, Hardware, flag, load_config
    from rlhf_lint.engine.discovery import Exclusions
    from rlhf_lint.model import Severity
    from rlhf_lint.engine.runner import Options, env_jobs, lint

    paths = list(paths) or (["-"] if stdin_filename else ["."])  # as ruff: --stdin-filename alone reads stdin
    if write_baseline and not baseline:
        _err("rlhf-lint: error: --write-baseline needs --baseline FILE (the file to write)")
        return EXIT_ERROR
    if "-" in paths and (len(paths) > 1 or add_noqa or write_baseline):
        _err("rlhf-lint: error: '-' (standard input) is checked alone, without --add-noqa or --write-baseline")
        return EXIT_ERROR
    conflict = _conflicting_options(add_noqa, diff, statistics, output_format)
    if conflict:
        _err(f"rlhf-lint: error: {conflict}")
        return EXIT_ERROR
    try:
        overrides = Hardware.from_mapping({"gpu": gpu, "gpu-memory": gpu_memory, "gpus-per-node": gpus_per_node,
                                           "host-memory": host_memory, "container-memory": container_memory,
                                           "nodes": nodes}, flag)
        fail_level = Severity.parse(fail_on) if fail_on else None

        def finish(config):
            """The command line's options over one configuration file's (each file has its own, as in ruff)."""
            config.hardware = config.hardware.merged(overrides)
            config.hardware_overrides = overrides
            if fail_level is not None:
                config.fail_on = fail_level
            if world_size is not None:
                config.world_size = world_size
            for package, version in (("openrlhf", openrlhf_version), ("deepspeed", deepspeed_version)):
                if version:
                    config.versions[package] = version.lstrip("v")
            if force_exclude:
                config.force_exclude = True
            return config

        configs = Configs(fixed=finish(load_config(config_path))) if config_path else Configs(finish=finish)
        config = configs.for_dir(os.getcwd())
        skip = Exclusions(configs, list(exclude), respect_gitignore=False if no_respect_gitignore else None)
        env_jobs()  # a bad RLHF_LINT_JOBS is the user's configuration error, not an internal one
    except ConfigError as exc:
        return _config_error(exc)
    # --unsafe-fixes only widens --fix and --diff (as in ruff): on its own it writes nothing
    options = Options(fix=fix, unsafe_fixes=unsafe_fixes, diff=diff,
                      select=_split(select) if select else None, ignore=_split(ignore),
                      extend_select=_split(extend_select), debug=debug, cache=not no_cache)
    try:
        if paths == ["-"]:
            return _check_stdin(stdin_filename, configs, options, output_format, quiet, show_fixes, statistics,
                                exit_zero)
        result = lint(paths, config, options, configs, skip)
    except ConfigError as exc:  # a selector matching no rule (checked before any file is read)
        return _config_error(exc)
    except KeyboardInterrupt:
        return EXIT_ERROR
    except Exception as exc:
        return _internal_error(exc, debug)

    if add_noqa:
        return _add_noqa(result)
    hidden = 0
    if baseline:
        from rlhf_lint.engine import baseline as baselines

        try:
            if write_baseline:
                written = baselines.write(baseline, result.diagnostics)
                _err(f"rlhf-lint: wrote {written} finding(s) to {baseline}; runs with --baseline {baseline} hide them")
                return EXIT_CLEAN
            result.diagnostics, hidden = baselines.hide(baseline, result.diagnostics)
        except (baselines.BaselineError, OSError) as exc:
            return _config_error(exc)
    code = _report(result, options, output_format, output, quiet, show_fixes, statistics, diff)
    if code is not None:
        return code
    if hidden and not quiet:
        _err(f"rlhf-lint: {hidden} finding(s) accepted in {baseline} not shown")
    return _exit_code(result, configs, diff, exit_zero)


def _conflicting_options(add_noqa: bool, diff: bool, statistics: bool, output_format: str) -> str | None:
    """Why options given together cannot all be honoured (a usage error, exit 2), or None. Refused rather than
    one silently winning: --add-noqa would write the files that --diff promises to leave alone, and a CI step
    asking for SARIF must not get a text table it cannot parse."""
    if add_noqa and diff:
        return "--add-noqa writes comments into the files and --diff writes nothing: run --add-noqa, then git diff"
    if add_noqa and statistics:
        return "--add-noqa prints no report to count (as in ruff): run --statistics on its own"
    if statistics and output_format not in STATISTICS_FORMATS:
        return (f"--statistics prints counts as text or JSON (--output-format json), not {output_format}, whose "
                "readers expect one entry per finding")
    return None


def _report(result, options, output_format, output, quiet, show_fixes, statistics, diff) -> int | None:
    """Print the report; an exit code when it cannot be written, else None."""
    try:
        stream = open(output, "w", encoding="utf-8") if output else None
    except OSError as exc:
        _err(f"rlhf-lint: error: cannot write the report to {output}: {exc.strerror or exc}")
        return EXIT_ERROR

    def write():
        _write_report(result, options, output_format, stream, quiet, show_fixes, statistics, diff)
        if stream is not None:
            stream.close()  # its last buffered bytes are written here: a full disk shows now, not after exit

    try:
        code = _written(write, output or "standard output", options.debug)
    finally:
        if stream is not None and not stream.closed:
            _close_after_error(stream)
    if code is not None:
        return code
    for message in result.messages:
        _err(message)
    for message in result.write_errors:
        _err(f"rlhf-lint: {message}")
    return None


def _write_report(result, options, output_format, stream, quiet, show_fixes, statistics, diff) -> None:
    from rlhf_lint.reporters import render_chunks

    # --diff: the patch alone on stdout (``rlhf-lint --diff . > p.patch && git apply p.patch``), the text
    # report on stderr, as ruff does
    report_to = sys.stderr if diff else (stream or sys.stdout)
    if statistics:
        chunks = iter([render_statistics(result.diagnostics, output_format)])
    else:
        # written as it is made: the whole report of a large run never sits in memory at once
        chunks = render_chunks(output_format, result, show_fixes=show_fixes, quiet=quiet,
                               fixing=options.fix and not diff, color=_use_color(stream, report_to),
                               dry_run=diff, width=_terminal_width(stream, report_to))
        if show_fixes and result.applied and output_format == "text":
            chunks = itertools.chain(chunks, [render_applied(result.applied, dry_run=diff)])
    if diff:
        from rlhf_lint.reporters.diff import unified_diff

        patch = unified_diff(result.changed)  # bytes: git apply needs the files' own bytes, BOM included
        patch_to = stream or sys.stdout
        patch_to.flush()
        patch_to.buffer.write(patch)
        patch_to.buffer.flush()
        if output_format != "text":
            chunks = iter(())
    for text in chunks:
        report_to.write(text)
    report_to.flush()


def _close_after_error(stream) -> None:
    try:
        stream.close()
    except OSError:
        pass  # the error that left it open has been reported; its unwritten bytes cannot be saved


def _exit_code(result, configs, diff: bool, exit_zero: bool) -> int:
    if result.internal_errors:
        _err(f"rlhf-lint: {result.internal_errors} internal error(s) (F010): some checks are incomplete; "
             "run with --debug for the traceback")
        return EXIT_ERROR
    if exit_zero:  # as ruff: findings never fail the run, errors of the tool still do
        return EXIT_CLEAN
    if diff:  # as ruff: 1 when fixes are pending (the patch is not empty), whatever else was found
        return EXIT_FINDINGS if result.changed else EXIT_CLEAN
    if result.write_errors:
        return EXIT_FINDINGS  # the file on disk still has what the fix would have changed
    # each finding against the fail level of its own file's configuration
    failing = any(d.severity >= configs.for_path(d.path).fail_on for d in result.diagnostics)
    return EXIT_FINDINGS if failing else EXIT_CLEAN


def _check_stdin(filename, configs, options, output_format, quiet, show_fixes, statistics, exit_zero) -> int:
    """``rlhf-lint - --stdin-filename x.json``: the file's kind and configuration come from the name; with --fix
    the fixed text goes to stdout and the report to stderr, as ruff does; --diff prints the patch."""
    from rlhf_lint.engine.runner import MAX_FILE_BYTES, lint_stdin

    path = filename or "-"
    raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)  # past the limit the input is not checked (F002), as a file
    result, fixed = lint_stdin(path, raw, configs.for_path(os.path.abspath(path)), options)
    if options.fix and not options.diff:
        def write():
            sys.stdout.buffer.write(fixed)
            if len(raw) > MAX_FILE_BYTES:  # unchecked, so unchanged: the rest passes through, a piece at a time
                import shutil

                shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)
            sys.stdout.flush()

        code = _written(write, "standard output", options.debug)
        if code is None:
            code = _written(lambda: _report_to_stderr(result, output_format, quiet, show_fixes, statistics),
                            "standard error", options.debug)
        if code is not None:
            return code
    else:
        code = _report(result, options, output_format, None, quiet, show_fixes, statistics, options.diff)
        if code is not None:
            return code
    return _exit_code(result, configs, options.diff, exit_zero)


def _report_to_stderr(result, output_format, quiet, show_fixes, statistics) -> None:
    from rlhf_lint.reporters import render

    if statistics:
        text = render_statistics(result.diagnostics, output_format)
    else:
        text = render(output_format, result, show_fixes=show_fixes, quiet=quiet, fixing=True,
                      color=_use_color(None, sys.stderr))
        if show_fixes and result.applied and output_format == "text":
            text += render_applied(result.applied)
    sys.stderr.write(text)
    for message in result.messages:
        _err(message)
    return None


def _statistics_rows(diagnostics) -> list[dict]:
    """Per code: its findings and how many of them a safe fix (--fix) or an unsafe one (--unsafe-fixes) would
    fix; most frequent first."""
    rows: dict[str, dict] = {}
    for d in diagnostics:
        row = rows.setdefault(d.code, {"code": d.code, "name": d.name, "count": 0, "safe_fixes": 0,
                                       "unsafe_fixes": 0})
        row["count"] += 1
        applicability = d.fix.applicability.value if d.fix is not None else "display"
        if applicability != "display":  # a suggestion only ("display") is no fix
            row["safe_fixes" if applicability == "safe" else "unsafe_fixes"] += 1
    return sorted(rows.values(), key=lambda row: (-row["count"], row["code"]))


def _fix_marks(row: dict) -> str:
    # the text report's marks: [*] a safe fix, [unsafe fix] one that needs --unsafe-fixes; both when a code has both
    return " ".join(mark for mark, n in (("[*]", row["safe_fixes"]), ("[unsafe fix]", row["unsafe_fixes"])) if n)


def render_statistics(diagnostics, output_format: str) -> str:
    """Counts per code, most frequent first, like ``ruff --statistics``: a table, or JSON with --output-format
    json (``fixable``: any fix, safe or not, as before; ``safe_fixes``/``unsafe_fixes``: how many of each)."""
    rows = _statistics_rows(diagnostics)
    if output_format == "json":
        import json

        return json.dumps([{"code": row["code"], "name": row["name"], "count": row["count"],
                            "fixable": bool(row["safe_fixes"] or row["unsafe_fixes"]),
                            "safe_fixes": row["safe_fixes"], "unsafe_fixes": row["unsafe_fixes"]} for row in rows],
                          indent=2) + "\n"
    width = max((len(str(row["count"])) for row in rows), default=1)
    marks = [_fix_marks(row) for row in rows]
    marks_width = max((len(m) for m in marks), default=0)  # a column as wide as its widest mark: names align
    return "".join(f"{row['count']:>{width}}\t{row['code']}\t{mark.ljust(marks_width) + ' ' if marks_width else ''}"
                   f"{row['name']}\n" for row, mark in zip(rows, marks))


def render_applied(applied: dict, dry_run: bool = False) -> str:
    """``--show-fixes``: the fixes applied per file and rule, like ruff's "Fixed N errors" list."""
    from rlhf_lint.engine.registry import REGISTRY
    from rlhf_lint.reporters.escape import visible

    total = sum(n for per_code in applied.values() for n in per_code.values())
    lines = [f"{'Would fix' if dry_run else 'Fixed'} {total} finding{'s' if total != 1 else ''}:"]
    for path in sorted(applied):
        lines.append(f"- {visible(path)}:")
        for code, n in sorted(applied[path].items()):
            rule = REGISTRY.get(code)
            lines.append(f"    {n} x {code} ({rule.name if rule else '?'})")
    return "\n".join(lines) + "\n"


def _add_noqa(result) -> int:
    from rlhf_lint.engine.noqa import NOQA_KINDS, add_noqa
    from rlhf_lint.engine.runner import read_source
    from rlhf_lint.readers.source import Source

    kinds = {}
    for d in result.diagnostics:
        if d.path not in kinds:
            got = read_source(d.path, True)
            kinds[d.path] = got.kind if isinstance(got, Source) else None
    added, changed, skipped = add_noqa(result.diagnostics, kinds)
    no_comments = sorted({d.path for d in result.diagnostics if kinds[d.path] not in NOQA_KINDS})
    summary = (f"Added {added} suppression comment{'s' if added != 1 else ''} in {len(changed)} "
               f"file{'s' if len(changed) != 1 else ''}.\n")
    # the comments are written by now; a summary that cannot be printed is still an error (exit 2), not a clean run
    code = _written(lambda: (sys.stdout.write(summary), sys.stdout.flush()), "standard output", False)
    for where in skipped:
        _err(f"rlhf-lint: {where}: no suppression comment added here (no comment possible without changing the "
             "file's meaning); use --baseline")
    for path in no_comments:
        _err(f"rlhf-lint: {path}: this format has no comments; accept its findings with --baseline FILE "
             "--write-baseline")
    return EXIT_CLEAN if code is None else code


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
