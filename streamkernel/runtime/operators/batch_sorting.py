"""BATCH execution of keyed operators: Flink's SortingDataInput and batch timer semantics.

With ``execution.runtime-mode: BATCH`` a keyed one-input operator (the head of its task)
gets :class:`BatchSortingInput` between the input gate and itself. It gathers the whole
(bounded) input, sorts it by the key's serialized bytes then by timestamp, and feeds the
operator one key at a time, as Flink's ``SortingDataInput`` does:

* the order of keys is Flink's: the key is serialized as the Java side of PyFlink does
  (:func:`serialized_key`) and compared as Flink's ``VariableLengthByteKeyComparator`` does,
  byte by byte as *signed* Java bytes, a shorter key first when one is a prefix of the other
  (:func:`key_order`); records of a key come in timestamp order, ties in arrival order;
* no watermark reaches the operator while it runs (its ``current_watermark`` is
  ``MIN_WATERMARK``); when a key is done, its event-time timers fire with the watermark at
  ``MAX_WATERMARK`` (windows of the key fire there), then its processing-time timers
  (Flink's ``BatchExecutionInternalTimeService``), then the watermark goes back to the minimum;
* after the last key the operator sees the final ``MAX_WATERMARK`` and ``end_input``.

PyFlink keys a Python ``key_by`` by the pickled key (``Types.PICKLED_BYTE_ARRAY()``, pickled
with ``pickle.dumps`` at the default protocol) unless ``key_type`` is given. The Java key is a
one-field Row, serialized by Flink's RowSerializer: one mask byte (0x00; 0x20 when the key is
None, with no field bytes), then the field: ``int32 length + bytes`` for a pickled key,
Flink's StringSerializer / IntSerializer ... encodings for basic types.
"""

from __future__ import annotations

import pickle
import struct
from typing import Any, Callable, Optional

from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK
from streamkernel.runtime.operators.external_sorter import estimate_batch_size

__all__ = ["BatchSortingInput", "serialized_key", "key_order", "sort_key_function", "is_batch_mode", "end_key", "state_clearer",
           "uses_batch_state_backend"]

#: the most records of one key handed to the operator at once when feeding merged runs
_FEED_CHUNK = 4096
_NON_NULL = b"\x00"
_NULL = b"\x20"  # RowSerializer's null bit of field 0 (after the two row-kind bits)
#: maps each byte b to b ^ 0x80: unsigned comparison of the result = signed comparison of the input
_SIGN_FLIP = bytes((b ^ 0x80) for b in range(256))

_FIXED: dict[str, Callable[[Any], bytes]] = {
    "BYTE": lambda v: struct.pack(">b", v),
    "BOOLEAN": lambda v: b"\x01" if v else b"\x00",
    "SHORT": lambda v: struct.pack(">h", v),
    "INT": lambda v: struct.pack(">i", v),
    "LONG": lambda v: struct.pack(">q", v),
    "FLOAT": lambda v: struct.pack(">f", v),
    "DOUBLE": lambda v: struct.pack(">d", v),
    "CHAR": lambda v: struct.pack(">H", ord(v)),
}


def is_batch_mode(configuration: Any) -> bool:
    """True when ``execution.runtime-mode`` is BATCH (AUTOMATIC is resolved before the job runs)."""
    from streamkernel.common.options import ExecutionOptions

    return bool(ExecutionOptions.RUNTIME_MODE.get(configuration) == "BATCH")


