"""The run: discover, read, parse, build the project, apply rules, suppress, fix until stable."""
from __future__ import annotations

import os
import stat

from rlhf_lint.startup.records import field, record, replace
from rlhf_lint.engine.config import Config, ConfigError, Configs
from rlhf_lint.engine.discovery import MAX_FOLDER_DEPTH, Exclusions, discover, too_deep
from rlhf_lint.readers.kinds import kind_from_content, kind_from_name
from rlhf_lint.model import (DEBUG, MAX_MESSAGE, Applicability, Diagnostic, Finding, InternalError, ParseError, Position,
                             Severity, excerpt)
from rlhf_lint.startup import restore_gc_threshold
from rlhf_lint.engine.project import Context, Project, parse_source
from rlhf_lint.engine.registry import REGISTRY, Rule
from rlhf_lint.readers.source import (DecodeError, FileTooLarge, LineIndex, NotRegularFile, OutsideRoots, Source,
                                      read_regular, within)
from rlhf_lint.engine.suppressions import Suppressions

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_FIX_ROUNDS = 10
MAX_FINDINGS_PER_RULE = 1000  # per rule and file (or launch): a 1 MB file of duplicates stays a few seconds



@record
class Unreadable:
    path: str
    message: str
    code: str  # F001 unreadable-file or F002 file-too-large
    position: Position | None = None  # where in the file, when one place is the cause (DecodeError.position)


@record
class Options:
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # compute fixes, write nothing
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    jobs: int | None = None  # worker processes for many files (default: one per CPU; RLHF_LINT_JOBS)
    cache: bool = False  # reuse results of unchanged file groups (the CLI turns it on; --no-cache off)
    debug: bool = False  # internal errors raise with their traceback instead of becoming F010 diagnostics
    # the real folders a run reads and --fix writes under: the folders given, and the folders of the files given
    # (lint() fills it when empty); a file that resolves outside them, through a symlink, is neither read nor written
    roots: tuple = ()


@record
class Result:
    diagnostics: list[Diagnostic]
    fixed: int = 0
    changed: dict[str, tuple[bytes, bytes]] = field(default_factory=dict)  # path -> (old bytes, new bytes)
    write_errors: list[str] = field(default_factory=list)
    files_checked: int = 0
    messages: list[str] = field(default_factory=list)
    sources: dict = field(default_factory=dict)  # path -> Source, for positions of fix edits
    internal_errors: int = 0  # F010 diagnostics: the CLI exits 2 when there are any
    applied: dict = field(default_factory=dict)  # path -> {code: fixes applied} (--show-fixes)


# -- selection ---------------------------------------------------------------------------------------------------
def _expand(selectors: list[str]) -> set[str]:
    return {r.code for sel in selectors for r in REGISTRY.match(sel)}


def unknown_selectors(config: Config, options: Options) -> list[str]:
    """"'SEL' in WHERE" for each rule selector of the options or the configuration that matches no rule: such a
    selector would check nothing (or ignore nothing), so it is a usage error, as in ruff."""
    source = config.path or "the configuration"
    given = [(s, "--select") for s in options.select or []] + [(s, "--extend-select") for s in options.extend_select]
    given += [(s, "--ignore") for s in options.ignore]
    given += [(s, f"select of {source}") for s in config.select or []]
    given += [(s, f"extend-select of {source}") for s in config.extend_select]
    given += [(s, f"ignore of {source}") for s in config.ignore]
    for pattern, selectors in config.per_file_ignores.items():
        given += [(s, f"per-file-ignores.{pattern!r} of {source}") for s in selectors]
    return [f"{s!r} in {where}" for s, where in given if not REGISTRY.match(s)]


def selected_rules(config: Config, options: Options) -> list[Rule]:
    """The rules a run checks; ConfigError when a selector matches no rule."""
    unknown = unknown_selectors(config, options)
    if unknown:
        raise ConfigError("\n".join(f"unknown rule selector {u} (see `rlhf-lint rules`)" for u in unknown))
    base = options.select if options.select is not None else config.select
    if base is None:
        codes = {r.code for r in REGISTRY.known() if r.default_enabled}
    else:
        codes = _expand(base)
    codes |= _expand(config.extend_select + options.extend_select)
    codes -= _expand(config.ignore + options.ignore)
    return [r for r in REGISTRY.known() if r.code in codes]


def _per_file_ignored(config: Config, path: str) -> set[str]:
    if not config.per_file_ignores:
        return set()
    import fnmatch  # only configurations with per-file-ignores need it

    rel = os.path.relpath(os.path.abspath(path), config.root).replace(os.sep, "/")
    ignored: set[str] = set()
    for pattern, selectors in config.per_file_ignores.items():
        if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern):
            ignored |= _expand(selectors)
    return ignored


# -- reading -----------------------------------------------------------------------------------------------------
def read_source(path: str, explicit: bool, roots: tuple = ()) -> Source | Unreadable | None:
    """A file as a Source, or why it was not read (None: a special file found in a folder, skipped silently).
    With ``roots``, a symlink to a file outside them is not read (rlhf_lint.readers.source.read_regular)."""
    try:
        raw, st = read_regular(path, MAX_FILE_BYTES, roots=roots)
    except FileNotFoundError:
        return Unreadable(path, "no such file or directory", "F001")
    except NotRegularFile as exc:
        if stat.S_ISDIR(exc.mode):
            return _folder_not_walked(path)
        return Unreadable(path, "not a regular file", "F001") if explicit else None
    except FileTooLarge as exc:
        return too_large(path, exc)
    except OutsideRoots as exc:
        return Unreadable(path, f"{exc.strerror} (name the target to check it)", "F001")
    except OSError as exc:
        return Unreadable(path, f"cannot read: {exc.strerror or exc}", "F001")
    kind = kind_from_name(os.path.basename(path)) or kind_from_content(raw)
    if kind is None:
        return Unreadable(path, "unrecognised file type: not checked", "F001") if explicit else None
    try:
        return Source.from_bytes(path, raw, kind=kind, mode=stat.S_IMODE(st.st_mode))
    except DecodeError as exc:
        return Unreadable(path, f"cannot check: {exc}", "F001", exc.position)


