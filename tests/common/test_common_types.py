"""Row and RowKind, following PyFlink's pyflink/common/types.py."""

from __future__ import annotations

import copy
import pickle

import cloudpickle
import pytest

from streamkernel.common import Row, RowKind


def test_keyword_rows_keep_insertion_order_and_allow_every_access():
    row = Row(word="a", count=1)
    assert repr(row) == "Row(word='a', count=1)"
    assert list(row) == ["a", 1] and len(row) == 2
    assert row[0] == "a" and row[-1] == 1 and row[0:2] == ["a", 1]
    assert row["count"] == 1 and row.word == "a"
    assert "word" in row and "a" not in row  # named rows search their names
    assert row.as_dict() == {"word": "a", "count": 1}


def test_positional_rows():
    row = Row(1, "x")
    assert repr(row) == "<Row(1, 'x')>"  # PyFlink's repr for rows without names
    assert "x" in row  # unnamed rows search their values
    assert row[1] == "x"
    with pytest.raises(TypeError):
        row.as_dict()
    with pytest.raises(KeyError):
        row["x"]
    with pytest.raises(AttributeError):
        row.word  # noqa: B018


def test_args_and_kwargs_together_are_rejected():
    with pytest.raises(ValueError):
        Row(1, b=2)


def test_row_class_creates_named_rows():
    Person = Row("name", "age")
    alice = Person("Alice", 11)
    assert alice == Row(name="Alice", age=11)
    assert alice.name == "Alice" and alice["age"] == 11
    assert "name" in Person
    bob = Person("Bob")  # as in PyFlink, fewer values make a row of the first fields
    assert repr(bob) == "Row(name='Bob')" and bob.as_dict() == {"name": "Bob"} and bob.name == "Bob"
    with pytest.raises(AttributeError, match="no value for field 'age'"):
        bob.age  # noqa: B018
    with pytest.raises(ValueError, match="expected 2 values"):
        Person("Bob", 1, 2)


def test_set_field_names_and_get_fields_by_names():
    row = Row(1, 2, 3)
    row.set_field_names(["a", "b", "c"])
    assert row.c == 3
    assert row.get_fields_by_names(["c", "a"]) == [3, 1]
    assert row.get_fields_by_names(["a", "b", "c"]) == [1, 2, 3]
    with pytest.raises(ValueError, match="zz"):
        row.get_fields_by_names(["zz"])


def test_mutation_by_index_and_name_but_not_by_attribute():
    row = Row(a=1, b=2)
    row[0] = 10
    row["b"] = 20
    assert list(row) == [10, 20]
    with pytest.raises(AttributeError, match=r"row\['a'\]"):
        row.a = 5
    with pytest.raises(KeyError):
        row["nope"] = 1
    with pytest.raises(ValueError, match="no field 'nope'"):  # PyFlink raises ValueError here
        row["nope"]  # noqa: B018


def test_row_kind_short_strings_and_default():
    assert [str(k) for k in RowKind] == ["+I", "-U", "+U", "-D"]
    assert RowKind.DELETE.short_string() == "-D"
    assert Row(1).get_row_kind() is RowKind.INSERT
    row = Row.of_kind(RowKind.UPDATE_BEFORE, x=1)
    assert row.get_row_kind() is RowKind.UPDATE_BEFORE and row.x == 1
    row.set_row_kind(RowKind.DELETE)
    assert row.get_row_kind() is RowKind.DELETE
    with pytest.raises(ValueError):
        row.set_row_kind("-D")  # type: ignore[arg-type]


def test_equality_covers_values_names_and_kind():
    assert Row(a=1, b=2) == Row(a=1, b=2)
    assert Row(a=1, b=2) == Row(b=2, a=1)  # same value under each name
    assert hash(Row(a=1, b=2)) == hash(Row(b=2, a=1))
    assert Row(a=1, b=2) != Row(a=2, b=1)
    assert Row(1, 2) == Row(1, 2) and hash(Row(1, 2)) == hash(Row(1, 2))
    assert Row(1, 2) != Row(a=1, b=2)
    assert Row(1, 2) != (1, 2)
    assert Row(1) != Row.of_kind(RowKind.DELETE, 1)
    assert len({Row(1, 2), Row(1, 2), Row(2, 1)}) == 2


@pytest.mark.parametrize("dumps, loads", [(pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)])
def test_pickling_keeps_names_and_kind(dumps, loads):
    row = Row.of_kind(RowKind.UPDATE_AFTER, word="w", nested=Row(1, 2))
    back = loads(dumps(row))
    assert back == row
    assert back.word == "w" and back.get_row_kind() is RowKind.UPDATE_AFTER
    unnamed = loads(dumps(Row(1, 2)))
    assert unnamed == Row(1, 2) and repr(unnamed) == "<Row(1, 2)>"


def test_copy_and_deepcopy_are_independent():
    row = Row(a=[1])
    shallow, deep = copy.copy(row), copy.deepcopy(row)
    shallow[0] = "changed"
    deep["a"].append(2)
    assert row.a == [1]


def test_as_dict_recursive():
    row = Row(key=1, value=Row(name="a", items=[Row(x=1)]))
    assert row.as_dict() == {"key": 1, "value": Row(name="a", items=[Row(x=1)])}
    assert row.as_dict(True) == {"key": 1, "value": {"name": "a", "items": [{"x": 1}]}}
