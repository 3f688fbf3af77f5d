"""Record (value) classes without the start-up cost of ``dataclasses``.

``@dataclass`` writes and compiles the source of ``__init__``, ``__repr__``, ``__eq__`` (and ``__hash__``,
``__setattr__`` for frozen classes) of every class at import time, and importing it loads ``inspect`` (ast, dis,
tokenize): 0.3-0.6 ms per class plus ~7 ms, about 30 ms of a one-file run over the engine's ~65 value types, three
times the cost of starting the interpreter. ``@record`` gives the same behaviour from closures over the field list, so
nothing is compiled at import: positional and keyword arguments, defaults and ``field(default_factory=...)``,
``__post_init__``, ``frozen``, ``slots``, ``eq`` (with the hash rules of dataclasses), ``repr`` and
``field(repr=False)``, inheritance of fields, pickling and copying, and ``replace()``.

Measured with bench/latency.py: a one-file run with dataclasses took ~30 ms more. (An ``__init__`` compiled ahead of
time per class saved another ~0.6 ms and was removed: below the millisecond a generated module must pay for.)
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


def _make_record_class(cls, frozen: bool, eq: bool, slots: bool):
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
        init = _init_for(cls, names, specs, slots)
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


def _init_for(cls, names: tuple[str, ...], specs: dict[str, Field], slots: bool):
    """The __init__ dataclasses would write, from closures over the field list (nothing is compiled)."""
    post_init = hasattr(cls, "__post_init__")
    count = len(names)
    known = frozenset(names)
    defaults = {n: s.default for n, s in specs.items() if s.default is not _MISSING}
    factories = {n: s.default_factory for n, s in specs.items() if s.default_factory is not _MISSING}

    def bind(args: tuple, kwargs: dict) -> dict:
        """name -> value for every field (merged by dict operations, in C), or the TypeError of a bad call."""
        if len(args) > count:
            raise TypeError(f"{cls.__name__}() takes {count} positional arguments but {len(args)} were given")
        if kwargs and not known.issuperset(kwargs):
            unknown = next(k for k in kwargs if k not in known)
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {unknown!r}")
        if not args:
            values = kwargs  # the call's own dict: keywords only, the common way records are made
        else:
            values = dict(zip(names, args))
            if kwargs:
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

    # every field given positionally needs no binding: zip the values onto the fields
    if slots:
        setters = {n: _slot_setter(cls, n) for n in names}
        in_order = tuple(setters.values())

        def __init__(self, *args, **kwargs):
            if kwargs or len(args) != count:
                for name, val in bind(args, kwargs).items():
                    setters[name](self, val)
            else:
                for setter, val in zip(in_order, args):
                    setter(self, val)
            if post_init:
                self.__post_init__()
    else:
        def __init__(self, *args, **kwargs):
            # straight into the instance dict: one C call, and past the __setattr__ of frozen records
            self.__dict__.update(bind(args, kwargs) if kwargs or len(args) != count else zip(names, args))
            if post_init:
                self.__post_init__()

    return __init__


def _slot_setter(cls, name: str):
    """``setter(obj, value)`` through the slot's own descriptor (a fifth faster than object.__setattr__, and past
    a frozen record's __setattr__); object.__setattr__ for a field that is not a slot of ``cls``."""
    return getattr(getattr(cls, name, None), "__set__", None) or (lambda obj, val: object.__setattr__(obj, name, val))


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
