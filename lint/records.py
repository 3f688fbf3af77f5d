"""Record (value) classes without the start-up cost of ``dataclasses``.

``@dataclass`` writes and compiles the source of ``__init__``, ``__repr__``, ``__eq__`` (and ``__hash__``,
``__setattr__`` for frozen classes) of every class at import time, and importing it loads ``inspect`` (ast, dis,
tokenize): 0.3-0.6 ms per class plus ~7 ms, about 30 ms of a one-file run over the engine's ~65 value types, three
times the cost of starting the interpreter. ``@record`` gives the same behaviour from closures over the field list, so
nothing is compiled at import: positional and keyword arguments, defaults and ``field(default_factory=...)``,
``__post_init__``, ``frozen``, ``slots``, ``eq`` (with the hash rules of dataclasses), ``repr`` and
``field(repr=False)``, inheritance of fields, pickling and copying, and ``replace()``. The ``__init__`` of each record
class of the package is the one dataclasses would write, generated ahead of time into ``rlhf_lint/record_inits.py``
(``python -m rlhf_lint.records --write-inits``), whose bytecode Python caches; any other class gets one from closures.
"""
from __future__ import annotations

from operator import attrgetter

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record (the same meaning as dataclasses.FrozenInstanceError)."""


class Field:
    __slots__ = ("default", "default_factory", "repr")

    def __init__(self, default=_MISSING, default_factory=_MISSING, repr=True):  # noqa: A002 - dataclasses' name
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot give both default and default_factory")
        self.default = default
        self.default_factory = default_factory
        self.repr = repr


def field(*, default=_MISSING, default_factory=_MISSING, repr=True):  # noqa: A002 - dataclasses' name
    return Field(default, default_factory, repr)


def record(cls=None, /, *, frozen: bool = False, eq: bool = True, slots: bool = False, hot: bool = False):
    """Class decorator: ``@record``, ``@record(frozen=True, slots=True)``, ``@record(eq=False)``.

    ``hot=True`` for a class made many times per file (per word, value, span or finding): its ``__init__`` is then
    the one generated ahead of time into rlhf_lint/record_inits.py, 1-2 µs faster a call than one from closures.
    """

    def wrap(klass):
        return _make_record_class(klass, frozen, eq, slots, hot)

    return wrap if cls is None else wrap(cls)


def fields(obj_or_cls) -> tuple[str, ...]:
    """The field names of a record class or instance, in definition order."""
    return tuple(obj_or_cls.__record_fields__)


def replace(obj, /, **changes):
    """A copy of ``obj`` with some fields changed (dataclasses.replace)."""
    for name in obj.__record_fields__:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return obj.__class__(**changes)


_REQUIRED = Field()  # the spec of every field without a default (specs are never changed)


def _collect_fields(cls) -> dict[str, Field]:
    """Fields of the record bases (in MRO order, as dataclasses does), then the class's own annotations."""
    out: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:-1]):  # the last is object
        inherited = base.__dict__.get("__record_fields__")
        if inherited:
            out.update(inherited)
    namespace = cls.__dict__
    for name in namespace.get("__annotations__", ()):
        declared = namespace.get(name, _MISSING)
        spec = _REQUIRED if declared is _MISSING else declared if isinstance(declared, Field) else Field(declared)
        if isinstance(spec.default, (list, dict, set)):
            raise ValueError(f"mutable default {type(spec.default).__name__} for field {name} of {cls.__name__}: "
                             "use field(default_factory=...)")
        out[name] = spec
    seen_default = False
    for name, spec in out.items():
        if spec is _REQUIRED or (spec.default is _MISSING and spec.default_factory is _MISSING):
            if seen_default:
                raise TypeError(f"non-default argument {name!r} follows default argument in {cls.__name__}")
        else:
            seen_default = True
    return out


def _make_record_class(cls, frozen: bool, eq: bool, slots: bool, hot: bool):
    specs = _collect_fields(cls)
    names = tuple(specs)
    own = list(cls.__dict__.get("__annotations__", ()))
    if slots:
        cls = _with_slots(cls, own)
    else:
        for name in own:  # a default stays a class attribute (as with dataclasses); a factory or marker does not
            declared = cls.__dict__.get(name, _MISSING)
            if isinstance(declared, Field):
                if declared.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, declared.default)
    cls.__record_fields__ = specs
    # what the shared __repr__, __eq__ and __hash__ below read from the instance's class
    cls.__record_repr__ = tuple(n for n in names if specs[n].repr)
    cls.__record_key__ = _key_for(names)
    written = cls.__dict__  # a method the class defines itself wins, as with dataclasses
    if "__init__" not in written:
        init = _init_for(cls, names, specs, slots, hot)
        init.__qualname__ = f"{cls.__qualname__}.__init__"  # a function made for this class: its name in tracebacks
        cls.__init__ = init
    if "__repr__" not in written:
        cls.__repr__ = _record_repr
    if eq:
        if "__eq__" not in written:
            cls.__eq__ = _record_eq
        explicit_hash = "__hash__" in written and not (written["__hash__"] is None and "__eq__" in written)
        if not explicit_hash:
            cls.__hash__ = _record_hash if frozen else None
    if frozen:
        for attr, function in _FROZEN_METHODS[slots]:
            if attr not in written:
                setattr(cls, attr, function)
    return cls