def too_large(path: str, exc: FileTooLarge) -> Unreadable:
    return Unreadable(path, f"{exc.strerror}: skipped", "F002")


def _folder_not_walked(path: str) -> Unreadable | None:
    """Discovery yields a folder only when it did not walk it (rlhf_lint.engine.discovery): nested too deep, or
    it could not be listed."""
    if too_deep(path):
        return Unreadable(path, f"folder nested more than {MAX_FOLDER_DEPTH} levels deep: its files were not "
                                "checked", "F001")
    try:
        with os.scandir(path):
            pass
    except OSError as exc:
        return Unreadable(path, f"cannot list folder: {exc.strerror or exc}; its files were not checked", "F001")
    return None


def classify(project: Project, referenced: bool = True) -> None:
    """Decide which JSON files are DeepSpeed configs: by name, by keys, or because a launch names them (this
    last part builds the jobs; ``referenced`` False leaves it to classify_referenced)."""
    if not project.of_kind("json"):
        return
    from rlhf_lint.frameworks.deepspeed import looks_like_ds_config

    for source in project.of_kind("json"):
        if looks_like_ds_config(source):
            source.kind = "ds_config"
    if referenced:
        classify_referenced(project)


def classify_referenced(project: Project) -> None:
    for source in project.of_kind("json"):
        if project.jobs_referencing(source.path):
            source.kind = "ds_config"


def read_group(items: list[tuple[str, bool]], roots: tuple = ()) -> tuple[list[Source], list[Unreadable], list[tuple]]:
    """Read the files of a group once: their Sources, the unreadable ones, and (path, explicit, bytes, mode)
    of each for the cache key. ``roots``: as Options.roots."""
    sources: list[Source] = []
    unreadable: list[Unreadable] = []
    identity: list[tuple] = []
    for path, explicit in items:
        got = read_source(path, explicit, roots)
        if isinstance(got, Unreadable):
            unreadable.append(got)
        elif got is not None:
            sources.append(got)
            identity.append((path, explicit, got.raw, got.mode))
        else:
            identity.append((path, explicit, b"", -1))  # a directory or special file: skipped either way
    return sources, unreadable, identity


def project_of(sources: list[Source], config: Config, configs: dict[str, Config] | None = None) -> Project:
    workers = PARSE_WORKERS["n"]
    if workers > 1 and len(sources) >= PARSE_PARALLEL_MIN:
        _parse_parallel(sources, workers)
    else:
        for source in sources:
            parse_source(source)
    project = Project(sources, config, configs)
    # a group whose rules are shared with forked processes builds its jobs after the fork (_rules_parallel)
    classify(project, referenced=not _rules_forked(project))
    return project


# One repository is one group (rlhf_lint.engine.groups), checked by one process; its files are parsed by worker
# processes when the run has cores to spare (lint() sets this). A shell script's tree-sitter tree is parsed again on
# arrival (rlhf_lint.readers.shell._Doc.__getstate__).
PARSE_WORKERS = {"n": 1}
# files in one group; below this, workers cost more than they save (docs/performance.md: one-group trees, 2 cores:
# 1,043 files 154-239 files/s with them, 273-277 without; 2,086 files 355 against 273; 5,215 files 364 against 183)
PARSE_PARALLEL_MIN = 1500
PARSE_CHUNK = 16
_PARSING: dict = {}


def _parse_remote(indices: list[int]) -> list[tuple]:
    out = []
    sources, state = _PARSING["sources"], _PARSING["state"]
    for i in indices:
        state[i] = STARTED
        s = sources[i]
        parse_source(s)
        err = s.parse_error
        out.append((i, s.tree, None if err is None else (err.message, err.offset, err.end), s.internal_errors,
                    s.skipped))
        state[i] = DONE
    return out


