"""The base user functions: Function, RuntimeContext and the record-at-a-time interfaces.

Part of ``streamkernel.datastream.functions`` (import them from there, as from PyFlink's
``pyflink.datastream.functions``). A user function is a plain Python object whose class
derives from one of these interfaces; the runtime calls ``open(runtime_context)`` once
per parallel instance before the first record, the interface's method per record, and
``close()`` at the end.

The DataStream API also accepts plain callables wherever PyFlink does (``map``,
``flat_map``, ``filter``, ``key_by``, ``reduce``, ``partition_custom``); it wraps them in
the matching class from :mod:`streamkernel.datastream.function_wrappers`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from streamkernel.datastream.connectors.base import SinkFunction, SourceFunction

if TYPE_CHECKING:  # pragma: no cover - typing only
    from streamkernel.datastream.state import (
        AggregatingState,
        AggregatingStateDescriptor,
        ListState,
        ListStateDescriptor,
        MapState,
        MapStateDescriptor,
        ReducingState,
        ReducingStateDescriptor,
        ValueState,
        ValueStateDescriptor,
    )

__all__ = [
    "KeyedStateStore",
    "RuntimeContext",
    "Function",
    "MapFunction",
    "CoMapFunction",
    "FlatMapFunction",
    "CoFlatMapFunction",
    "ReduceFunction",
    "AggregateFunction",
    "KeySelector",
    "NullByteKeySelector",
    "FilterFunction",
    "Partitioner",
    "SourceFunction",
    "SinkFunction",
]


class KeyedStateStore(ABC):
    """Access to keyed state: each handle reads and writes the state of the current key.

    Only available to functions running on a KeyedStream; the runtime implements it.
    """

    @abstractmethod
    def get_state(self, state_descriptor: "ValueStateDescriptor") -> "ValueState":
        """The ValueState named by ``state_descriptor``, scoped to the current key."""

    @abstractmethod
    def get_list_state(self, state_descriptor: "ListStateDescriptor") -> "ListState":
        """The ListState named by ``state_descriptor``, scoped to the current key."""

    @abstractmethod
    def get_map_state(self, state_descriptor: "MapStateDescriptor") -> "MapState":
        """The MapState named by ``state_descriptor``, scoped to the current key."""

    @abstractmethod
    def get_reducing_state(self, state_descriptor: "ReducingStateDescriptor") -> "ReducingState":
        """The ReducingState named by ``state_descriptor``, scoped to the current key."""

    @abstractmethod
    def get_aggregating_state(self, state_descriptor: "AggregatingStateDescriptor") -> "AggregatingState":
        """The AggregatingState named by ``state_descriptor``, scoped to the current key."""


class RuntimeContext(KeyedStateStore):
    """What a parallel function instance knows about where it runs, and its keyed state.

    Passed to :meth:`Function.open`. The runtime implements it, one per subtask.
    """

    @abstractmethod
    def get_task_name(self) -> str:
        """The name of the task (operator chain) the function runs in."""

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int:
        """The parallelism of the operator."""

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int:
        """The max parallelism (number of key groups) of the operator."""

    @abstractmethod
    def get_index_of_this_subtask(self) -> int:
        """This subtask's index, 0 .. parallelism - 1."""

    @abstractmethod
    def get_attempt_number(self) -> int:
        """How often this subtask was restarted; the first attempt is 0."""

    @abstractmethod
    def get_task_name_with_subtasks(self) -> str:
        """The task name with the subtask indicator, e.g. ``"Map (2/4)"`` (index + 1 / parallelism)."""

    @abstractmethod
    def get_job_parameter(self, key: str, default_value: str) -> str:
        """The global job parameter ``key`` as a string, or ``default_value``."""

    @abstractmethod
    def get_metrics_group(self) -> Any:
        """The metric group of this operator subtask (counters, gauges, meters)."""


class Function(ABC):
    """The base class of all user-defined functions: an ``open``/``close`` lifecycle."""

    def open(self, runtime_context: RuntimeContext) -> None:
        """Called once per parallel instance before the first record (set up state, clients)."""

    def close(self) -> None:
        """Called once per parallel instance after the last record (release resources)."""


class MapFunction(Function):
    """Transforms each element into exactly one element: ``ds.map(MyMapFunction())``."""

    @abstractmethod
    def map(self, value: Any) -> Any:
        """The result for ``value``."""


class CoMapFunction(Function):
    """A map over two connected streams: ``map1`` for the first input, ``map2`` for the second.

    One instance serves both inputs, so they can share state.
    """

    @abstractmethod
    def map1(self, value: Any) -> Any:
        """The result for an element of the first input."""

    @abstractmethod
    def map2(self, value: Any) -> Any:
        """The result for an element of the second input."""


class FlatMapFunction(Function):
    """Transforms each element into zero, one or more elements (``yield`` them, or return an iterable)."""

    @abstractmethod
    def flat_map(self, value: Any) -> Any:
        """An iterable (typically a generator) of the results for ``value``."""


class CoFlatMapFunction(Function):
    """A flat map over two connected streams: ``flat_map1`` / ``flat_map2`` per input."""

    @abstractmethod
    def flat_map1(self, value: Any) -> Any:
        """An iterable of the results for an element of the first input."""

    @abstractmethod
    def flat_map2(self, value: Any) -> Any:
        """An iterable of the results for an element of the second input."""


class ReduceFunction(Function):
    """Combines two values of the same type into one, applied repeatedly per key (or window)."""

    @abstractmethod
    def reduce(self, value1: Any, value2: Any) -> Any:
        """The combination of ``value1`` (the running result) and ``value2`` (the new element)."""


class AggregateFunction(Function):
    """Incremental aggregation with an accumulator whose type may differ from input and result.

    Example (an average)::

        class Average(AggregateFunction):
            def create_accumulator(self):
                return 0, 0
            def add(self, value, acc):
                return acc[0] + value, acc[1] + 1
            def get_result(self, acc):
                return acc[0] / acc[1]
            def merge(self, a, b):
                return a[0] + b[0], a[1] + b[1]
    """

    @abstractmethod
    def create_accumulator(self) -> Any:
        """A new, empty accumulator."""

    @abstractmethod
    def add(self, value: Any, accumulator: Any) -> Any:
        """``accumulator`` with ``value`` added (may modify and return it)."""

    @abstractmethod
    def get_result(self, accumulator: Any) -> Any:
        """The aggregation result of ``accumulator``."""

    @abstractmethod
    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        """Two accumulators merged into one (used when windows merge)."""


class KeySelector(Function):
    """Extracts the key of an element, deterministically: the same element gives the same key.

    Instances are also callable (``selector(value) == selector.get_key(value)``).
    """

    @abstractmethod
    def get_key(self, value: Any) -> Any:
        """The key of ``value``."""

    def __call__(self, value: Any) -> Any:
        return self.get_key(value)


class NullByteKeySelector(KeySelector):
    """Gives every element the key 0: lets keyed operators run non-keyed work (``window_all``)."""

    def get_key(self, value: Any) -> Any:
        """Always 0."""
        return 0

    def __repr__(self) -> str:
        return "NullByteKeySelector()"


class FilterFunction(Function):
    """A predicate per element: elements for which ``filter`` returns true are kept."""

    @abstractmethod
    def filter(self, value: Any) -> bool:
        """True to keep ``value``."""


class Partitioner(Function):
    """Custom partitioning (``partition_custom``): picks the downstream subtask for a key."""

    @abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int:
        """The target subtask, 0 .. num_partitions - 1, for ``key``."""
