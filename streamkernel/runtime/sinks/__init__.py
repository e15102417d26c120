"""Sink writers: what a sink subtask runs for each kind of sink (see ``base``).

:func:`create_sink_writer` picks the writer for the ``sink`` param of a sink operator:
PrintSink, CollectSink, PandasSink, FileSink, CsvSink, a SinkFunction (or a plain
callable), or a Sink of your own with ``create_writer(runtime_context)``.
"""

from __future__ import annotations

from typing import Any

from streamkernel.datastream.connectors.base import SinkFunction
from streamkernel.datastream.connectors.collect import CollectSink
from streamkernel.datastream.connectors.file_sink import CsvSink, FileSink
from streamkernel.datastream.connectors.pandas import PandasSink
from streamkernel.datastream.connectors.print_sink import PrintSink
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.operators.base import OperatorContext
from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["BatchSinkWriter", "create_sink_writer"]


def create_sink_writer(sink: Any, context: OperatorContext) -> BatchSinkWriter:
    """The writer of ``sink`` for the sink subtask described by ``context``."""
    if isinstance(sink, PrintSink):
        from streamkernel.runtime.sinks.print import PrintSinkWriter

        return PrintSinkWriter(sink, context)
    if isinstance(sink, CollectSink):
        from streamkernel.runtime.sinks.collect import CollectSinkWriter

        return CollectSinkWriter(sink, context)
    if isinstance(sink, PandasSink):
        from streamkernel.runtime.sinks.pandas import PandasSinkWriter

        return PandasSinkWriter(sink, context)
    if isinstance(sink, FileSink):
        from streamkernel.runtime.sinks.files import FileSinkWriter

        return FileSinkWriter(sink, context)
    if isinstance(sink, CsvSink):
        from streamkernel.runtime.sinks.csv_sink import CsvSinkWriter

        return CsvSinkWriter(sink, context)
    if callable(getattr(sink, "create_writer", None)):
        from streamkernel.runtime.sinks.function import UserSinkWriter

        return UserSinkWriter(sink, context)
    if isinstance(sink, SinkFunction) or callable(sink) or callable(getattr(sink, "invoke", None)):
        from streamkernel.runtime.sinks.function import SinkFunctionWriter

        return SinkFunctionWriter(sink, context)
    raise InvalidProgramError(
        f"sink operator {context.node.name!r}: cannot write to {sink!r} ({type(sink).__name__}); use "
        f"print(), a FileSink, CsvSink, CollectSink, PandasSink, a SinkFunction, or a Sink with "
        f"create_writer(runtime_context)")
