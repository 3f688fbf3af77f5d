"""Record (value) classes without the start-up cost of ``dataclasses``.

``@dataclass`` writes and compiles the source of ``__init__``, ``__repr__``, ``__eq__`` (and ``__hash__``,
``__setattr__`` for frozen classes) of every class at import time, and importing it loads ``inspect`` (ast, dis,
tokenize): 0.3-0.6 ms per class plus ~7 ms, about 30 ms of a one-file run over the engine's ~65 value types, three
times the cost of starting the interpreter. ``@record`` gives the same behaviour from closures over the field list, so
nothing is compiled at import: positional and keyword arguments, defaults and ``field(default_factory=...)``,
``__post_init__``, ``frozen``, ``slots``, ``eq`` (with the hash rules of dataclasses), ``repr`` and
``field(repr=False)``, inheritance of fields, pickling and copying, and ``replace()``. Only a class that is
instantiated thousands of times gets its ``__init__`` compiled, when it gets there (``HOT_INSTANCES``).
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


def record(cls=None, /, *, frozen: bool = False, eq: bool = True, slots: bool = False):
    """Class decorator: ``@record``, ``@record(frozen=True, slots=True)``, ``@record(eq=False)``."""

    def wrap(klass):
        return _make_record_class(klass, frozen, eq, slots)

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


def _collect_fields(cls) -> dict[str, Field]:
    """Fields of the record bases (in MRO order, as dataclasses does), then the class's own annotations."""
    out: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        out.update(base.__dict__.get("__record_fields__", {}))
    for name in cls.__dict__.get("__annotations__", {}):
        declared = cls.__dict__.get(name, _MISSING)
        spec = declared if isinstance(declared, Field) else Field(default=declared)
        if isinstance(spec.default, (list, dict, set)):
            raise ValueError(f"mutable default {type(spec.default).__name__} for field {name} of {cls.__name__}: "
                             "use field(default_factory=...)")
        out[name] = spec
    seen_default = False
    for name, spec in out.items():
        has_default = spec.default is not _MISSING or spec.default_factory is not _MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {name!r} follows default argument in {cls.__name__}")
        seen_default = seen_default or has_default
    return out


def _make_record_class(cls, frozen: bool, eq: bool, slots: bool):
    specs = _collect_fields(cls)
    names = tuple(specs)
    own = [n for n in cls.__dict__.get("__annotations__", {})]
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

    def set_default(attr, function, own=True):
        if attr not in cls.__dict__:  # a method the class defines itself wins, as with dataclasses
            if own:  # a closure made for this class: name it after the class in tracebacks
                function.__name__ = attr
                function.__qualname__ = f"{cls.__qualname__}.{attr}"
            setattr(cls, attr, function)

    set_default("__init__", _init_for(cls, names, specs, slots))
    repr_names = tuple(n for n in names if specs[n].repr)
    set_default("__repr__", _repr_for(repr_names))
    if eq:
        key = _key_for(names)
        set_default("__eq__", _eq_for(key))
        explicit_hash = "__hash__" in cls.__dict__ and not (cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__)
        if not explicit_hash:
            cls.__hash__ = _hash_for(key) if frozen else None
    if frozen:
        set_default("__setattr__", _frozen_setattr, own=False)
        set_default("__delattr__", _frozen_delattr, own=False)
        if slots:  # unpickling and copy.copy would set slots through the frozen __setattr__
            set_default("__getstate__", _slots_getstate, own=False)
            set_default("__setstate__", _slots_setstate, own=False)
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


def _init_for(cls, names: tuple[str, ...], specs: dict[str, Field], slots: bool):
    count = len(names)
    known = frozenset(names)
    defaults = {n: s.default for n, s in specs.items() if s.default is not _MISSING}
    factories = {n: s.default_factory for n, s in specs.items() if s.default_factory is not _MISSING}
    post_init = hasattr(cls, "__post_init__")

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
        ordered = tuple(setters[n] for n in names)

        def generic(self, args, kwargs):
            if args and len(args) == count and not kwargs:
                for setter, val in zip(ordered, args):
                    setter(self, val)
            else:
                for name, val in bind(args, kwargs).items():
                    setters[name](self, val)
    else:
        def generic(self, args, kwargs):
            # straight into the instance dict: one C call, and past the __setattr__ of frozen records
            if args and len(args) == count and not kwargs:
                self.__dict__.update(zip(names, args))
            else:
                self.__dict__.update(bind(args, kwargs))

    calls = [0]

    def __init__(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == HOT_INSTANCES and cls.__dict__.get("__init__") is __init__:
            # many instances: from now on a compiled __init__, as fast as a dataclass's (see HOT_INSTANCES)
            compiled = _compiled_init(cls, names, specs, slots, post_init)
            compiled.__qualname__ = __init__.__qualname__
            cls.__init__ = compiled
        generic(self, args, kwargs)
        if post_init:
            self.__post_init__()

    return __init__


def _slot_setter(cls, name: str):
    """``setter(obj, value)`` through the slot's own descriptor (a fifth faster than object.__setattr__, and past
    a frozen record's __setattr__); object.__setattr__ for a field that is not a slot of ``cls``."""
    return getattr(getattr(cls, name, None), "__set__", None) or (lambda obj, val: object.__setattr__(obj, name, val))


# A class instantiated this many times gets an __init__ compiled from source, like the one dataclasses writes:
# ~0.1 ms once, then 1-2 µs less per instance. A one-file run stays below it for every class (nothing compiled at
# start-up); a run over many files compiles the dozen classes it builds by the thousand.
HOT_INSTANCES = 2000


def _compiled_init(cls, names: tuple[str, ...], specs: dict[str, Field], slots: bool, post_init: bool):
    scope: dict = {"_MISSING": _MISSING}
    params, body = [], []
    for i, name in enumerate(names):
        spec = specs[name]
        if spec.default is not _MISSING:
            scope[f"_default_{i}"] = spec.default
            params.append(f"{name}=_default_{i}")
        elif spec.default_factory is not _MISSING:
            scope[f"_factory_{i}"] = spec.default_factory
            params.append(f"{name}=_MISSING")
            body.append(f"if {name} is _MISSING: {name} = _factory_{i}()")
        else:
            params.append(name)
    if slots:
        for i, name in enumerate(names):
            scope[f"_set_{i}"] = _slot_setter(cls, name)
            body.append(f"_set_{i}(self, {name})")
    elif names:
        body.append("self.__dict__.update({" + ", ".join(f"{n!r}: {n}" for n in names) + "})")
    if post_init:
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    exec(compile(source, f"<record {cls.__qualname__}.__init__>", "exec"), scope)  # our own source, never a file's
    return scope["__init__"]


def _repr_for(names: tuple[str, ...]):
    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _key_for(names: tuple[str, ...]):
    if not names:
        return lambda self: ()
    if len(names) == 1:
        name = names[0]
        return lambda self: (getattr(self, name),)
    return attrgetter(*names)


def _eq_for(key):
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash_for(key):
    def __hash__(self):
        return hash(key(self))

    return __hash__


def _frozen_setattr(self, name, val):
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {self.__class__.__name__}")


def _frozen_delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r} of a frozen {self.__class__.__name__}")


def _slots_getstate(self):
    return [getattr(self, n) for n in self.__record_fields__]


def _slots_setstate(self, state):
    for name, val in zip(self.__record_fields__, state):
        object.__setattr__(self, name, val)