def _parse_parallel(sources: list[Source], workers: int) -> None:
    """parse_source for each source, in forked workers. A worker that dies (a crash in a parser's
    C code, memory) costs the file it was parsing an internal error; the files it had not finished are parsed here."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    import pickle

    if "fork" not in multiprocessing.get_all_start_methods():  # the sources reach the workers by fork, not by pickle
        for source in sources:
            parse_source(source)
        return
    context = multiprocessing.get_context("fork")
    remote = list(range(len(sources)))
    state = context.RawArray("b", len(sources))
    _PARSING.update(sources=sources, state=state)
    received: set[int] = set()

    def run(batches: list[list[int]], processes: int) -> None:
        with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
            futures = [pool.submit(_parse_remote, batch) for batch in batches]
            for future in futures:
                try:
                    done = future.result()
                except (BrokenProcessPool, pickle.PicklingError, TypeError, AttributeError):
                    continue  # a dead worker or a tree that cannot travel: handled below
                for i, tree, err, internal, skipped in done:
                    s = sources[i]
                    s.tree, s.internal_errors, s.skipped = tree, internal, skipped
                    s.parse_error = None if err is None else ParseError(*err)
                    received.add(i)

    try:
        run([remote[k:k + PARSE_CHUNK] for k in range(0, len(remote), PARSE_CHUNK)], workers)
        # the files being parsed when a worker died: each again alone, so that only the one that kills it is lost
        for i in [i for i in remote if i not in received and state[i] == STARTED]:
            state[i] = PENDING
            run([[i]], 1)
            if i not in received:
                sources[i].internal_errors.append(InternalError(sources[i].path, "the parser",
                                                                "its worker process died (a crash, or out of memory)"))
                received.add(i)
    finally:
        _PARSING.clear()
    for i in remote:
        if i not in received:
            parse_source(sources[i])  # not started, or parsed in a batch whose worker died later


def build_project(paths: list[str], config: Config) -> tuple[Project, list[Unreadable]]:
    """All files under ``paths`` as one project (a run checks each group of rlhf_lint.engine.groups as its own)."""
    sources, unreadable, _ = read_group(list(discover(paths, config.exclude, Exclusions(Configs(fixed=config)))))
    return project_of(sources, config), unreadable


# -- checking ----------------------------------------------------------------------------------------------------
def _to_diagnostic(rule: Rule, finding: Finding, project: Project, default_path: str | None) -> Diagnostic:
    path = finding.path or default_path or "."
    source = project.sources.get(path)
    if source is not None and finding.span is not None:
        start = source.position(finding.span.start)
        end = source.position(finding.span.end)
        line = source.line_span(start.line)
        line_text, skipped, cut = excerpt(source.text, line.start, line.end, start.column)
    else:
        start = end = finding.position or Position(1, 1)
        line_text, skipped, cut = "", 0, False
    message = finding.message
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + "..."
    return Diagnostic(
        code=rule.code,
        name=rule.name,
        severity=finding.severity or rule.severity,
        message=message,
        path=path,
        span=finding.span,
        start=start,
        end=end,
        fix=finding.fix,
        related=finding.related,
        source_line=line_text,
        source_line_start=skipped,
        source_line_cut=cut,
    )


def _contexts(rule: Rule, project: Project):
    if rule.scope == "file":
        for source in list(project.sources.values()):
            if source.kind in rule.kinds and (source.tree is not None or "unparsed" in rule.kinds) and (
                    not rule.when or project.has(rule.when, source=source)):
                yield Context(project, source=source)
    elif rule.scope == "job":
        for job in project.jobs:
            if (not rule.frameworks or job.framework in rule.frameworks) and (
                    not rule.when or project.has(rule.when, job)):
                yield Context(project, source=project.sources.get(job.path), job=job)
    elif not rule.when or project.has(rule.when):
        yield Context(project)


def check_project(project: Project, unreadable: list[Unreadable], rules: list[Rule]) -> list[Diagnostic]:
    project.unreadable = unreadable  # read by the F rules
    diagnostics: list[Diagnostic] = []
    seen: set[tuple] = set()

    def add(diag: Diagnostic) -> None:
        key = (diag.code, diag.path, diag.start, diag.end, diag.message)
        if key not in seen:  # a job shared by two files must not report twice
            seen.add(key)
            diagnostics.append(diag)

    errors: list[InternalError] = []
    if _rules_forked(project):
        outcomes = _rules_parallel(project, rules, RULE_WORKERS["n"])
    else:
        outcomes = (_run_rule(rule, ctx, project) for rule in rules if rule.code not in REPORTED_ELSEWHERE
                    for ctx in _contexts(rule, project))
    for found, error in outcomes:
        for diag in found:
            add(diag)
        if error is not None:
            errors.append(error)
    for source in project.sources.values():
        errors.extend(source.internal_errors)
    errors.extend(getattr(project, "internal_errors", []))
    for diag in internal_error_diagnostics(project, errors):
        add(diag)
    return diagnostics


def _run_rule(rule: Rule, ctx: Context, project: Project) -> tuple[list[Diagnostic], InternalError | None]:
    """One rule on one context: its diagnostics, and the internal error that stopped it (if any)."""
    found: list[Diagnostic] = []
    # code reading project.config sees the configuration of the file checked (per-file configuration)
    project.focus = ctx.path or (ctx.job.path if ctx.job is not None else None)
    try:
        for count, finding in enumerate(rule.run(ctx)):
            if count == MAX_FINDINGS_PER_RULE:  # the rest would repeat these: say so, stop looking
                found.append(_to_diagnostic(rule, Finding(finding.span, (
                    f"more findings of {rule.code} here are not reported (at most {MAX_FINDINGS_PER_RULE} "
                    "per rule and file); fix these and run again"), severity=Severity.INFO, path=finding.path),
                    project, ctx.path))
                break
            found.append(_to_diagnostic(rule, finding, project, ctx.path))
    except Exception as exc:  # a bug in one rule must not hide the other rules' findings
        if DEBUG["raise"]:
            raise
        return found, InternalError.of(ctx.path, f"rule {rule.code} {rule.name}", exc)
    finally:
        project.focus = None
    return found, None


# The rules of one big group run in this process and forked ones that inherit the parsed project (copy-on-write):
# only diagnostics travel back, in small pickles, never parse trees or jobs. lint() sets the count for a run of one
# group (several groups already go to group workers, and together they would exceed the cores).
RULE_WORKERS = {"n": 1}
# files in one group; below this the forks saved this process no CPU time (generated one-group corpora: 100 files
# 784 -> 772 ms, 200 files 1,947 -> 1,091 ms; docs/performance.md, "One group on two cores")
RULE_PARALLEL_MIN = 200


def _rules_forked(project: Project) -> bool:
    """Whether the rules of this project are shared with forked processes."""
    return (RULE_WORKERS["n"] > 1 and len(project.sources) >= RULE_PARALLEL_MIN and not DEBUG["raise"]
            and hasattr(os, "fork"))


class _JobsElsewhere(list):
    """The jobs of a project in a process forked before they were built: a rule that reads them is run again by
    the parent, once they are built there."""

    def _elsewhere(self, *args):
        raise _NeedsJobs()

    __iter__ = __len__ = __getitem__ = __bool__ = __contains__ = __reversed__ = _elsewhere


class _NeedsJobs(BaseException):  # not an Exception: a rule's own `except Exception` must not swallow it
    pass


_DEFERRED = object()


def _rules_parallel(project: Project, rules: list[Rule], workers: int):
    """(diagnostics, internal error) of each rule on each context, in the serial order, computed by this process
    and ``workers - 1`` forked ones. Two rounds: while this process builds the jobs, forked ones run the file rules
    of the files whose kind the jobs cannot change (everything but JSON); then the rest is shared out by rule
    family. A process that dies costs the rule it was running on that file or job an internal error; what it had
    finished is run again here."""
    results: dict[tuple, tuple] = {}  # (rule code, path or id of the job) -> outcome

    def key(rule: Rule, ctx: Context) -> tuple:
        return (rule.code, ctx.path if ctx.job is None else id(ctx.job))

    early = [(rule, ctx) for rule in rules if rule.scope == "file" and rule.code not in REPORTED_ELSEWHERE
             for ctx in _contexts(rule, project) if ctx.source.kind not in ("json", "ds_config")]

    def before_jobs() -> None:  # in each child of the first round
        project.__dict__.update(_jobs=_JobsElsewhere(), _ds_config_users=None)

    done: dict[int, tuple] = {}
    started = _fork_start(_family_chunks(list(range(len(early))), early), workers - 1,
                          lambda i: _run_or_defer(early[i], project), before_jobs)
    try:
        project.jobs  # built here, meanwhile, once: the second round's processes inherit them
        classify_referenced(project)  # the JSON files the jobs name (project_of left it to this point)
    except BaseException:
        _fork_finish(started, done, here=False)  # the children end their chunks and are reaped; no more work here
        raise
    lost = _fork_finish(started, done, here=True)
    for i, outcome in done.items():
        if outcome is not _DEFERRED:
            results[key(*early[i])] = outcome
    _retry_alone(lost, early, results, key)

    units = [(rule, ctx) for rule in rules if rule.code not in REPORTED_ELSEWHERE for ctx in _contexts(rule, project)]
    rest = [i for i, unit in enumerate(units) if key(*unit) not in results]
    # the first context of each rule left runs here first: what a rule loads on first use (its module, knowledge
    # tables) is then loaded once and inherited, not once per process
    first: dict[str, int] = {}
    for i in rest:
        rule, ctx = units[i]
        if ctx.source is not None or ctx.job is not None:
            first.setdefault(rule.code, i)
    for i in first.values():
        results[key(*units[i])] = _run_rule(*units[i], project)
    rest = [i for i in rest if key(*units[i]) not in results]
    if rest:
        done = {}
        started = _fork_start(_family_chunks(rest, units), workers - 1, lambda i: _run_rule(*units[i], project))
        lost = _fork_finish(started, done, here=True)
        for i, outcome in done.items():
            results[key(*units[i])] = outcome
        _retry_alone(lost, units, results, key)
    for rule, ctx in units:
        outcome = results.get(key(rule, ctx))
        yield outcome if outcome is not None else _run_rule(rule, ctx, project)  # not run, or its result was lost


def _run_or_defer(unit: tuple[Rule, Context], project: Project):
    """_run_rule's outcome, or _DEFERRED when the rule reads jobs a first-round child does not have yet."""
    try:
        return _run_rule(*unit, project)
    except _NeedsJobs:
        return _DEFERRED


