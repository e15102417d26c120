"""Writer of a CollectSink: batches go into the sink's CollectBuffer, which the program reads.

``put_batch`` blocks while the buffer is full: a reader that falls behind backpressures
the job. The job's driver unblocks writers of a failed or cancelled job with
``buffer.fail(exc)`` (or ``discard()`` when the reader went away). A sink subtask that
finishes tells the buffer, which closes after the last of them.
"""

from __future__ import annotations

from typing import Optional

from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["CollectSinkWriter"]


class CollectSinkWriter(BatchSinkWriter):
    """Puts each batch (a copy: the buffer keeps it) into the collect buffer."""

    def open(self) -> None:
        """Find the live buffer and tell it how many subtasks write."""
        self._buffer = self.sink.buffer
        self._buffer.expect_writers(self.parallelism)
        self._put = self._buffer.put_batch

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Hand the batch over (blocks while the buffer is full)."""
        self._put(list(values))

    def finish(self) -> None:
        """This subtask is done; the buffer closes after the last one."""
        self._buffer.writer_finished(self.subtask_index)
