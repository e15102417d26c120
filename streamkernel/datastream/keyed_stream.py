"""KeyedStream: a DataStream partitioned by key, whose operators keep state per key.

``ds.key_by(selector)`` is a partitioning, not an operator: records reach the next
operator through a HASH edge (key -> key group -> subtask), and that operator is keyed
(its transformation carries the KeySelector as ``state_key_selector``). Keyed state,
timers, rolling aggregations (``reduce``, ``sum``, ``min`` ...) and windows need it.

As in PyFlink, a KeyedStream cannot be renamed, re-parallelized or re-partitioned: set
those on the operator that follows (``key_by(f).reduce(g).set_parallelism(4)``).
"""

from __future__ import annotations

import copy
import enum
from typing import TYPE_CHECKING, Any, Callable, Union

from streamkernel.datastream.data_stream import DataStream
from streamkernel.datastream.function_base import KeySelector, ReduceFunction
from streamkernel.datastream.function_process import KeyedProcessFunction
from streamkernel.datastream.function_wrappers import as_function, require_function
from streamkernel.datastream.operator_specs import aggregation_spec, keyed_spec
from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError
from streamkernel.graph.transformations import Transformation

if TYPE_CHECKING:  # pragma: no cover - typing only
    from streamkernel.datastream.windowed_stream import WindowedStream

__all__ = ["KeyedStream"]