def _retry_alone(lost: list[int], units: list, results: dict, key) -> None:
    """The units running when a process died: each again alone in a new one, so that only the one that kills it
    is lost (as an internal error)."""
    for i in lost:
        rule, ctx = units[i]
        done: dict[int, tuple] = {}
        _fork_finish(_fork_start([[i]], 1, lambda j: _run_or_defer(units[j], ctx.project)), done, here=False)
        if i in done:
            if done[i] is not _DEFERRED:
                results[key(rule, ctx)] = done[i]
        else:
            results[key(rule, ctx)] = ([], InternalError(ctx.path, f"rule {rule.code} {rule.name}",
                                                         "its worker process died (a crash, or out of memory)"))


def _family_chunks(indices: list[int], units: list[tuple[Rule, Context]]) -> list[list[int]]:
    """``indices`` (of units) as one chunk per rule family, the largest first. The rules of a family share what
    they compute about the whole project (rules/<family>/_common.py: the M rules' estimate of every job, computed
    by M008 at its first launch without hardware), so a family split over processes would compute it in each."""
    families: dict[str, list[int]] = {}
    for i in indices:
        families.setdefault(units[i][0].family, []).append(i)
    return sorted(families.values(), key=len, reverse=True)


def _fork_start(chunks: list[list[int]], children: int, run_one, in_child=None) -> dict:
    """Fork ``children`` processes that run ``run_one(i)`` for the indices of ``chunks``, each taking the next chunk
    when it is free (this process may take chunks too: _fork_finish). The children inherit everything by fork;
    only results travel back, pickled. ``in_child`` runs first in each child."""
    import gc
    import mmap
    import struct

    size = max([i for c in chunks for i in c], default=-1) + 1
    state = mmap.mmap(-1, max(1, size))  # shared: STARTED, then DONE, per index
    claims, claims_in = os.pipe()
    os.write(claims_in, b"".join(struct.pack("=I", k) for k in range(len(chunks))))  # < 64 KiB: one pipe buffer
    os.close(claims_in)
    run = {"chunks": chunks, "state": state, "claims": claims, "run_one": run_one, "forked": []}
    gc.freeze()  # the children's collections then leave the inherited objects (and their pages) alone
    try:
        for _ in range(children if chunks else 0):
            try:
                out, out_in = os.pipe()
            except OSError:
                break  # no descriptors left: fewer processes
            try:
                pid = os.fork()
            except OSError:  # no processes or memory left: fewer processes
                os.close(out)
                os.close(out_in)
                break
            if pid == 0:
                _child(run, out, out_in, in_child)
            os.close(out_in)
            run["forked"].append((pid, out))
    finally:
        gc.unfreeze()
    return run


def _claim_and_run(run: dict, into: dict) -> None:
    import struct

    state = run["state"]
    while True:
        got = os.read(run["claims"], 4)  # a read of 4 bytes from a pipe is atomic: each chunk goes to one process
        if len(got) < 4:
            return
        for i in run["chunks"][struct.unpack("=I", got)[0]]:
            state[i] = STARTED
            into[i] = run["run_one"](i)
            state[i] = DONE


def _child(run: dict, out: int, out_in: int, in_child) -> None:
    import pickle

    code = 1
    try:  # os._exit below: a child runs no exit handlers and flushes none of the parent's buffers
        os.close(out)
        if in_child is not None:
            in_child()
        done: dict = {}
        _claim_and_run(run, done)
        done = {i: (None if v is _DEFERRED else v) for i, v in done.items()}  # the marker cannot travel
        try:
            data = pickle.dumps(done, pickle.HIGHEST_PROTOCOL)
        except Exception:
            data = b""  # a result that cannot travel: the parent runs these units itself
        view = memoryview(data)
        while view:
            view = view[os.write(out_in, view):]
        code = 0
    finally:
        os._exit(code)


