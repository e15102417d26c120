"""The formats API (PyFlink's ``datastream.formats``): Parquet and CSV formats and bulk writers as plan data.

Building sources and sinks never touches pyarrow or pyspark; what is wrong with a row
type or a builder call is said when the plan is built, naming the column or argument.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from streamkernel.common import Configuration, Types
from streamkernel.common.serialization import BulkWriter, BulkWriterFactory
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, FileSource, RollingPolicy, StreamFormat
from streamkernel.datastream.formats.arrow_types import check_supported, compatible, from_arrow_type, to_arrow_type
from streamkernel.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
from streamkernel.datastream.formats.parquet import (
    AvroParquetReaders,
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from streamkernel.errors import InvalidProgramError

ROW = Types.ROW_NAMED(["id", "name", "score"], [Types.LONG(), Types.STRING(), Types.DOUBLE()])


def test_importing_the_formats_loads_neither_pyarrow_nor_pyspark() -> None:
    code = ("import sys, streamkernel.datastream.formats, streamkernel.datastream.connectors.spark;"
            "print(','.join(m for m in ('pyarrow', 'pyspark', 'pandas', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_bulk_file_source_carries_the_row_type_to_the_stream() -> None:
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW), "/data/in").build()
    assert source.is_bounded and source.get_produced_type() == ROW
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_source(source, None, "parquet")
    assert ds.get_type() == ROW
    assert pickle.loads(pickle.dumps(source)).stream_format.row_type == ROW  # plan data travels


def test_formats_go_to_their_own_builder() -> None:
    with pytest.raises(InvalidProgramError, match="for_bulk_file_format: expected a BulkFormat.*goes to "
                                                  "FileSource.for_record_stream_format"):
        FileSource.for_bulk_file_format(StreamFormat.text_line_format(), "/x")
    with pytest.raises(InvalidProgramError, match="goes to FileSource.for_bulk_file_format"):
        FileSource.for_record_stream_format(ParquetColumnarRowInputFormat(ROW), "/x")


def test_row_types_are_checked_when_the_plan_is_built() -> None:
    with pytest.raises(InvalidProgramError, match="row_type must be a row type"):
        ParquetBulkWriters.for_row_type(Types.LONG())
    bad = Types.ROW_NAMED(["id", "blob"], [Types.LONG(), Types.PICKLED_BYTE_ARRAY()])
    with pytest.raises(InvalidProgramError, match="column 'blob' has type .*no Parquet column type"):
        ParquetBulkWriters.for_row_type(bad)
    nested = Types.ROW_NAMED(["a"], [Types.LIST(Types.ROW_NAMED(["x"], [Types.PICKLED_BYTE_ARRAY()]))])
    with pytest.raises(InvalidProgramError, match="column 'a.0.x'"):
        ParquetColumnarRowInputFormat(nested)
    with pytest.raises(InvalidProgramError, match="batch_size must be a positive int"):
        ParquetColumnarRowInputFormat(ROW, batch_size=0)
    with pytest.raises(InvalidProgramError, match="differ in more than case"):
        ParquetColumnarRowInputFormat(Types.ROW_NAMED(["a", "A"], [Types.INT(), Types.INT()]),
                                      is_case_sensitive=False)


def test_parquet_writer_options_come_from_the_hadoop_config() -> None:
    factory = ParquetBulkWriters.for_row_type(ROW, Configuration.from_dict({"parquet.compression": "zstd",
                                                                              "parquet.block.size": "4096"}))
    assert (factory.compression, factory.block_size, factory.get_row_type()) == ("ZSTD", 4096, ROW)
    assert ParquetBulkWriters.for_row_type(ROW).compression == "SNAPPY"
    with pytest.raises(InvalidProgramError, match="parquet.compression must be one of"):
        ParquetBulkWriters.for_row_type(ROW, {"parquet.compression": "LZO2"})
    with pytest.raises(InvalidProgramError, match="parquet.block.size must be a positive number"):
        ParquetBulkWriters.for_row_type(ROW, {"parquet.block.size": "big"})


def test_a_bulk_file_sink_rolls_on_checkpoints_only() -> None:
    builder = FileSink.for_bulk_format("/out", ParquetBulkWriters.for_row_type(ROW))
    assert builder is not None and isinstance(builder, FileSink.BulkFormatBuilder)
    sink = builder.with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()).build()
    assert sink.is_bulk and sink.encoder is None and sink.rolling_policy.roll_on_checkpoint
    with pytest.raises(InvalidProgramError, match="rolls its part files at every checkpoint only"):
        builder.with_rolling_policy(RollingPolicy.default_rolling_policy())
    with pytest.raises(InvalidProgramError, match="writer_factory must be a BulkWriterFactory"):
        FileSink.for_bulk_format("/out", "parquet")


def test_a_bulk_writer_factory_of_your_own_needs_create() -> None:
    class Lines(BulkWriterFactory):
        pass

    with pytest.raises(NotImplementedError, match="must define create"):
        Lines().create(None)

    class Writer(BulkWriter):
        def __init__(self) -> None:
            self.got: list = []

        def add_element(self, element: object) -> None:
            self.got.append(element)

        def finish(self) -> None:
            pass

    writer = Writer()
    writer.add_elements([1, 2])
    assert writer.got == [1, 2]


def test_avro_formats_say_what_to_use_instead() -> None:
    with pytest.raises(InvalidProgramError, match="ParquetColumnarRowInputFormat"):
        AvroParquetReaders.for_generic_record(None)


# ---------------------------------------------------------------------------- CSV
def test_csv_schema_builder_as_pyflink() -> None:
    schema = (CsvSchema.builder()
              .add_number_column("id", number_type=Types.INT())
              .add_string_column("name")
              .add_array_column("tags", separator="|", element_type=Types.INT())
              .add_boolean_column("ok")
              .add_column("day", Types.SQL_DATE())
              .set_column_separator(";")
              .set_use_header()
              .set_null_value("NULL")
              .build())
    assert len(schema) == 5 and schema.column_names() == ["id", "name", "tags", "ok", "day"]
    assert schema.get_type_info() == Types.ROW_NAMED(
        ["id", "name", "tags", "ok", "day"],
        [Types.INT(), Types.STRING(), Types.LIST(Types.INT()), Types.BOOLEAN(), Types.SQL_DATE()])
    assert (schema.column_separator, schema.use_header, schema.null_value) == (";", True, "NULL")
    assert schema.columns[2].array_separator == "|"
    assert CsvReaderFormat.for_schema(schema).get_produced_type() == schema.get_type_info()
    assert CsvBulkWriters.for_schema(schema).get_row_type() == schema.get_type_info()


def test_csv_schema_mistakes_are_named() -> None:
    with pytest.raises(InvalidProgramError, match="column separator must be a single character"):
        CsvSchema.builder().set_column_separator("::")
    with pytest.raises(InvalidProgramError, match="add_number_column\\('n'\\): number_type must be a numeric"):
        CsvSchema.builder().add_number_column("n", Types.STRING())
    with pytest.raises(InvalidProgramError, match="column names must be unique"):
        CsvSchema.builder().add_string_column("a").add_string_column("a").build()
    with pytest.raises(InvalidProgramError, match="the schema has no columns"):
        CsvReaderFormat.for_schema(CsvSchema.builder().build())


# ------------------------------------------------------------------- type mapping
def test_types_map_to_arrow_and_back() -> None:
    pa = pytest.importorskip("pyarrow")
    for type_info, arrow in [(Types.INT(), pa.int32()), (Types.STRING(), pa.string()),
                             (Types.SQL_TIMESTAMP(), pa.timestamp("us")), (Types.BIG_DEC(), pa.decimal128(38, 18)),
                             (Types.LIST(Types.DOUBLE()), pa.list_(pa.float64())),
                             (Types.MAP(Types.STRING(), Types.LONG()), pa.map_(pa.string(), pa.int64())),
                             (ROW, pa.struct([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64())]))]:
        assert to_arrow_type(type_info) == arrow
        assert from_arrow_type(arrow, "c", "here") == type_info
        assert compatible(type_info, arrow)
    assert to_arrow_type(Types.SQL_TIMESTAMP(), utc_timestamp=True) == pa.timestamp("us", tz="UTC")
    assert compatible(Types.INT(), pa.int64()) and compatible(Types.BIG_INT(), pa.decimal128(10, 0))
    assert not compatible(Types.STRING(), pa.int64()) and not compatible(ROW, pa.struct([("id", pa.int64())]))
    with pytest.raises(InvalidProgramError, match="here: column 'c' has type duration"):
        from_arrow_type(pa.duration("s"), "c", "here")
    check_supported(Types.MAP(Types.STRING(), Types.LIST(Types.SQL_DATE())), "m")
