"""Connectors: where a dataflow's records come from and go to.

Mirrors ``pyflink.datastream.connectors``: ``number_seq.NumberSequenceSource``,
``file_system.FileSource``; plus streamkernel's ``datagen.DataGeneratorSource`` (records
from a function of their index, optionally rate limited) and the print sink.
"""

from streamkernel.datastream.connectors.base import Boundedness, Sink, SinkFunction, Source, SourceFunction
from streamkernel.datastream.connectors.collection import CollectionSource
from streamkernel.datastream.connectors.datagen import DataGeneratorSource, RateLimiterStrategy
from streamkernel.datastream.connectors.file_system import FileSource, FileSourceBuilder, StreamFormat
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.datastream.connectors.print_sink import PrintSink

__all__ = [
    "Boundedness", "Source", "SourceFunction", "Sink", "SinkFunction", "CollectionSource",
    "DataGeneratorSource", "RateLimiterStrategy", "FileSource", "FileSourceBuilder", "StreamFormat",
    "NumberSequenceSource", "PrintSink",
]