def _fork_finish(run: dict, results: dict, here: bool) -> list[int]:
    """Take the chunks left (when ``here``), then collect the children's results into ``results``; the indices
    a child was running when it died. A dead child's finished results are missing from ``results``. With
    ``here`` False and no child forked, every index counts as lost (it must not run in this process)."""
    import pickle

    try:
        if here:
            _claim_and_run(run, results)
    finally:
        os.close(run["claims"])
        for pid, out in run["forked"]:
            parts = []
            while True:
                part = os.read(out, 1 << 20)
                if not part:
                    break
                parts.append(part)
            os.close(out)
            os.waitpid(pid, 0)
            try:
                got = pickle.loads(b"".join(parts))
            except Exception:
                continue  # the child died (no or half a pickle): see the state of its units below
            results.update({i: (_DEFERRED if v is None else v) for i, v in got.items()})
    indices = [i for c in run["chunks"] for i in c]
    state = run["state"]
    if not here and not run["forked"]:
        lost = indices
    else:
        lost = [i for i in indices if i not in results and state[i] == STARTED]
    state.close()
    return lost


# rules whose diagnostics are made without calling them: by the engine after every other rule ran (F010, F100), or
# by `rlhf-lint env` (P005, which compares installed packages, something files alone never show)
REPORTED_ELSEWHERE = {"F010", "F100", "P005"}


def internal_error_diagnostics(project: Project, errors: list[InternalError]) -> list[Diagnostic]:
    rule = REGISTRY.get("F010")
    if rule is None:
        return []
    out = []
    for err in errors:
        message = (f"internal error in {err.stage}: {err.error} (checks of it on this file are incomplete; "
                   "run with --debug for the traceback and please report it)")
        out.append(_to_diagnostic(rule, Finding(None, message), project, err.path))
    return out


def filter_suppressed(project: Project, diagnostics: list[Diagnostic], rules: list[Rule]) -> list[Diagnostic]:
    kept: list[Diagnostic] = []
    suppressions: dict[str, Suppressions] = {p: Suppressions.scan(s) for p, s in project.sources.items()}
    ignored_cache: dict[str, set[str]] = {}
    for diag in diagnostics:
        if diag.path not in ignored_cache:
            ignored_cache[diag.path] = _per_file_ignored(project.config_for(diag.path), diag.path)
        if diag.code in ignored_cache[diag.path]:
            continue
        sup = suppressions.get(diag.path)
        if sup is not None and sup.suppresses(diag.start.line, diag.code, diag.name):
            continue
        kept.append(diag)
    unused_rule = REGISTRY.get("F100")
    if unused_rule is not None and unused_rule in rules:
        for path, sup in suppressions.items():
            if "F100" in _per_file_ignored(project.config_for(path), path):
                continue
            for d in sup.directives:
                if d.used:
                    continue
                unknown = [c for c in d.codes if REGISTRY.get(c) is None]
                if unknown:
                    message = f"suppression names unknown rule(s): {', '.join(unknown)}"
                else:
                    what = ", ".join(d.codes) if d.codes else "any rule"
                    message = f"unused suppression: {what} reported nothing {'in this file' if d.file_wide else 'on this line'}"
                kept.append(_to_diagnostic(unused_rule, Finding(d.span, message), project, path))
    return kept


PARALLEL_MIN_FILES = 64  # below this, starting worker processes costs more than it saves


def lint(paths: list[str], config: Config, options: Options, configs: Configs | None = None,
         skip=None) -> Result:
    """Check ``paths``: discover, split into independent groups (rlhf_lint.engine.groups), check each group (in worker
    processes when there are many files and nothing is being fixed; from the cache when unchanged), merge.
    ``configs`` gives each file its configuration (default: ``config`` for all); ``skip`` is discovery's
    exclusion test (default: the configurations' excludes and .gitignore). A run without the cache
    (``Options.cache`` off) reads no parsed knowledge from the cache folder either."""
    from rlhf_lint import cachedir

    enabled = cachedir.set_enabled(options.cache)
    try:
        return _lint(paths, config, options, configs, skip)
    finally:
        cachedir.set_enabled(enabled)
        RULE_WORKERS["n"] = 1  # a later check_sources (standard input, the server) runs its rules here


