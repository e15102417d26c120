"""Sink writers: what a sink subtask runs for each kind of sink (see ``base``).

:func:`create_sink_writer` picks the writer for the ``sink`` of a sink operator's SinkSpec:
PrintSink, CollectSink, PandasSink, FileSink, CsvSink (by the :data:`WRITERS` table), a Sink
of your own with ``create_writer(runtime_context)``, or a SinkFunction (or a plain callable).
"""

from __future__ import annotations

from typing import Any

from streamkernel.datastream.connectors.base import SinkFunction
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.core.registry import lookup, resolve
from streamkernel.runtime.operators.base import OperatorContext
from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["BatchSinkWriter", "create_sink_writer", "WRITERS"]

_SINKS = "streamkernel.runtime.sinks"

#: Sink class name (streamkernel.datastream.connectors) -> "module:WriterClass" (imported on first use)
WRITERS = {
    "PrintSink": f"{_SINKS}.print:PrintSinkWriter",
    "CollectSink": f"{_SINKS}.collect:CollectSinkWriter",
    "PandasSink": f"{_SINKS}.pandas:PandasSinkWriter",
    "FileSink": f"{_SINKS}.files:FileSinkWriter",
    "CsvSink": f"{_SINKS}.csv_sink:CsvSinkWriter",
}
#: the writer of a Sink of your own (``create_writer(runtime_context)``)
USER_SINK_WRITER = f"{_SINKS}.function:UserSinkWriter"
#: the writer of a SinkFunction, or of a plain callable called per record
SINK_FUNCTION_WRITER = f"{_SINKS}.function:SinkFunctionWriter"


def create_sink_writer(sink: Any, context: OperatorContext) -> BatchSinkWriter:
    """The writer of ``sink`` for the sink subtask described by ``context``."""
    target = lookup(WRITERS, sink, "streamkernel.datastream.connectors")
    if target is None and callable(getattr(sink, "create_writer", None)):
        target = USER_SINK_WRITER
    if target is None and (isinstance(sink, SinkFunction) or callable(sink) or callable(getattr(sink, "invoke", None))):
        target = SINK_FUNCTION_WRITER
    if target is None:
        raise InvalidProgramError(
            f"sink operator {context.node.name!r}: cannot write to {sink!r} ({type(sink).__name__}); use "
            f"print(), a FileSink, CsvSink, CollectSink, PandasSink, a SinkFunction, or a Sink with "
            f"create_writer(runtime_context)")
    return resolve(target)(sink, context)
