"""Writing your own sink: a :class:`~streamkernel.datastream.connectors.base.Sink` that creates a :class:`SinkWriter`.

This is Flink's Sink V2 shape, in Python. Subclass ``Sink`` and define
``create_writer(context)``; each sink subtask calls it once and then feeds the writer::

    class ListSink(Sink):
        def __init__(self):
            self.rows = []
        def create_writer(self, context):            # context: a RuntimeContext
            return ListWriter(self.rows, context.get_index_of_this_subtask())

    class ListWriter(SinkWriter):
        def __init__(self, rows, subtask):
            self.rows, self.subtask = rows, subtask
        def write(self, element, context):           # context: a SinkContext
            self.rows.append((self.subtask, element, context.timestamp()))

    ds.sink_to(ListSink())

``write`` is called per record; override :meth:`SinkWriter.write_batch` instead to take
whole batches (faster: one call per batch). ``flush(end_of_input=True)`` comes once after
the last record of a bounded input, and ``flush(False)`` at every checkpoint; ``close``
always comes last, also after a failure.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.common.watermark_strategy import MIN_WATERMARK

__all__ = ["SinkWriter", "SinkContext"]


class SinkContext:
    """What a sink sees about the record being written (Flink's ``SinkWriter.Context``).

    One context object is reused for every record of a subtask (no allocation per record).
    """

    __slots__ = ("_timestamp", "_watermark", "_now_ms")

    def __init__(self, now_ms: Optional[Callable[[], int]] = None) -> None:
        self._timestamp: Optional[int] = None
        self._watermark: int = MIN_WATERMARK
        self._now_ms = now_ms

    def timestamp(self) -> Optional[int]:
        """The record's event-time timestamp (ms), or None if it has none."""
        return self._timestamp

    def current_watermark(self) -> int:
        """The sink subtask's current watermark."""
        return self._watermark

    def current_processing_time(self) -> int:
        """The current processing time (ms)."""
        if self._now_ms is None:
            import time

            return time.time_ns() // 1_000_000
        return self._now_ms()


class SinkWriter:
    """Writes the records of one sink subtask (Flink's ``SinkWriter``); override :meth:`write`."""

    def write(self, element: Any, context: SinkContext) -> None:
        """Write one record."""
        raise NotImplementedError(f"{type(self).__name__} must implement write(element, context) "
                                  f"or write_batch(values, timestamps)")

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Write a batch of records (``timestamps`` None when they have none).

        Not overriding it makes the runtime call :meth:`write` per record.
        """
        raise NotImplementedError

    def write_watermark(self, watermark: int) -> None:
        """The sink's input watermark advanced to ``watermark``."""

    def flush(self, end_of_input: bool) -> None:
        """Make everything written so far durable (at checkpoints, and at the end of input)."""

    def close(self) -> None:
        """Release resources; called last, also after a failure."""