def _lint(paths: list[str], config: Config, options: Options, configs: Configs | None, skip) -> Result:
    from rlhf_lint.engine.groups import partition

    DEBUG["raise"] = options.debug
    if not options.roots:  # a copy: the caller's options may serve another run over other paths
        options = replace(options, roots=given_roots(paths))
    configs = configs or Configs(fixed=config)
    selected_rules(config, options)  # unknown selectors of the options: refused before any file is read
    skip = skip or Exclusions(configs)
    discovered = list(discover(paths, config.exclude, skip))
    config_of = {path: configs.for_path(path) for path, _ in discovered}
    rules_of: dict[int, list[Rule]] = {}
    for cfg in [config] + list(config_of.values()):
        if id(cfg) not in rules_of:
            rules_of[id(cfg)] = selected_rules(cfg, options)
    messages = []
    for cfg in [config] + configs.loaded():
        messages.extend(m for m in cfg.warnings if m not in messages)
    messages.extend(getattr(skip, "warnings", ()))  # ignore files not applied (each named once)
    order = {r.code: i for i, r in enumerate(REGISTRY.known())}  # rules run in the registry's order, as before
    groups = []
    same: dict[tuple, list] = {}  # one list of codes for the groups that run the same rules (the usual run: all)
    for items in partition(discovered, config.root, options.roots):
        own = {path: config_of[path] for path, _ in items}
        codes = sorted({r.code for path in own for r in rules_of[id(own[path])]}, key=order.__getitem__)
        groups.append((items, own, same.setdefault(tuple(codes), codes)))
    files = len(discovered)
    del discovered, config_of, same  # the groups hold what is checked (memory flat in files: see _serial)
    fixing = options.fix or options.diff
    settings = run_settings(options) if options.cache and not fixing else None
    workers = worker_count(options, len(groups), files)
    if settings is not None and workers > 1:
        from rlhf_lint import cachedir

        cachedir.usable()  # the folder is checked (and its key read) once, before workers fork
    PARSE_WORKERS["n"] = RULE_WORKERS["n"] = 1
    if workers == 1 and not fixing:  # one group: its own work goes to the cores (group workers would exceed them)
        spare = min(options.jobs or env_jobs() or available_cpus(), available_cpus())
        RULE_WORKERS["n"] = spare
        if files >= PARSE_PARALLEL_MIN:
            PARSE_WORKERS["n"] = spare
    if workers > 1:
        outcomes = _parallel(groups, config, options, settings, workers)
    else:
        outcomes = _serial(groups, config, options, settings)
    from rlhf_lint.engine.digests import Digests
    from rlhf_lint.engine.report import Diagnostics, LineIndexes, Report

    # each group's findings are kept compact as it ends (memory flat in the number of files: rlhf_lint.engine.report)
    report = Report()
    result = Result(diagnostics=Diagnostics(report), messages=messages, sources=LineIndexes(report))
    reported = Digests()  # digests, not the keys: a key holds the message
    for out in outcomes:
        kept = []
        for d in out.diagnostics:  # a repository-wide finding (P006 on the configuration) comes from every group
            key = _digest(d)
            if key not in reported:
                reported.add(key)
                kept.append(d)
        report.add(kept, out.sources)
        result.fixed += out.fixed
        result.changed.update(out.changed)
        result.applied.update(out.applied)
        result.write_errors.extend(out.write_errors)
        result.files_checked += out.files_checked
        result.messages.extend(m for m in out.messages if m not in result.messages)
    if settings is not None:
        from rlhf_lint.cachedir import refusal

        if refusal():
            result.messages.append(refusal())
    result.internal_errors = sum(1 for d in result.diagnostics if d.code == "F010")
    return result


def _digest(d: Diagnostic) -> bytes:
    """What makes two diagnostics the same finding, in 16 bytes."""
    from _blake2 import blake2b  # the C module directly, as rlhf_lint.cachedir: hashlib's import costs start-up

    key = repr((d.code, d.path, d.start.line, d.start.column, d.end.line, d.end.column, d.message))
    return blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def given_roots(paths: list[str]) -> tuple:
    roots = []
    for path in paths:
        full = os.path.abspath(path)
        roots.append(os.path.realpath(full if os.path.isdir(full) else os.path.dirname(full)))
    return tuple(roots)


def _serial(groups, config, options, settings):
    for index in range(len(groups)):
        items, own, codes = groups[index]
        groups[index] = None  # its paths and configurations are not needed once it is checked
        if index == 1:
            restore_gc_threshold()  # the console script's start-up setting ends with the first group (see rlhf_lint)
        yield lint_group(items, config, options, [REGISTRY.get(c) for c in codes], settings, own)


def worker_count(options: Options, groups: int, files: int) -> int:
    if options.fix or options.diff or groups < 2 or files < PARALLEL_MIN_FILES:
        return 1
    cores = available_cpus()
    wanted = options.jobs or env_jobs() or cores
    return max(1, min(wanted, groups, cores))


def available_cpus() -> int:
    """The cores this process may run on (its affinity mask, which containers and taskset narrow), else all."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def env_jobs() -> int | None:
    """RLHF_LINT_JOBS as a number of worker processes, None when unset or empty; anything but an integer >= 1
    is a configuration error (the CLI reports it and exits 2)."""
    raw = os.environ.get("RLHF_LINT_JOBS", "").strip()
    if not raw:
        return None
    try:
        jobs = int(raw)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise ConfigError(f"RLHF_LINT_JOBS must be a whole number of worker processes, at least 1 (got {raw!r})")
    return jobs


def run_settings(options: Options) -> str:
    """What besides the files and their configurations (added per group) the findings depend on, for the cache
    key."""
    return repr((os.getcwd(), options.unsafe_fixes))


def lint_group(items: list[tuple[str, bool]], config: Config, options: Options, rules: list[Rule],
               settings: str | None, configs: dict[str, Config] | None = None) -> Result:
    """Check one group of files as a project of its own; never raises for a bug of ours unless debugging.
    ``configs``: each file's configuration where it is not ``config``."""
    try:
        return _lint_group_kept(items, config, options, rules, settings, configs)
    finally:
        release_group_state()


def _lint_group_kept(items, config, options, rules, settings, configs) -> Result:
    try:
        result = _lint_group(items, config, options, rules, settings, configs or {})
        # parse trees are dropped with the group (memory stays flat in the number of files): reporters need only
        # positions, for the fix edits of the JSON report
        from rlhf_lint.model import paths_with_positions

        wanted = paths_with_positions(result.diagnostics)
        result.sources = {p: LineIndex.of(s) for p, s in result.sources.items() if p in wanted}
        return result
    except Exception as exc:
        if options.debug:
            raise
        result = Result(diagnostics=[])
        project = Project([], config)
        errors = [InternalError.of(path, "the check of its group of files", exc) for path, _ in items]
        result.diagnostics = internal_error_diagnostics(project, errors)
        return result


# Module-level memos keyed by id() of a parse tree or node: they never serve another group (its trees are new), and
# each entry keeps a tree, or a whole project, alive
_GROUP_MEMOS = (("rlhf_lint.readers.shell", "_FIELDS"), ("rlhf_lint.readers.python", "_POSITIONS"),
                ("rlhf_lint.frameworks.orz", "_MODULES"), ("rlhf_lint.frameworks.orz", "_CONFIGS"))


def release_group_state() -> None:
    """Empty the memos of the group just checked (of the modules it loaded)."""
    import sys

    for module, name in _GROUP_MEMOS:
        loaded = sys.modules.get(module)
        if loaded is not None:
            getattr(loaded, name).clear()



def _lint_group(items, config, options, rules, settings, configs) -> Result:
    sources, unreadable, identity = read_group(items, options.roots)
    if configs:  # the group's own configuration: that of its first file
        config = configs.get(items[0][0], config)
    return check_sources(sources, unreadable, identity, config, options, rules, settings, configs)