class KeyedStream(DataStream):
    """A DataStream whose elements are partitioned by the key ``key_selector`` extracts."""

    class AccumulateType(enum.Enum):
        """The rolling aggregations of a KeyedStream."""

        MIN = 1
        MAX = 2
        MIN_BY = 3
        MAX_BY = 4
        SUM = 5

    def __init__(self, transformation: Transformation, env: Any, key_selector: KeySelector,
                 key_type: Any = None, origin_stream: Any = None) -> None:
        super().__init__(transformation, env)
        self._key_selector_function = key_selector
        self._key_type = key_type
        self._origin_stream = origin_stream

    def _key_selector(self) -> KeySelector:
        return self._key_selector_function

    def get_key_type(self) -> Any:
        """The declared TypeInformation of the keys (None when not declared)."""
        return self._key_type

    # --------------------------------------------------------- keyed operators
    def process(self, func: KeyedProcessFunction, output_type: Any = None) -> DataStream:  # type: ignore[override]
        """Applies a KeyedProcessFunction: keyed state, timers and ``ctx.get_current_key()``."""
        require_function(func, KeyedProcessFunction, "process() on a KeyedStream",
                         hint="A ProcessFunction is for non-keyed streams")
        from streamkernel.datastream.data_stream import normalize_output_type

        return self._one_input("KEYED PROCESS", keyed_spec("keyed_process", func, self._key_selector()),
                               normalize_output_type(output_type, "process()"))

    def reduce(self, func: Union[Callable[[Any, Any], Any], ReduceFunction]) -> DataStream:
        """A rolling reduce per key: emits the reduction so far after each element."""
        f = as_function(func, ReduceFunction, "reduce()")
        return self._one_input("Reduce", keyed_spec("reduce", f, self._key_selector()), self.get_type())

    def _accumulate(self, position: Union[int, str], acc_type: "KeyedStream.AccumulateType") -> DataStream:
        name = acc_type.name.lower()
        if isinstance(position, bool) or not isinstance(position, (int, str)):
            raise InvalidArgumentTypeError(
                f"{name}(): the field position must be of int or str type to locate the value to calculate: "
                f"an int (index) or a str (field name), got {type(position).__name__}: {position!r}")
        if isinstance(position, int) and position < 0:
            raise InvalidProgramError(f"{name}(): the field position must be >= 0, got {position}")
        f = _AccumulateReduceFunction(position, acc_type)
        spec = aggregation_spec(f, self._key_selector(), acc_type.name, position)
        return self._one_input("Keyed Aggregation", spec, self.get_type())

    def sum(self, position_to_sum: Union[int, str] = 0) -> DataStream:
        """Rolling sum of a field per key (other fields from the key's first element)."""
        return self._accumulate(position_to_sum, KeyedStream.AccumulateType.SUM)

    def min(self, position_to_min: Union[int, str] = 0) -> DataStream:
        """Rolling minimum of a field per key (other fields from the key's first element)."""
        return self._accumulate(position_to_min, KeyedStream.AccumulateType.MIN)

    def max(self, position_to_max: Union[int, str] = 0) -> DataStream:
        """Rolling maximum of a field per key (other fields from the key's first element)."""
        return self._accumulate(position_to_max, KeyedStream.AccumulateType.MAX)

    def min_by(self, position_to_min_by: Union[int, str] = 0) -> DataStream:
        """The element with the smallest field so far, per key (the first one on ties)."""
        return self._accumulate(position_to_min_by, KeyedStream.AccumulateType.MIN_BY)

    def max_by(self, position_to_max_by: Union[int, str] = 0) -> DataStream:
        """The element with the largest field so far, per key (the first one on ties)."""
        return self._accumulate(position_to_max_by, KeyedStream.AccumulateType.MAX_BY)

    # -------------------------------------------------------------- windows
    def window(self, window_assigner: Any) -> "WindowedStream":
        """Windows per key, assigned by ``window_assigner`` (e.g. TumblingEventTimeWindows.of(...))."""
        from streamkernel.datastream.windowed_stream import WindowedStream

        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> "WindowedStream":
        """Count windows per key: tumbling of ``size`` elements, or sliding by ``slide``."""
        from streamkernel.datastream.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        for arg, value, low in (("size", size, 1), ("slide", slide, 0)):  # PyFlink checks neither (see
            if isinstance(value, bool) or not isinstance(value, int):      # count_window_assigners.py)
                raise InvalidArgumentTypeError(f"count_window(): {arg} must be an int (a number of elements), got "
                                               f"{type(value).__name__} {value!r}")
            if value < low:
                raise InvalidProgramError(f"count_window(): {arg} must be an int >= {low}, got {value}")
        if slide == 0:
            return self.window(CountTumblingWindowAssigner.of(size))
        return self.window(CountSlidingWindowAssigner.of(size, slide))

    # ----------------------------------------------- as PyFlink: not on a KeyedStream
    def key_by(self, key_selector: Any, key_type: Any = None) -> "KeyedStream":
        """Re-keys the stream this KeyedStream was made from (the old key is dropped)."""
        return self._origin_stream.key_by(key_selector, key_type)

    def _not_supported(self, what: str) -> InvalidProgramError:
        return InvalidProgramError(
            f"{what} for KeyedStream is not supported: key_by() is a partitioning, not an operator. Set it on "
            f"the operator that follows, e.g. ds.key_by(f).reduce(g).set_parallelism(2).name('sum')")

    def _repartition(self) -> InvalidProgramError:
        return InvalidProgramError(
            "Cannot override partitioning for KeyedStream: a KeyedStream is already partitioned by key")

    def set_parallelism(self, parallelism: int) -> "KeyedStream":
        """Not supported: set the parallelism of the operator after key_by."""
        raise self._not_supported("Set parallelism")

    def set_max_parallelism(self, max_parallelism: int) -> "KeyedStream":
        """Not supported: set it on the operator after key_by."""
        raise self._not_supported("Set max parallelism")

    def name(self, name: str) -> "KeyedStream":
        """Not supported: name the operator after key_by."""
        raise self._not_supported("Set name")

    def get_name(self) -> str:
        """Not supported: a KeyedStream has no operator to name."""
        raise self._not_supported("Get name")

    def uid(self, uid: str) -> "KeyedStream":
        """Not supported: set the uid of the operator after key_by."""
        raise self._not_supported("Set uid")

    def set_uid_hash(self, uid_hash: str) -> "KeyedStream":
        """Not supported: set it on the operator after key_by."""
        raise self._not_supported("Set uid hash")

    def set_description(self, description: str) -> "KeyedStream":
        """Not supported: describe the operator after key_by."""
        raise self._not_supported("Set description")

    def force_non_parallel(self) -> "KeyedStream":
        """Not supported: set it on the operator after key_by."""
        raise self._not_supported("Set force non-parallel")

    def set_buffer_timeout(self, timeout_millis: int) -> "KeyedStream":
        """Not supported: set it on the operator after key_by."""
        raise self._not_supported("Set buffer timeout")

    def start_new_chain(self) -> "KeyedStream":
        """Not supported: a keyed edge never chains anyway."""
        raise self._not_supported("Start new chain")

    def disable_chaining(self) -> "KeyedStream":
        """Not supported: a keyed edge never chains anyway."""
        raise self._not_supported("Disable chaining")

    def slot_sharing_group(self, slot_sharing_group: Any) -> "KeyedStream":
        """Not supported: set it on the operator after key_by."""
        raise self._not_supported("Setting slot sharing group")

    def cache(self) -> DataStream:
        """Not supported on a KeyedStream."""
        raise InvalidProgramError("Cache for KeyedStream is not supported.")

    def forward(self) -> DataStream:
        """Not supported: a KeyedStream is partitioned by key."""
        raise self._repartition()

    def rebalance(self) -> DataStream:
        """Not supported: a KeyedStream is partitioned by key."""
        raise self._repartition()

    def rescale(self) -> DataStream:
        """Not supported: a KeyedStream is partitioned by key."""
        raise self._repartition()

    def shuffle(self) -> DataStream:
        """Not supported: a KeyedStream is partitioned by key."""
        raise self._repartition()

    def broadcast(self, *broadcast_state_descriptors: Any) -> Any:
        """Not supported: a KeyedStream is partitioned by key."""
        raise self._repartition()

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        """Not supported: a KeyedStream is partitioned by key."""
        raise self._repartition()


