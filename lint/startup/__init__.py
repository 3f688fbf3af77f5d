"""Start-up speed measures, each kept only where bench/latency.py shows it pays: record classes without
dataclasses, regular expressions compiled on first use, and here: importing by name without importlib and a higher
garbage-collector threshold while a run starts."""


def import_module(name: str):
    """``importlib.import_module`` for absolute names, without importing importlib (and warnings): ~0.4 ms of a
    one-file run, which imports rule and job-builder modules by name. A module of this package whose bytecode cache
    is current is loaded from it directly (load_cached)."""
    import sys

    module = sys.modules.get(name)
    if module is None:
        if name.startswith("rlhf_lint."):
            parent = name.rpartition(".")[0]
            if parent not in sys.modules:
                import_module(parent)
            module = load_cached(name)
        if module is None:
            __import__(name)
            module = sys.modules[name]
    return module


def load_cached(name: str):
    """The submodule ``name`` of an imported package, executed from its current ``__pycache__`` file the way
    importlib's source loader would, or None to leave the import to importlib: no cache file, a stale one (source
    mtime or size changed), a hash-based or optimised one, another interpreter's magic number, a namespace parent.

    Why: a one-file run imports ~30 rule modules by name (one rule per module), and importlib's finders and loader,
    written in Python, cost ~110 µs a module on the 2-core VM; reading the cache file directly halves the 7.7 ms
    those imports took (bench/latency.py, docs/performance.md). Only the package's own modules come here."""
    import marshal
    import os
    import sys

    parent_name, _, short = name.rpartition(".")
    parent = sys.modules.get(parent_name)
    paths = getattr(parent, "__path__", None)
    tag = sys.implementation.cache_tag
    if parent is None or paths is None or len(paths) != 1 or tag is None or sys.flags.optimize:
        return None
    source = os.path.join(paths[0], short + ".py")
    cached = os.path.join(paths[0], "__pycache__", f"{short}.{tag}.pyc")
    external = sys.modules["_frozen_importlib_external"]
    try:
        st = os.stat(source)
        with open(cached, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # the header importlib writes and checks: magic, flags 0 (timestamp-based), source mtime and size (mod 2**32)
    if (data[:4] != external.MAGIC_NUMBER or data[4:8] != b"\0\0\0\0"
            or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
            or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF):
        return None
    try:
        code = marshal.loads(memoryview(data)[16:])
    except (ValueError, EOFError, TypeError):
        return None
    loader = external.SourceFileLoader(name, source)
    spec = sys.modules["_frozen_importlib"].ModuleSpec(name, loader, origin=source)
    spec.cached, spec.has_location = cached, True
    module = type(sys)(name)
    module.__spec__, module.__loader__, module.__package__ = spec, loader, parent_name
    module.__file__, module.__cached__ = source, cached
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    module = sys.modules[name]
    setattr(parent, short, module)
    return module


# Collect young objects every 20,000 allocations instead of 700 while starting: start-up creates tens of thousands
# of long-lived objects (modules, functions, knowledge), and the default ran ~23 collections (~2 ms) over them in a
# one-file run. The runner restores the previous setting once a run goes on to a second group of files, so that
# garbage cycles of checked groups are freed as often as before (peak memory over 5,000 files grew by 40 % without).
STARTUP_GC_THRESHOLD = (20_000, 10, 10)
_GC_BEFORE_STARTUP: list[tuple[int, int, int]] = []


def raise_gc_threshold_for_startup() -> None:
    import gc

    if not _GC_BEFORE_STARTUP:  # a second call (tests call the entry point repeatedly) changes nothing
        _GC_BEFORE_STARTUP.append(gc.get_threshold())
        gc.set_threshold(*STARTUP_GC_THRESHOLD)


def restore_gc_threshold() -> None:
    import gc

    if _GC_BEFORE_STARTUP:
        gc.set_threshold(*_GC_BEFORE_STARTUP.pop())
