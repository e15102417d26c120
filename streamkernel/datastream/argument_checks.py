"""Graph-building checks that PyFlink (or the Flink JVM behind it) makes, with Flink's messages.

Each check raises at the call that is wrong, with the exception class a PyFlink program can
catch there: a :class:`~streamkernel.errors.StreamKernelError` that is also the built-in
exception PyFlink raises (``TypeError`` for a value of the wrong type, ``AttributeError`` for
a method the stream does not have, ``ValueError`` where Flink's JVM raises an
``IllegalArgumentException``). Messages start with Flink's own text, so a search for Flink's
message finds the explanation, and go on to name the operator and the fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, NoReturn

from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError, NoSuchOperationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from streamkernel.graph.transformations import Transformation

__all__ = [
    "declared_type",
    "check_union_types",
    "check_side_output_tag",
    "check_projectable",
    "require_argument_type",
    "KeyedOnlyMethod",
]


def declared_type(type_info: Any) -> Any:
    """``type_info`` as PyFlink sees it: an undeclared type (None) is PICKLED_BYTE_ARRAY."""
    if type_info is None:
        from streamkernel.common.typeinfo import Types

        return Types.PICKLED_BYTE_ARRAY()
    return type_info


def check_union_types(first_type: Any, other_types: Iterable[Any]) -> None:
    """Flink's ``DataStream.union`` check: every stream has the first stream's element type.

    Undeclared types count as PICKLED_BYTE_ARRAY, as in PyFlink, so an untyped stream unions
    with an untyped one but not with a ``Types.INT()`` one.
    """
    first = declared_type(first_type)
    for other_type in other_types:
        other = declared_type(other_type)
        if other != first:
            raise InvalidProgramError(
                f"Cannot union streams of different types: {first!r} and {other!r}. union() needs the "
                f"same element type on every stream: declare it (output_type=/type_info=) or map() one "
                f"stream to the other's type first")


def check_side_output_tag(requested: Iterable["Transformation"], operator: "Transformation", tag: Any) -> None:
    """Flink's ``getSideOutput`` check: one side output id has one type per operator.

    ``requested`` are the transformations made so far; a SideOutputTransformation among them
    that reads ``operator`` with the same tag id but another type is an error.
    """
    from streamkernel.graph.transformations import SideOutputTransformation

    for t in requested:
        if not isinstance(t, SideOutputTransformation) or t.inputs[0] is not operator:
            continue
        other = t.output_tag
        if other.tag_id == tag.tag_id and declared_type(other.type_info) != declared_type(tag.type_info):
            raise InvalidProgramError(
                f"A side output with a matching id was already requested with a different type. This is "
                f"not allowed, side output ids need to be unique. Operator {operator.name!r}: "
                f"OutputTag({tag.tag_id!r}) was requested as {declared_type(other.type_info)!r} and now as "
                f"{declared_type(tag.type_info)!r}")


def check_projectable(input_type: Any, field_indexes: tuple[int, ...]) -> None:
    """PyFlink's ``project`` check: only a Tuple stream can be projected.

    An undeclared (None) type is let through: streamkernel projects tuples of an untyped
    stream; PyFlink would reject it (PICKLED_BYTE_ARRAY is not a Tuple type).
    """
    from streamkernel.common.typeinfo import TupleTypeInfo

    if input_type is not None and not isinstance(input_type, TupleTypeInfo):
        raise InvalidProgramError(
            f"Only Tuple DataStreams can be projected. project{field_indexes!r} on a stream of "
            f"{input_type!r}: declare Types.TUPLE([...]) or use map() to pick the fields")


def require_argument_type(value: Any, expected: Any, call: str, argument: str, wanted: str) -> None:
    """A TypeError (InvalidArgumentTypeError) naming the call and argument unless ``value`` is
    an instance of ``expected``; ``wanted`` says what is expected in words."""
    if not isinstance(value, expected):
        raise InvalidArgumentTypeError(
            f"{call}: {argument} must be {wanted}, got {type(value).__name__}: {value!r}")


class KeyedOnlyMethod:
    """A class attribute for a KeyedStream method that DataStream does not have (e.g. ``window``).

    Reading it from a DataStream raises :class:`~streamkernel.errors.NoSuchOperationError`, an
    AttributeError as in PyFlink (so ``hasattr(ds, "window")`` is False), with a message that
    says what to call instead. KeyedStream defines the real method, which overrides this one.
    """

    def __init__(self, hint: str) -> None:
        self.hint = hint
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type) -> NoReturn:
        who = owner.__name__ if instance is None else type(instance).__name__
        raise NoSuchOperationError(
            f"'{who}' object has no attribute '{self.name}': {self.name}() {self.hint}")
