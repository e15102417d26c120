"""The contexts user functions receive (PyFlink's Context, OnTimerContext, ReadOnlyContext), side outputs, errors.

An operator creates **one** context object per role (element, timer, broadcast side) in
``open`` and reuses it for every record, only moving its current timestamp, as Flink's
operators reuse their ``ContextImpl``: no per-record allocation. A context is valid during
the call it was handed to. ``ctx.timestamp()`` of a record without a timestamp is Java's
``Long.MIN_VALUE`` (-2**63), as in PyFlink, not None.

Side outputs (``yield tag, value`` as in PyFlink, or ``ctx.output(tag, value)``, which
PyFlink's contexts do not have) are collected by a
:class:`SideOutputCollector` and emitted once per batch through ``output.emit_side``.

:func:`wrap_user_error` turns an exception a user function raised into a
:class:`~streamkernel.errors.UserFunctionError` naming the operator, the subtask and the
record, so a failed job says where it failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

from streamkernel.datastream.function_process import (
    BroadcastProcessFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ProcessFunction,
)
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.state import ReadOnlyBroadcastState
from streamkernel.datastream.time_domain import TimeDomain
from streamkernel.datastream.timerservice import TimerService
from streamkernel.datastream.windows import MIN_LONG_VALUE
from streamkernel.errors import InvalidProgramError, UserFunctionError

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.operators.base import StreamOperator

__all__ = [
    "UNSUPPORTED_REGISTER_TIMER_MSG",
    "wrap_user_error",
    "describe_record",
    "SideOutputCollector",
    "collect_results",
    "NonKeyedTimerService",
    "ProcessContext",
    "KeyedProcessContext",
    "BroadcastStates",
    "BroadcastContext",
    "ReadOnlyBroadcastContext",
]

#: Flink's message when a non-keyed process function registers a timer.
UNSUPPORTED_REGISTER_TIMER_MSG = "Setting timers is only supported on a keyed streams."
_UNSUPPORTED_DELETE_TIMER_MSG = "Deleting timers is only supported on a keyed streams."
_KEYED_HINT = " Key the stream first: ds.key_by(...).process(KeyedProcessFunction)."

_MAX_RECORD_REPR = 200


def describe_record(record: Any) -> str:
    """``repr(record)`` cut to about 200 characters (for error messages)."""
    try:
        text = repr(record)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        text = f"<{type(record).__name__} (repr failed: {exc!r})>"
    if len(text) > _MAX_RECORD_REPR:
        text = text[:_MAX_RECORD_REPR] + f"... ({len(text)} chars)"
    return text


def wrap_user_error(operator: Any, record: Any, exc: BaseException,
                    where: Optional[str] = None) -> UserFunctionError:
    """The :class:`UserFunctionError` for ``exc`` raised by ``operator``'s user function on ``record``.

    Use as ``raise wrap_user_error(self, value, exc) from exc`` (the original exception is
    the cause). ``where`` replaces "record <repr>" in the message, e.g. for a timer.
    """
    context = getattr(operator, "context", None)
    if context is not None:
        name = context.node.name
        subtask = context.task_info.task_name_with_subtasks
    else:  # not set up (only in unit tests of a bare operator)
        name, subtask = type(operator).__name__, "?"
    what = where if where is not None else f"record {describe_record(record)}"
    return UserFunctionError(
        f"operator {name!r} (subtask {subtask}) failed on {what}: {type(exc).__name__}: {exc}")


class SideOutputCollector:
    """Side-output records of the current batch, grouped by OutputTag, emitted once per batch."""

    __slots__ = ("_buffers",)

    def __init__(self) -> None:
        self._buffers: dict[Any, tuple[list, list]] = {}

    def add(self, tag: Any, value: Any, timestamp: Optional[int]) -> None:
        """Buffer ``value`` (with ``timestamp``) for the side output ``tag``."""
        buffer = self._buffers.get(tag)
        if buffer is None:
            if not isinstance(tag, OutputTag):
                raise InvalidProgramError(
                    f"output(output_tag, value): output_tag must be an OutputTag, got {tag!r}")
            buffer = self._buffers[tag] = ([], [])
        buffer[0].append(value)
        buffer[1].append(timestamp)

    def __len__(self) -> int:
        return sum(len(values) for values, _ in self._buffers.values())

    def flush(self, output: Any) -> int:
        """Emit every buffered side output (``output.emit_side``); the number of records emitted."""
        if not self._buffers:
            return 0
        buffers, self._buffers = self._buffers, {}
        count = 0
        for tag, (values, timestamps) in buffers.items():
            count += len(values)
            has_time = any(t is not None for t in timestamps)
            output.emit_side(tag, values, timestamps if has_time else None)
        return count


def collect_results(result: Optional[Iterable[Any]], timestamp: Optional[int], values: list,
                    timestamps: Optional[list], side: SideOutputCollector) -> None:
    """Append what a process function returned or yielded to ``values`` (and ``timestamps``).

    ``result`` is None (nothing), a generator or any iterable. A yielded 2-tuple whose first
    item is an OutputTag goes to that side output (PyFlink's ``yield tag, value``).
    """
    if result is None:
        return
    append = values.append
    for item in result:
        if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
            side.add(item[0], item[1], timestamp)
            continue
        append(item)
        if timestamps is not None:
            timestamps.append(timestamp)


class NonKeyedTimerService(TimerService):
    """The TimerService of a non-keyed process function: time queries only (as in Flink)."""

    def __init__(self, operator: "StreamOperator") -> None:
        self._operator = operator

    def current_processing_time(self) -> int:
        """The task's current processing time (ms)."""
        return self._operator.context.processing_time.current_processing_time()

    def current_watermark(self) -> int:
        """The operator's current event-time watermark."""
        return self._operator.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        """Not supported on a non-keyed stream (Flink raises too)."""
        raise InvalidProgramError(UNSUPPORTED_REGISTER_TIMER_MSG + _KEYED_HINT)

    def register_event_time_timer(self, timestamp: int) -> None:
        """Not supported on a non-keyed stream (Flink raises too)."""
        raise InvalidProgramError(UNSUPPORTED_REGISTER_TIMER_MSG + _KEYED_HINT)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        """Not supported on a non-keyed stream (Flink raises too)."""
        raise InvalidProgramError(_UNSUPPORTED_DELETE_TIMER_MSG + _KEYED_HINT)

    def delete_event_time_timer(self, timestamp: int) -> None:
        """Not supported on a non-keyed stream (Flink raises too)."""
        raise InvalidProgramError(_UNSUPPORTED_DELETE_TIMER_MSG + _KEYED_HINT)


class ProcessContext(ProcessFunction.Context, CoProcessFunction.Context):
    """The Context of ProcessFunction / CoProcessFunction: timestamp, time queries, side outputs.

    ``timestamp_`` is moved by the operator before each call (reused, never re-created).
    """

    __slots__ = ("timestamp_", "_timer_service", "_side")

    def __init__(self, timer_service: TimerService, side: SideOutputCollector) -> None:
        self.timestamp_: Optional[int] = None
        self._timer_service = timer_service
        self._side = side

    def timestamp(self) -> int:
        """The current record's timestamp (ms); Long.MIN_VALUE if it has none (as in PyFlink)."""
        return MIN_LONG_VALUE if self.timestamp_ is None else self.timestamp_

    def timer_service(self) -> TimerService:
        """Current processing time and watermark (timers need a keyed stream)."""
        return self._timer_service

    def output(self, output_tag: OutputTag, value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag``."""
        self._side.add(output_tag, value, self.timestamp_)


class KeyedProcessContext(KeyedProcessFunction.OnTimerContext, KeyedCoProcessFunction.OnTimerContext):
    """The (OnTimer)Context of KeyedProcessFunction / KeyedCoProcessFunction: also the key and timers.

    One instance serves elements (``time_domain_`` None), one serves timers.
    """

    __slots__ = ("timestamp_", "time_domain_", "_timer_service", "_side", "_backend")

    def __init__(self, timer_service: TimerService, side: SideOutputCollector, backend: Any) -> None:
        self.timestamp_: Optional[int] = None
        self.time_domain_: Optional[TimeDomain] = None
        self._timer_service = timer_service
        self._side = side
        self._backend = backend

    def timestamp(self) -> int:
        """The record's timestamp, or the firing timer's; Long.MIN_VALUE if the record has none."""
        return MIN_LONG_VALUE if self.timestamp_ is None else self.timestamp_

    def timer_service(self) -> TimerService:
        """Time queries and timers of the current key."""
        return self._timer_service

    def output(self, output_tag: OutputTag, value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag``."""
        self._side.add(output_tag, value, self.timestamp_)

    def get_current_key(self) -> Any:
        """The key of the current record (or of the firing timer)."""
        return self._backend.current_key

    def time_domain(self) -> TimeDomain:
        """EVENT_TIME or PROCESSING_TIME: the domain of the firing timer."""
        if self.time_domain_ is None:
            raise InvalidProgramError("time_domain() is only available in on_timer (an OnTimerContext)")
        return self.time_domain_


class BroadcastStates:
    """The broadcast states an operator declared (``broadcast(descriptors...)``), writable and read-only.

    Taken from the operator state backend once, in ``open`` (after the task restored it):
    ``get_broadcast_state`` for the broadcast side, ``get_read_only_broadcast_state`` (a
    view whose writes raise) for the other side.
    """

    def __init__(self, operator_state: Any, descriptors: Iterable[Any]) -> None:
        self.writable: dict[Any, Any] = {}
        self.read_only: dict[Any, Any] = {}
        for descriptor in descriptors:
            self.writable[descriptor] = operator_state.get_broadcast_state(descriptor)
            self.read_only[descriptor] = operator_state.get_read_only_broadcast_state(descriptor)

    def lookup(self, table: dict[Any, Any], descriptor: Any) -> Any:
        """The state of ``descriptor`` in ``table``; a clear error for an undeclared one."""
        state = table.get(descriptor)
        if state is None:
            declared = ", ".join(repr(d) for d in self.writable) or "none"
            raise InvalidProgramError(
                f"get_broadcast_state({descriptor!r}): the requested state does not exist. Check for typos "
                f"in the state descriptor, or pass it to datastream.broadcast(...) (declared: {declared})")
        return state


class _BroadcastBase:
    __slots__ = ("timestamp_", "_operator", "_side", "_states")

    def __init__(self, operator: "StreamOperator", side: SideOutputCollector, states: BroadcastStates) -> None:
        self.timestamp_: Optional[int] = None
        self._operator = operator
        self._side = side
        self._states = states

    def timestamp(self) -> int:
        """The current record's timestamp; Long.MIN_VALUE if it has none (as in PyFlink)."""
        return MIN_LONG_VALUE if self.timestamp_ is None else self.timestamp_

    def current_processing_time(self) -> int:
        """The task's current processing time (ms)."""
        return self._operator.context.processing_time.current_processing_time()

    def current_watermark(self) -> int:
        """The operator's current watermark."""
        return self._operator.current_watermark

    def output(self, output_tag: OutputTag, value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag``."""
        self._side.add(output_tag, value, self.timestamp_)


class BroadcastContext(_BroadcastBase, BroadcastProcessFunction.Context, KeyedBroadcastProcessFunction.Context):
    """The Context of ``process_broadcast_element``: the broadcast state is writable."""

    __slots__ = ()

    def get_broadcast_state(self, state_descriptor: Any) -> Any:
        """The BroadcastState of ``state_descriptor`` (declared in ``broadcast(...)``)."""
        return self._states.lookup(self._states.writable, state_descriptor)

    def timer_service(self) -> TimerService:
        """Time queries (PyFlink's broadcast Context has it too); timers cannot be set here."""
        return NonKeyedTimerService(self._operator)


class ReadOnlyBroadcastContext(_BroadcastBase, BroadcastProcessFunction.ReadOnlyContext,
                               KeyedBroadcastProcessFunction.OnTimerContext):
    """The ReadOnlyContext of ``process_element`` (and, keyed, the OnTimerContext of ``on_timer``)."""

    __slots__ = ("time_domain_", "_timer_service", "_backend")

    def __init__(self, operator: "StreamOperator", side: SideOutputCollector, states: BroadcastStates,
                 timer_service: Optional[TimerService] = None, backend: Any = None) -> None:
        super().__init__(operator, side, states)
        self.time_domain_: Optional[TimeDomain] = None
        self._timer_service = timer_service
        self._backend = backend

    def get_broadcast_state(self, state_descriptor: Any) -> ReadOnlyBroadcastState:
        """A read-only view of the broadcast state of ``state_descriptor``."""
        return self._states.lookup(self._states.read_only, state_descriptor)

    def timer_service(self) -> TimerService:
        """Timers of the current key (keyed broadcast only)."""
        if self._timer_service is None:
            return NonKeyedTimerService(self._operator)
        return self._timer_service

    def get_current_key(self) -> Any:
        """The current key (keyed broadcast only)."""
        if self._backend is None:
            raise InvalidProgramError("get_current_key() needs a keyed stream: use a KeyedBroadcastProcessFunction "
                                      "on ds.key_by(...).connect(broadcast_stream)")
        return self._backend.current_key

    def time_domain(self) -> TimeDomain:
        """The domain of the firing timer (on_timer only)."""
        if self.time_domain_ is None:
            raise InvalidProgramError("time_domain() is only available in on_timer (an OnTimerContext)")
        return self.time_domain_
