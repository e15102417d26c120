"""Writer of a PrintSink: each record on stdout (or stderr), as Flink's PrintSinkFunction.

Each record is written as PyFlink prints a record of the stream's declared type
(``common.typeinfo.text.print_formatter``: ``str(record)`` when no type was declared,
Java's ``toString`` for tuples and basic types, ``+I[...]`` for rows). Lines carry
Flink's prefix: ``2> `` (1-based subtask index) when the sink runs with parallelism > 1,
``id> `` / ``id:2> `` with a sink identifier. A batch is printed with one ``write`` of one
joined string, so lines of concurrent sink subtasks do not interleave within a batch. The
stream is looked up at every batch, so redirected ``sys.stdout`` (notebook cells, pytest's
capsys) is honoured.
"""

from __future__ import annotations

import sys
from typing import Optional

from streamkernel.common.typeinfo.text import print_formatter
from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["PrintSinkWriter"]


class PrintSinkWriter(BatchSinkWriter):
    """Prints ``prefix + text(record)`` per line, the text PyFlink prints for the records' type."""

    def open(self) -> None:
        """Compute the subtask's line prefix and the records' text formatter."""
        self._prefix = self.sink.prefix(self.subtask_index, self.parallelism)
        self._to_stderr = self.sink.to_stderr
        self._text = print_formatter(self.input_type)

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Print the batch, one line per record."""
        prefix, text_of = self._prefix, self._text
        if prefix:
            text = prefix + ("\n" + prefix).join(map(text_of, values)) + "\n"
        else:
            text = "\n".join(map(text_of, values)) + "\n"
        (sys.stderr if self._to_stderr else sys.stdout).write(text)

    def finish(self) -> None:
        """Flush the stream."""
        (sys.stderr if self._to_stderr else sys.stdout).flush()
