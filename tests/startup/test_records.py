"""@record behaves as @dataclass does for every feature the engine uses: each case builds the same class both ways."""
from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from rlhf_lint.startup.records import FrozenInstanceError, field, fields, record, replace


def both(**options):
    """The same class body decorated by dataclasses.dataclass and by records.record."""

    def build(deco, field_fn):
        @deco(**options)
        class Point:
            x: int
            y: int = 0
            tags: list = field_fn(default_factory=list)
            note: str = field_fn(default="", repr=False)

            def norm1(self) -> int:
                return abs(self.x) + abs(self.y)

        return Point

    return build(dataclasses.dataclass, dataclasses.field), build(record, field)


# module level, so that pickle finds them by name
@record(frozen=True, slots=True)
class FrozenSlotted:
    a: int
    b: tuple = ()


@record
class Mutable:
    a: int
    b: list = field(default_factory=list)


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"slots": True}, {"frozen": True, "slots": True},
                                     {"eq": False}])
def test_construction_repr_equality_and_hash_match_dataclasses(options):
    DC, RC = both(**options)
    for args, kwargs in [((1,), {}), ((1, 2), {}), ((), {"x": 3, "y": 4}), ((5,), {"tags": ["t"], "note": "n"})]:
        d, r = DC(*args, **kwargs), RC(*args, **kwargs)
        assert repr(r) == repr(d).replace(DC.__qualname__, RC.__qualname__)
        assert (r.x, r.y, r.tags, r.note) == (d.x, d.y, d.tags, d.note)
        assert r.norm1() == d.norm1()
        assert (r == RC(*args, **kwargs)) == (d == DC(*args, **kwargs))
        assert r != d  # another class: never equal, as between two dataclasses
        hashable_dc = DC.__hash__ is not None
        assert (RC.__hash__ is not None) == hashable_dc
        if hashable_dc and options.get("frozen"):
            r2 = RC(*args, **{**kwargs, "tags": ()})
            assert hash(r2) == hash(RC(*args, **{**kwargs, "tags": ()}))
    assert RC(1).tags is not RC(1).tags  # a fresh list per instance
    assert hasattr(RC(1), "__dict__") == hasattr(DC(1), "__dict__")
    assert fields(RC) == tuple(f.name for f in dataclasses.fields(DC))


@pytest.mark.parametrize("args,kwargs", [((), {}), ((1, 2, [], "", 9), {}), ((1,), {"x": 2}), ((1,), {"z": 2})])
def test_bad_arguments_raise_type_error_like_dataclasses(args, kwargs):
    DC, RC = both()
    with pytest.raises(TypeError):
        DC(*args, **kwargs)
    with pytest.raises(TypeError):
        RC(*args, **kwargs)


def test_frozen_refuses_assignment_and_deletion():
    value = FrozenSlotted(1)
    with pytest.raises(FrozenInstanceError):
        value.a = 2
    with pytest.raises(AttributeError):
        del value.a
    assert value.a == 1


def test_post_init_runs_and_may_set_fields_of_frozen_records():
    @record(frozen=True)
    class Sorted:
        items: tuple

        def __post_init__(self):
            object.__setattr__(self, "items", tuple(sorted(self.items)))

    assert Sorted((3, 1, 2)).items == (1, 2, 3)


def test_fields_are_inherited_and_defaults_stay_class_attributes():
    @record
    class Base:
        a: int
        b: int = 2

    @record
    class Child(Base):
        c: int = 3

    assert fields(Child) == ("a", "b", "c")
    assert Child(1) == Child(1, 2, 3)
    assert repr(Child(1)).endswith("Child(a=1, b=2, c=3)")
    assert Base.b == 2  # as with dataclasses, a plain default is readable on the class


def test_methods_written_in_the_class_win():
    @record(frozen=True)
    class Custom:
        a: int

        def __repr__(self):
            return "custom"

        def __eq__(self, other):
            return True

        def __hash__(self):
            return 7

    assert repr(Custom(1)) == "custom" and Custom(1) == Custom(2) and hash(Custom(1)) == 7


def test_definition_errors_match_dataclasses():
    with pytest.raises(ValueError):
        @record
        class Shared:
            items: list = []  # noqa: RUF012 - the error under test

    with pytest.raises(TypeError):
        @record
        class Order:
            a: int = 0
            b: int


def test_replace_pickle_and_copy_keep_values():
    value = FrozenSlotted(1, (2,))
    assert replace(value, a=5) == FrozenSlotted(5, (2,))
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.copy(value) == value and copy.deepcopy(value) == value
    mutable = Mutable(1, [2])
    clone = pickle.loads(pickle.dumps(mutable))
    assert clone == mutable and clone.b is not mutable.b
    assert Mutable.__hash__ is None  # eq without frozen: unhashable, as with dataclasses


def test_slotted_records_inherit_fields_and_keep_no_dict():
    @record(frozen=True, slots=True)
    class Base:
        a: int

    @record(frozen=True, slots=True)
    class Child(Base):
        b: int = 2

    child = Child(1)
    assert (child.a, child.b) == (1, 2) and Child(a=1, b=3).b == 3 and Child(b=4, a=0) == Child(0, 4)
    assert not hasattr(child, "__dict__")
    with pytest.raises(TypeError):
        Child(b=1)


def test_the_init_is_named_after_its_class():
    _, RC = both(frozen=True, slots=True)
    assert RC.__init__.__qualname__ == f"{RC.__qualname__}.__init__"
