"""Connectors: where a dataflow's records come from and go to.

Mirrors ``pyflink.datastream.connectors``: ``number_seq.NumberSequenceSource``,
``file_system.FileSource``, ``file_sink.FileSink`` (PyFlink keeps it in ``file_system``);
plus streamkernel's extras: ``datagen.DataGeneratorSource`` (records from a function of
their index, optionally rate limited), ``socket.SocketTextStreamSource`` (behind
``env.socket_text_stream``), ``memory_log.MemoryLog`` / ``MemoryLogSource`` (a partitioned
in-memory topic, Kafka's model), the print sink, ``CollectSink``, ``PandasSink`` and
``CsvSink``; ``sink_writer.SinkWriter`` for writing your own sink; ``spark.SparkDataFrameSource``
(a Spark DataFrame read as Parquet splits). File formats (Parquet, CSV) are in
``streamkernel.datastream.formats``.
"""

from streamkernel.datastream.connectors.base import Boundedness, Sink, SinkFunction, Source, SourceFunction
from streamkernel.datastream.connectors.collect import CollectBuffer, CollectSink
from streamkernel.datastream.connectors.collection import CollectionSource
from streamkernel.datastream.connectors.datagen import DataGeneratorSource, RateLimiterStrategy
from streamkernel.datastream.connectors.file_sink import (
    BucketAssigner,
    BulkFormatBuilder,
    CsvSink,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
)
from streamkernel.datastream.connectors.file_system import BulkFormat, FileSource, FileSourceBuilder, StreamFormat
from streamkernel.datastream.connectors.memory_log import MemoryLog, MemoryLogSource
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.datastream.connectors.pandas import PandasSink
from streamkernel.datastream.connectors.print_sink import PrintSink
from streamkernel.datastream.connectors.sink_writer import SinkContext, SinkWriter
from streamkernel.datastream.connectors.socket import SocketTextStreamSource
from streamkernel.datastream.connectors.spark import SparkDataFrameSource

__all__ = [
    "Boundedness", "Source", "SourceFunction", "Sink", "SinkFunction", "CollectionSource",
    "DataGeneratorSource", "RateLimiterStrategy", "FileSource", "FileSourceBuilder", "StreamFormat", "BulkFormat",
    "NumberSequenceSource", "PrintSink",
    "FileSink", "BulkFormatBuilder", "OutputFileConfig", "RollingPolicy", "BucketAssigner", "CsvSink",
    "CollectSink", "CollectBuffer", "PandasSink", "SinkWriter", "SinkContext",
    "MemoryLog", "MemoryLogSource", "SocketTextStreamSource", "SparkDataFrameSource",
]
