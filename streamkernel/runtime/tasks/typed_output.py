"""The output of an operator with a declared output type: records converted as PyFlink converts them.

An operator whose stream has a declared type (``map(f, output_type=Types.FLOAT())``, a
source with a ``type_info``) hands its records to the next operator, a sink or
``execute_and_collect`` as PyFlink's coders would give them back
(:mod:`streamkernel.common.typeinfo.conversion`): ``Types.FLOAT()`` values rounded to 32
bits, ``Types.INT()`` checked for range, Rows with their field names ... One conversion per
batch; operators without a declared type (pickled records) are not wrapped at all. A record
the type cannot hold fails the task with a one-line error naming the operator, the record
and the type, as PyFlink fails the job when its coder cannot encode the record.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from streamkernel.common.typeinfo.conversion import BatchConverter, batch_converter, first_mismatch
from streamkernel.runtime.operators.contexts import describe_record
from streamkernel.errors import UserFunctionError
from streamkernel.runtime.operators.base import Output

__all__ = ["TypedOutput", "typed_output"]


class TypedOutput:
    """Converts every batch to the declared type before handing it to ``inner``."""

    __slots__ = ("inner", "convert", "operator", "type_info", "strict", "_side", "_side_tags")

    def __init__(self, inner: Output, convert: Optional[BatchConverter], operator: Any, type_info: Any,
                 strict: bool = True, side_tags: Iterable[Any] = ()) -> None:
        self.inner = inner
        self.convert = convert
        self.operator = operator
        self.type_info = type_info
        self.strict = strict
        self._side: dict[Any, Optional[BatchConverter]] = {}
        self._side_tags = [tag for tag in side_tags if batch_converter(getattr(tag, "type_info", None)) is not None]

    def emit(self, values: list, timestamps: Optional[list]) -> None:
        """Convert the batch (main output) and pass it on."""
        convert = self.convert
        if convert is not None:
            try:
                values = convert(values)
            except Exception as exc:  # noqa: BLE001 - reported with the record that caused it
                raise self._error(convert, values, self.type_info, exc) from exc
        self.inner.emit(values, timestamps)

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        """Convert the batch to the side output's type (``OutputTag.type_info``) and pass it on."""
        try:
            convert = self._side[tag]
        except KeyError:
            convert = self._side[tag] = batch_converter(getattr(tag, "type_info", None), self.strict)
        if convert is not None:
            try:
                values = convert(values)
            except Exception as exc:  # noqa: BLE001 - reported with the record that caused it
                raise self._error(convert, values, tag.type_info, exc) from exc
        self.inner.emit_side(tag, values, timestamps)

    def emit_watermark(self, timestamp: int) -> None:
        """Watermarks pass unchanged."""
        self.inner.emit_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        """Idleness passes unchanged."""
        self.inner.emit_watermark_status(idle)

    def has_side_types(self) -> bool:
        """Whether a side output of the operator declares a type (its batches are converted too)."""
        return bool(self._side_tags)

    def _error(self, convert: BatchConverter, values: list, type_info: Any, exc: Exception) -> UserFunctionError:
        index, problem = first_mismatch(convert, values)
        context = getattr(self.operator, "context", None)
        if context is not None:
            name, subtask = context.node.name, context.task_info.task_name_with_subtasks
        else:  # a bare operator in a unit test
            name, subtask = type(self.operator).__name__, "?"
        return UserFunctionError(
            f"operator {name!r} (subtask {subtask}) emitted record {describe_record(values[index])}, "
            f"which its output type {type_info!r} cannot hold: {problem}")


def typed_output(inner: Output, operator: Any, type_info: Any, side_tags: Iterable[Any] = ()) -> Output:
    """``inner`` wrapped in a :class:`TypedOutput` when ``type_info`` (or a side output's) converts values.

    A source whose records already are values of its own produced type
    (``Source.emits_produced_type``, e.g. NumberSequenceSource's ints) is not converted.
    """
    source = getattr(operator.spec, "source", None) if operator.spec.is_source else None
    if source is not None and getattr(source, "emits_produced_type", False) \
            and source.get_produced_type() == type_info:
        type_info = None
    strict = source is None  # a function's result must be a Row for a ROW type (PyFlink's coder)
    convert = batch_converter(type_info, strict)
    if convert is None and not any(batch_converter(getattr(tag, "type_info", None)) for tag in side_tags):
        return inner
    return TypedOutput(inner, convert, operator, type_info, strict, side_tags)
