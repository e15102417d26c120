"""Writer of a PrintSink: each record on stdout (or stderr), as Flink's PrintSinkFunction.

Lines carry Flink's prefix: ``2> `` (1-based subtask index) when the sink runs with
parallelism > 1, ``id> `` / ``id:2> `` with a sink identifier. A batch is printed with one
``write`` of one joined string (no per-record call of ours), so lines of concurrent sink
subtasks do not interleave within a batch. The stream is looked up at every batch, so
redirected ``sys.stdout`` (notebook cells, pytest's capsys) is honoured.
"""

from __future__ import annotations

import sys
from typing import Optional

from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["PrintSinkWriter"]


class PrintSinkWriter(BatchSinkWriter):
    """Prints ``prefix + str(record)`` per line."""

    def open(self) -> None:
        """Compute the subtask's line prefix."""
        self._prefix = self.sink.prefix(self.subtask_index, self.parallelism)
        self._to_stderr = self.sink.to_stderr

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Print the batch, one line per record."""
        prefix = self._prefix
        if prefix:
            text = prefix + ("\n" + prefix).join(map(str, values)) + "\n"
        else:
            text = "\n".join(map(str, values)) + "\n"
        (sys.stderr if self._to_stderr else sys.stdout).write(text)

    def finish(self) -> None:
        """Flush the stream."""
        (sys.stderr if self._to_stderr else sys.stdout).flush()
