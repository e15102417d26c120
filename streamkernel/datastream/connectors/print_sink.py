"""The print sink behind ``DataStream.print()``: each record on stdout, as Flink prints it.

Flink prefixes every line with the 1-based index of the subtask that printed it when the
sink runs with parallelism > 1 (``2> hello``), and with the sink identifier when one is
given (``wc:2> hello``). The runtime prints a batch as one string of such lines
(:meth:`PrintSink.prefix` + the record's text); :meth:`PrintSink.format` shows one line.

The record's text is PyFlink's for the stream's declared type
(:func:`~streamkernel.common.typeinfo.text.print_formatter`): ``str(record)`` when none was
declared, Java's ``toString()`` for tuples and basic types (``(hello,1)``), ``+I[hello,1]``
for rows. ``DataStream.print()`` passes the type to the runtime in the sink's ``input_type``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["PrintSink"]


@dataclass(frozen=True)
class PrintSink:
    """Writes each record per line to stdout (or stderr), Flink's ``PrintSinkFunction``."""

    sink_identifier: Optional[str] = None
    to_stderr: bool = False

    def prefix(self, subtask_index: int, parallelism: int) -> str:
        """The line prefix for a subtask (0-based index) of a sink with ``parallelism``."""
        if parallelism > 1:
            task = f"{subtask_index + 1}> "
            return f"{self.sink_identifier}:{task}" if self.sink_identifier else task
        return f"{self.sink_identifier}> " if self.sink_identifier else ""

    def format(self, record: Any, subtask_index: int, parallelism: int, type_info: Any = None) -> str:
        """The line printed for ``record`` of the declared type ``type_info`` (without the newline)."""
        from streamkernel.common.typeinfo.text import print_formatter

        return f"{self.prefix(subtask_index, parallelism)}{print_formatter(type_info)(record)}"