def _with_slots(cls, own: list[str]):
    """A new class with ``__slots__`` for the class's own fields (a class's slots cannot be added afterwards)."""
    body = dict(cls.__dict__)
    inherited = {s for base in cls.__mro__[1:] for s in base.__dict__.get("__slots__", ())}
    body["__slots__"] = tuple(n for n in own if n not in inherited)
    for name in own:
        body.pop(name, None)  # a class attribute would shadow the slot descriptor
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    new = type(cls)(cls.__name__, cls.__bases__, body)
    new.__qualname__ = cls.__qualname__
    return new


def _init_for(cls, names: tuple[str, ...], specs: dict[str, Field], slots: bool, hot: bool):
    post_init = hasattr(cls, "__post_init__")
    if hot:
        shape = init_shape(names, specs, slots, post_init)
        HOT_SHAPES.add(shape)
        generated = _generated_inits().get(shape)
        if generated is not None:
            return _bound_generated_init(generated, cls, names, specs, slots)
    return _generic_init(cls, names, specs, slots, post_init)


def _bound_generated_init(generated, cls, names: tuple[str, ...], specs: dict[str, Field], slots: bool):
    """The generated __init__ of the class's shape with the class's own defaults, factories and slot setters (its
    globals: the generated code reads ``_set_<i>``, ``_factory_<i>`` and ``_MISSING``)."""
    scope = {"_MISSING": _MISSING}
    for i, name in enumerate(names):
        if slots:
            scope[f"_set_{i}"] = _slot_setter(cls, name)
        if specs[name].default_factory is not _MISSING:
            scope[f"_factory_{i}"] = specs[name].default_factory
    # a field with a factory defaults to _MISSING, which the body replaces with a fresh value
    defaults = tuple(s.default for s in specs.values() if s.default is not _MISSING or s.default_factory is not _MISSING)
    return type(generated)(generated.__code__, scope, "__init__", defaults or None)


def _generic_init(cls, names: tuple[str, ...], specs: dict[str, Field], slots: bool, post_init: bool):
    """An __init__ from closures: for a class that is not hot, or whose shape the generated module lacks."""
    count = len(names)
    known = frozenset(names)
    defaults = {n: s.default for n, s in specs.items() if s.default is not _MISSING}
    factories = {n: s.default_factory for n, s in specs.items() if s.default_factory is not _MISSING}

    def bind(args: tuple, kwargs: dict) -> dict:
        """name -> value for every field (merged by dict operations, in C), or the TypeError of a bad call."""
        if len(args) > count:
            raise TypeError(f"{cls.__name__}() takes {count} positional arguments but {len(args)} were given")
        values = dict(zip(names, args))
        if kwargs:
            if not known.issuperset(kwargs):
                unknown = next(k for k in kwargs if k not in known)
                raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {unknown!r}")
            if values.keys() & kwargs.keys():
                twice = next(k for k in kwargs if k in values)
                raise TypeError(f"{cls.__name__}() got multiple values for argument {twice!r}")
            values.update(kwargs)
        if len(values) < count:
            values = {**defaults, **values}
            if len(values) < count:
                for name, factory in factories.items():
                    if name not in values:
                        values[name] = factory()
                if len(values) < count:
                    missing = next(n for n in names if n not in values)
                    raise TypeError(f"{cls.__name__}() missing required argument {missing!r}")
        return values

    if slots:
        setters = {n: _slot_setter(cls, n) for n in names}

        def __init__(self, *args, **kwargs):
            for name, val in bind(args, kwargs).items():
                setters[name](self, val)
            if post_init:
                self.__post_init__()
    else:
        def __init__(self, *args, **kwargs):
            # straight into the instance dict: one C call, and past the __setattr__ of frozen records
            self.__dict__.update(bind(args, kwargs))
            if post_init:
                self.__post_init__()

    return __init__


def _slot_setter(cls, name: str):
    """``setter(obj, value)`` through the slot's own descriptor (a fifth faster than object.__setattr__, and past
    a frozen record's __setattr__); object.__setattr__ for a field that is not a slot of ``cls``."""
    return getattr(getattr(cls, name, None), "__set__", None) or (lambda obj, val: object.__setattr__(obj, name, val))


def init_shape(names: tuple[str, ...], specs: dict[str, Field], slots: bool, post_init: bool) -> str:
    """What an __init__ depends on, as the key of the generated module: 'slots+post:start,end',
    'dict:text,path=,parts=()' (``=`` a default, ``=()`` a default factory)."""
    fields = ",".join(n + ("=" if specs[n].default is not _MISSING else "=()" if specs[n].default_factory is not _MISSING
                           else "") for n in names)
    return f"{'slots' if slots else 'dict'}{'+post' if post_init else ''}:{fields}"