def check_sources(sources, unreadable, identity, config, options, rules, settings, configs) -> Result:
    """Check Sources already read (the files of a group, or standard input) and fix them if asked."""
    key = None
    distinct = {id(c): c for c in [config, *configs.values()]}
    if settings is not None and not unreadable:
        from rlhf_lint.engine import cache

        # each file's configuration is part of what its findings depend on
        key = cache.group_key(identity, repr((settings, sorted(r.code for r in rules),
                                              sorted((p, repr(c)) for p, c in configs.items()), repr(config))))
        hit = cache.load(key)
        if hit is not None:
            try:
                return Result(**cache.result_fields_from_json(hit))
            except (KeyError, TypeError, ValueError):
                pass  # an entry of another shape: recompute and overwrite it
    project = project_of(sources, config, configs)
    result = Result(diagnostics=[], messages=[])
    originals = {p: s.raw for p, s in project.sources.items()}
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if options.unsafe_fixes else set())
    selected = None
    if len(distinct) > 1:  # files of one group under different configurations: each keeps its own selection
        codes = {id(c): {r.code for r in selected_rules(c, options)} for c in distinct.values()}
        selected = lambda path: codes[id(project.config_for(path))]  # noqa: E731

    def checked(project):
        found = filter_suppressed(project, check_project(project, unreadable, rules), rules)
        return found if selected is None else [d for d in found if d.code in selected(d.path)]

    diagnostics = checked(project)
    if options.fix or options.diff:
        before_fixes = diagnostics
        seen_states = {_state(project)}
        for _ in range(MAX_FIX_ROUNDS):
            fixing_codes = sorted({d.code for d in diagnostics if d.fix is not None and d.fix.applicability in allowed})
            applied = apply_fixes(project, diagnostics, allowed, result.applied)
            if not applied:
                break
            result.fixed += applied
            project = rebuild(project)
            diagnostics = checked(project)
            state = _state(project)
            if state in seen_states:  # two fixes undo each other: stop at once rather than after every round
                result.messages.append(f"warning: fixes of {', '.join(fixing_codes)} undo each other; stopped")
                break
            seen_states.add(state)
        else:
            result.messages.append(f"warning: fixes did not converge after {MAX_FIX_ROUNDS} rounds")
        for path, source in project.sources.items():
            if source.raw != originals.get(path):
                result.changed[path] = (originals[path], source.raw)
        if options.fix and not options.diff:
            failed = write_changes(project, result.changed, options.roots)
            if failed:
                # a file left alone still holds what the fixes would have changed: report its findings as they
                # are on disk, and count none of its fixes
                diagnostics = ([d for d in diagnostics if d.path not in failed]
                               + [d for d in before_fixes if d.path in failed])
                diagnostics.sort(key=Diagnostic.sort_key)
                for path in failed:
                    result.fixed -= sum(result.applied.pop(path, {}).values())
                    del result.changed[path]
                result.write_errors = list(failed.values())
    result.diagnostics = diagnostics
    result.files_checked = len(project.sources)
    result.sources = project.sources
    if key is not None and not any(d.code == "F010" for d in diagnostics):
        cache.store(key, cache.result_to_json(result))
    return result


def _state(project: Project) -> tuple:
    return tuple(sorted((p, hash(s.text)) for p, s in project.sources.items()))


# -- worker processes ----------------------------------------------------------------------------------------------
_WORKER: dict = {}


PENDING, STARTED, DONE = 0, 1, 2  # a group's state in the array the workers share with the parent


def _worker_init(config: Config, options: Options, settings: str | None, groups=None, state=None) -> None:
    restore_gc_threshold()  # a forked worker inherits the console script's start-up setting
    DEBUG["raise"] = options.debug
    _WORKER.update(config=config, options=options, settings=settings, groups=groups, state=state)


def _worker_run(indices: list[int]) -> list[tuple[int, Result]]:
    """Check the groups at ``indices``, marking each STARTED then DONE, so that when the process dies (a crash in
    C code, the kernel's out-of-memory killer) the parent knows which group it was checking."""
    out = []
    state = _WORKER["state"]
    for index in indices:
        state[index] = STARTED
        items, own, codes = _WORKER["groups"][index]
        out.append((index, lint_group(items, _WORKER["config"], _WORKER["options"], [REGISTRY.get(c) for c in codes],
                                      _WORKER["settings"], own)))
        state[index] = DONE
    return out


def _parallel(groups, config, options, settings, workers):
    """Results of the groups as the workers finish them (nothing is kept here: memory stays flat). A worker that
    dies takes only its own group down: the groups it held are checked again, each suspect alone in a pool of
    one, and a group that kills its worker alone is reported with F010 instead of ending the run."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    state = context.RawArray("b", len(groups))
    pending = list(range(len(groups)))
    suspects: list[int] = []
    while pending or suspects:
        alone = bool(suspects)  # a suspect runs by itself: if its worker dies, it is the one
        batch = suspects[:1] if alone else pending
        chunk = 1 if alone else max(1, min(64, len(batch) // (workers * 8)))
        received: set[int] = set()
        with ProcessPoolExecutor(max_workers=1 if alone else workers, mp_context=context, initializer=_worker_init,
                                 initargs=(config, options, settings, groups, state)) as pool:
            futures = [pool.submit(_worker_run, batch[i:i + chunk]) for i in range(0, len(batch), chunk)]
            for future in as_completed(futures):
                try:
                    done = future.result()
                except BrokenProcessPool:
                    continue
                for index, result in done:
                    received.add(index)
                    yield result
            futures.clear()
        lost = [i for i in batch if i not in received]
        if alone:
            suspects.pop(0)
            if lost:
                yield _crashed(groups[lost[0]][0], config)
            continue
        suspects = [i for i in lost if state[i] == STARTED]
        if lost and not suspects and not received:
            suspects = lost  # the pool died before any group started: try each alone rather than loop
        pending = [i for i in lost if i not in suspects]  # not started, or done in a chunk that was lost
        for i in pending:
            state[i] = PENDING


def _crashed(items: list[tuple[str, bool]], config: Config) -> Result:
    """F010 for each file of a group whose check killed its worker process."""
    errors = [InternalError(path, "the check of its group of files", "its worker process died (a crash, or "
                                  "out of memory): these files were not checked") for path, _ in items]
    return Result(diagnostics=internal_error_diagnostics(Project([], config), errors))


def apply_fixes(project: Project, diagnostics: list[Diagnostic], allowed: set[Applicability],
                counts: dict | None = None) -> int:
    """Apply one round of non-overlapping fixes per file; a fix whose result does not parse is dropped.
    ``counts`` (path -> {code: n}) is told which rules' fixes were applied."""
    by_path: dict[str, list] = {}
    code_of: dict[int, str] = {}
    for diag in diagnostics:
        if diag.fix is not None and diag.fix.applicability in allowed and diag.path in project.sources:
            by_path.setdefault(diag.path, []).append(diag.fix)
            code_of[id(diag.fix)] = diag.code
    applied = 0
    for path, fixes in by_path.items():
        try:
            done = _apply_file_fixes(project.sources[path], fixes)
            applied += len(done)
            if counts is not None:
                for fix in done:
                    per_code = counts.setdefault(path, {})
                    per_code[code_of[id(fix)]] = per_code.get(code_of[id(fix)], 0) + 1
        except Exception as exc:  # a malformed fix (edit out of range, overlap) drops that file's fixes
            if DEBUG["raise"]:
                raise
            project.sources[path].internal_errors.append(InternalError.of(path, "fix", exc))
    return applied