def _string_value(text: str) -> bytes:
    """Flink's ``StringValue.writeString``: length + 1 and each UTF-16 unit, 7 bits a byte, low bits first."""
    out = bytearray()

    def varint(n: int) -> None:
        while n >= 0x80:
            out.append((n | 0x80) & 0xFF)
            n >>= 7
        out.append(n)

    units = text.encode("utf-16-be")
    varint(len(units) // 2 + 1)
    for i in range(0, len(units), 2):
        varint((units[i] << 8) | units[i + 1])
    return bytes(out)


def serialized_key(key: Any, key_type: Any = None) -> bytes:
    """The bytes Flink sorts a key by: the one-field key Row as PyFlink's Java side serializes it.

    ``key_type`` is ``key_by``'s: None (or ``Types.PICKLED_BYTE_ARRAY()``) pickles the key,
    a basic type uses Flink's serializer of that type.
    """
    if key is None:
        return _NULL
    basic = getattr(getattr(key_type, "_basic_type", None), "name", None)
    if basic == "STRING":
        return _NON_NULL + _string_value(str(key))
    fixed = _FIXED.get(basic) if basic is not None else None
    if fixed is not None:
        return _NON_NULL + fixed(key)
    data = pickle.dumps(key)
    return _NON_NULL + struct.pack(">i", len(data)) + data


def key_order(serialized: bytes) -> bytes:
    """A sort key giving Flink's order of serialized keys (signed bytes; a prefix first)."""
    return serialized.translate(_SIGN_FLIP)


def sort_key_function(key_type: Any = None) -> Callable[[Any], bytes]:
    """``key -> key_order(serialized_key(key, key_type))``, serializing each str, int or bytes key once.

    Equal str, int and bytes values serialize alike, so their sort key is cached; other keys
    are serialized every time (0 == False == 0.0 in Python, yet PyFlink keys them apart by
    their pickled bytes).
    """
    cache: dict[tuple[type, Any], bytes] = {}

    def order_of(key: Any) -> bytes:
        cls = key.__class__
        if cls is str or cls is int or cls is bytes:
            order = cache.get((cls, key))
            if order is None:
                order = cache[(cls, key)] = key_order(serialized_key(key, key_type))
            return order
        return key_order(serialized_key(key, key_type))

    return order_of


class _NoWatermarkOutput:
    """The operator's output while it replays a key: records go on, watermarks stay in."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.emit = inner.emit
        self.emit_side = inner.emit_side
        self.emit_watermark_status = inner.emit_watermark_status

    def emit_watermark(self, timestamp: int) -> None:
        """Dropped: downstream sees only the final MAX_WATERMARK."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class BatchSortingInput:
    """Sits between the task's input and a keyed head operator in BATCH mode (see the module doc).

    ``sort_buffer`` (a :class:`~.external_sorter.ManagedSortBuffer`) bounds what it holds by its
    share of the slot's managed memory: beyond it, the records held are sorted and spilled to a
    run, and the runs are merged at the end (:mod:`.external_sorter`); None: unbounded.
    """

    def __init__(self, head: Any, key_selector: Any, key_type: Any = None, per_key_state: bool = True,
                 sort_buffer: Any = None) -> None:
        self.head = head
        self._key_of: Callable[[Any], Any] = getattr(key_selector, "get_key", key_selector)
        self._key_type = key_type
        self._values: list = []
        self._timestamps: list = []
        self._clear_state = state_clearer(head) if per_key_state else None
        self._sort_buffer = sort_buffer
        self._sequence = 0  # arrival index of the first record held (spilled runs came before)
        self._has_time = False

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Gather the batch (the input is bounded: it is sorted when it ends); spill what is held
        once it passes the sorter's spilling threshold."""
        self._values.extend(values)
        self._timestamps.extend(timestamps if timestamps is not None else [None] * len(values))
        buffer = self._sort_buffer
        if buffer is not None:
            if not self._has_time and timestamps is not None:
                self._has_time = any(t is not None for t in timestamps)
            if buffer.add(estimate_batch_size(values)):
                buffer.runs.write(self._sorted_entries())
                self._sequence += len(self._values)
                self._values, self._timestamps = [], []
                buffer.spilled()

    def process_watermark(self, timestamp: int) -> None:
        """Dropped: in BATCH the operator sees no watermark but the final one."""

    def process_watermark_status(self, idle: bool) -> None:
        """Dropped with the watermarks."""

    def end_input(self) -> None:
        """Sort what came, feed it key by key (firing each key's timers at its end), then end the input."""
        head = self.head
        real_output = head.output
        head.output = _NoWatermarkOutput(real_output)
        try:
            if self._sort_buffer is not None and len(self._sort_buffer.runs):
                self._feed_merged(self._sort_buffer.runs.merged(self._sorted_entries()))
            else:
                self._feed_in_memory()
        finally:
            head.output = real_output
            self.close()
        head.process_watermark(MAX_WATERMARK)
        head.end_input()

    def close(self) -> None:
        """Drop what is held and the spilled runs, give the managed memory back (idempotent)."""
        self._values, self._timestamps = [], []
        if self._sort_buffer is not None:
            self._sort_buffer.close()

    def _feed_in_memory(self) -> None:
        """Nothing spilled: group the records by key, keys in order, each key's in timestamp order."""
        head = self.head
        values, timestamps = self._values, self._timestamps
        self._values, self._timestamps = [], []
        has_time = any(t is not None for t in timestamps)
        groups = self._group_by_key(values)
        for key in sorted(groups):
            chunk = groups[key]  # arrival order
            if has_time:  # stable: ties stay in arrival order; no timestamp sorts first (Long.MIN_VALUE)
                chunk.sort(key=lambda i: MIN_WATERMARK if timestamps[i] is None else timestamps[i])
            head.process_batch([values[i] for i in chunk],
                               [timestamps[i] for i in chunk] if has_time else None)
            self._end_key()

    def _feed_merged(self, entries: Any) -> None:
        """Feed merged ``(key order, timestamp key, sequence, timestamp, value)`` entries key by key."""
        head, has_time = self.head, self._has_time
        current: Optional[bytes] = None
        values: list = []
        stamps: list = []
        for order, _, _, timestamp, value in entries:
            if order != current or len(values) >= _FEED_CHUNK:
                if values:
                    head.process_batch(values, stamps if has_time else None)
                    values, stamps = [], []
                if order != current and current is not None:
                    self._end_key()
                current = order
            values.append(value)
            stamps.append(timestamp)
        if values:
            head.process_batch(values, stamps if has_time else None)
        if current is not None:
            self._end_key()

    def _sorted_entries(self) -> list:
        """What is held as sorted ``(key order, timestamp key, sequence, timestamp, value)`` entries."""
        values, timestamps, base = self._values, self._timestamps, self._sequence
        entries = []
        for key, chunk in self._group_by_key(values).items():
            for i in chunk:
                t = timestamps[i]
                entries.append((key, MIN_WATERMARK if t is None else t, base + i, t, values[i]))
        entries.sort(key=lambda e: e[:3])
        return entries

    def _group_by_key(self, values: list) -> dict[bytes, list[int]]:
        """The indexes of ``values`` per sort key (:func:`key_order` of the serialized key), in arrival order.

        See :func:`sort_key_function`.
        """
        key_of, order_of = self._key_of, sort_key_function(self._key_type)
        groups: dict[bytes, list[int]] = {}
        for i, value in enumerate(values):
            order = order_of(key_of(value))
            group = groups.get(order)
            if group is None:
                groups[order] = [i]
            else:
                group.append(i)
        return groups

    def _end_key(self) -> None:
        end_key(self.head, self._clear_state)


def state_clearer(head: Any) -> Optional[Callable[[], None]]:
    """What empties ``head``'s keyed state after each key, or None.

    State lives only while its key is current (Flink's ``BatchExecutionKeyedStateBackend``,
    which a BATCH job gets whatever ``state.backend.type`` says unless
    ``execution.batch-state-backend.enabled`` is false: see :func:`uses_batch_state_backend`).
    """
    from streamkernel.runtime.state.heap import HeapKeyedStateBackend

    backend = head.context.keyed_backend
    return backend.dispose if isinstance(backend, HeapKeyedStateBackend) else None


def uses_batch_state_backend(configuration: Any) -> bool:
    """True when keyed operators get Flink's per-key batch state backend (BATCH mode, the option on)."""
    from streamkernel.common.options import ExecutionOptions

    return is_batch_mode(configuration) and bool(ExecutionOptions.USE_BATCH_STATE_BACKEND.get(configuration))


def end_key(head: Any, clear_state: Optional[Callable[[], None]]) -> None:
    """A key is done: its event-time timers fire (watermark MAX), then its processing-time timers;
    the watermark goes back to the minimum and the key's state is dropped."""
    head.process_watermark(MAX_WATERMARK)
    for service in head._timer_services:
        service.fire_all_processing_time_timers()
    head.current_watermark = MIN_WATERMARK
    for service in head._timer_services:
        service.reset_watermark(MIN_WATERMARK)
    if clear_state is not None:
        clear_state()