def _field(record: Any, position: Union[int, str]) -> Any:
    """Field ``position`` of ``record``; a str names a field (Row, dict, namedtuple)."""
    if isinstance(position, str) and isinstance(record, tuple):
        return getattr(record, position)
    return record[position]


def _with_field(record: Any, position: Union[int, str], value: Any) -> Any:
    """A copy of ``record`` whose field ``position`` is ``value`` (the input is left untouched)."""
    if isinstance(record, tuple):
        if hasattr(record, "_replace") and hasattr(record, "_fields"):  # namedtuple
            name = record._fields[position] if isinstance(position, int) else position
            return record._replace(**{name: value})
        fields = list(record)
        fields[position] = value  # type: ignore[index]
        return tuple(fields)
    result = copy.copy(record)
    result[position] = value
    return result


class _AccumulateReduceFunction(ReduceFunction):
    """The ReduceFunction behind sum/min/max/min_by/max_by (Flink's field aggregators).

    Structured elements (tuple, list, Row, dict) aggregate the field at ``position``;
    basic values (numbers, strings) are a single field and need position 0.
    """

    def __init__(self, position: Union[int, str], acc_type: KeyedStream.AccumulateType) -> None:
        self.position = position
        self.acc_type = acc_type

    def __repr__(self) -> str:
        return f"{self.acc_type.name}({self.position!r})"

    def reduce(self, value1: Any, value2: Any) -> Any:
        """Combines the running aggregate ``value1`` with the new element ``value2``."""
        acc = KeyedStream.AccumulateType
        pos = self.position
        structured = isinstance(value2, (tuple, list, dict)) or hasattr(value2, "_values")
        if not structured:
            if pos != 0:
                raise InvalidProgramError(
                    f"{self.acc_type.name.lower()}({pos!r}) on a basic value {value2!r}: a field position on a "
                    f"basic type can only be 0 (the value itself)")
            a, b = value1, value2
        else:
            a, b = _field(value1, pos), _field(value2, pos)
        if self.acc_type is acc.MIN_BY:
            return value2 if b < a else value1
        if self.acc_type is acc.MAX_BY:
            return value2 if b > a else value1
        if self.acc_type is acc.SUM:
            result = a + b
        elif self.acc_type is acc.MIN:
            result = b if b < a else a
        else:
            result = b if b > a else a
        return _with_field(value1, pos, result) if structured else result