def _apply_file_fixes(source: Source, fixes: list) -> list:
    from rlhf_lint.fixers.text import apply_edits, compatible_fixes

    size = len(source.text)
    fixes = [f for f in fixes if all(0 <= e.start <= e.end <= size for e in f.edits)]  # stale or bogus edits
    chosen = compatible_fixes(fixes)
    # all compatible fixes at once; if the combination breaks the file, the first one that alone does not
    for batch in [chosen] + [[f] for f in chosen]:
        new_text = apply_edits(source.text, [e for f in batch for e in f.edits])
        if new_text == source.text:
            continue
        trial = Source(path=source.path, raw=source.encode(new_text), text=new_text, kind=source.kind,
                       has_bom=source.has_bom, mode=source.mode)
        parse_source(trial)
        if trial.internal_errors or (trial.parse_error is not None and source.parse_error is None):
            continue  # never turn a parsing file into a broken one
        source.text, source.raw = new_text, trial.raw
        source.tree, source.parse_error = trial.tree, trial.parse_error
        source._line_starts = None
        source._byte_to_char = None
        return batch
    return []


def rebuild(project: Project) -> Project:
    sources = list(project.sources.values())
    for s in sources:
        if s.kind == "ds_config":
            s.kind = "json"
    new = Project(sources, project.config, project.configs)
    classify(new)
    return new


def write_changes(project: Project, changed: dict[str, tuple[bytes, bytes]], roots: tuple = ()) -> dict[str, str]:
    """Write each changed file; the files left alone, each with the reason."""
    errors = {}
    for path, (old, new) in changed.items():
        try:
            atomic_write(path, new, project.sources[path].mode, expected=old, roots=roots)
        except OSError as exc:
            errors[path] = f"{path}: not written: {exc.strerror or exc}"
    return errors


def atomic_write(path: str, data: bytes, mode: int | None, expected: bytes | None = None, roots: tuple = ()) -> None:
    """Replace the file's content by writing a temporary file beside it and renaming it over the original, so a
    reader never sees half a file. The temporary file has an unpredictable name and is created exclusively
    (mkstemp: O_EXCL, mode 0600), so a planted file or symlink cannot redirect the write. A symlink is written
    through (the link stays a link) only when its target lies under one of ``roots`` (when given); a file without
    write permission bits, or one whose bytes changed since they were read (``expected``), is left alone."""
    import tempfile  # only a fixing run writes; tempfile's imports cost start-up time

    target = os.path.realpath(path)
    if roots and not within(target, roots):
        raise PermissionError(1, f"it resolves to {target}, outside the paths being checked")
    st = os.stat(target)
    if not stat.S_ISREG(st.st_mode):
        raise PermissionError(1, "not a regular file")
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise PermissionError(13, "file is read-only")
    if expected is not None:
        with open(target, "rb") as fh:
            if fh.read(len(expected) + 1) != expected:
                raise OSError(0, "file changed on disk since it was read")
    fd, tmp = tempfile.mkstemp(prefix=".rlhf-lint-", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if mode is None else mode)
        if hasattr(os, "chown") and (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)  # root fixing a user's file must not take it over
            except OSError:
                pass
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def lint_stdin(path: str, raw: bytes, config: Config, options: Options) -> tuple[Result, bytes]:
    """Check text given on standard input as the file ``path`` (its kind from the name, else the content); the
    fixed bytes (the input itself when nothing was fixed). Nothing is written. ``raw`` longer than MAX_FILE_BYTES
    (the caller reads one byte more) is not checked: F002."""
    DEBUG["raise"] = options.debug
    rules = selected_rules(config, options)
    sources: list[Source] = []
    unreadable: list[Unreadable] = []
    kind = kind_from_name(os.path.basename(path)) or kind_from_content(raw)
    if len(raw) > MAX_FILE_BYTES:
        unreadable.append(too_large(path, FileTooLarge(MAX_FILE_BYTES, None)))
    elif kind is None:
        unreadable.append(Unreadable(path, "unrecognised file type: name it with --stdin-filename", "F001"))
    else:
        try:
            sources.append(Source.from_bytes(path, raw, kind=kind))
        except DecodeError as exc:
            unreadable.append(Unreadable(path, f"cannot check: {exc}", "F001", exc.position))
    no_write = Options(**{**options.__dict__, "diff": options.diff or options.fix})
    result = check_sources(sources, unreadable, [], config, no_write, rules, None, {})
    # check_sources edits the Source in place as fixes apply
    return result, sources[0].raw if sources else raw