def init_source(shape: str, function_name: str) -> str:
    """Source of the __init__ that dataclasses would write for a class of this shape (``init_shape``), as a plain
    function: defaults are placeholders and setters and factories globals, bound per class by _bound_generated_init."""
    layout, _, spec = shape.partition(":")
    fields = [f.partition("=") for f in spec.split(",")] if spec else []
    names = [name for name, _, _ in fields]
    if {"self", "_MISSING"} & set(names) or any(n.startswith(("_set_", "_factory_")) for n in names):
        raise ValueError(f"a field name of {shape!r} is reserved by the generated __init__")
    params, body = ["self"], []
    for i, (name, has_default, kind) in enumerate(fields):
        params.append(f"{name}=_MISSING" if has_default else name)
        if kind == "()":
            body += [f"if {name} is _MISSING:", f"    {name} = _factory_{i}()"]
    if layout.startswith("slots"):
        body += [f"_set_{i}(self, {name})" for i, name in enumerate(names)]
    elif names:
        body.append("self.__dict__.update({" + ", ".join(f"{n!r}: {n}" for n in names) + "})")
    if layout.endswith("+post"):
        body.append("self.__post_init__()")
    return "\n".join([f"def {function_name}({', '.join(params)}):"] + [f"    {line}" for line in body or ["pass"]]) + "\n"


# the shapes of the classes decorated with hot=True in this process (what the generated module must hold)
HOT_SHAPES: set[str] = set()
_GENERATED: dict | None = None


def _generated_inits() -> dict:
    global _GENERATED
    if _GENERATED is None:
        try:
            from .record_inits import INITS
        except ModuleNotFoundError:  # not generated yet: every class gets the __init__ from closures
            INITS = {}
        _GENERATED = INITS
    return _GENERATED


def generated_module_source() -> str:
    """The text of rlhf_lint/record_inits.py: the __init__ of every shape of the package's hot record classes
    (Python caches its bytecode, so a run compiles nothing: ~70 µs a class)."""
    import importlib
    import pkgutil

    import rlhf_lint

    for info in pkgutil.walk_packages(rlhf_lint.__path__, "rlhf_lint."):
        if info.name.rpartition(".")[2] not in ("__main__", "record_inits"):
            importlib.import_module(info.name)  # decorating its classes adds their shapes to HOT_SHAPES
    ordered = sorted(HOT_SHAPES)
    parts = ['"""The __init__ of the hot record classes of rlhf_lint, by shape (see rlhf_lint.records).',
             "",
             "Generated by `python -m rlhf_lint.records --write-inits`; tests/test_record_inits.py fails when it is",
             "stale. Defaults are placeholders: each class binds its own (records._bound_generated_init).",
             '"""',
             "# ruff: noqa: F821, E501 - _set_<i> and _factory_<i> are globals each class binds; lines as generated",
             "from rlhf_lint.records import _MISSING"]
    parts += ["\n\n" + init_source(shape, f"_init_{i}").rstrip("\n") for i, shape in enumerate(ordered)]
    parts.append("\n\nINITS = {")
    parts += [f"    {shape!r}: _init_{i}," for i, shape in enumerate(ordered)]
    parts.append("}\n")
    return "\n".join(parts)


def _record_repr(self):
    inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_repr__)
    return f"{self.__class__.__qualname__}({inner})"


def _key_for(names: tuple[str, ...]):
    """The field values of an instance as a tuple (read through the class: a function there is not bound)."""
    if not names:
        return lambda self: ()
    if len(names) == 1:
        name = names[0]
        return lambda self: (getattr(self, name),)
    return attrgetter(*names)


def _record_eq(self, other):
    if other.__class__ is self.__class__:
        key = self.__class__.__record_key__
        return key(self) == key(other)
    return NotImplemented


def _record_hash(self):
    return hash(self.__class__.__record_key__(self))


def _frozen_setattr(self, name, val):
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {self.__class__.__name__}")


def _frozen_delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r} of a frozen {self.__class__.__name__}")


def _slots_getstate(self):
    return [getattr(self, n) for n in self.__record_fields__]


def _slots_setstate(self, state):
    for name, val in zip(self.__record_fields__, state):
        object.__setattr__(self, name, val)


# frozen: assignment refused; slotted and frozen: unpickling and copy.copy would set slots through that __setattr__
_FROZEN_METHODS = {
    False: (("__setattr__", _frozen_setattr), ("__delattr__", _frozen_delattr)),
    True: (("__setattr__", _frozen_setattr), ("__delattr__", _frozen_delattr),
           ("__getstate__", _slots_getstate), ("__setstate__", _slots_setstate)),
}


if __name__ == "__main__":
    import os
    import sys

    from rlhf_lint import records  # the module the classes were decorated with (this file runs as __main__)

    text = records.generated_module_source()
    if sys.argv[1:] == ["--write-inits"]:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "record_inits.py"), "w",
                  encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
