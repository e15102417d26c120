"""A Spark DataFrame as a bounded source (a streamkernel extra; Flink has no Spark connector).

::

    df = spark.read.table("events")                       # any DataFrame
    source = SparkDataFrameSource(df)                     # materialized now, with df.write.parquet
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "events")
    # records: Row(id=1, name='a', ...), typed source.row_type (Types.ROW_NAMED from df.schema)

The DataFrame is **materialized on the driver** when the source is made: Spark writes it
as Parquet into a staging directory (one file per DataFrame partition), and the source
reads that directory like ``FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat
(row_type), path)``: each Parquet row group is a split dealt to the source subtasks, read
exactly once whatever fails, restorable at another parallelism. The source subtasks need
no SparkSession (they may run in TaskManager processes or Spark tasks that have none);
they need pyarrow. The source holds the staging path and row type, never the DataFrame,
so it travels to TaskManagers like any plan data. More partitions make more files, so
``df.repartition(n)`` spreads reading over ``n`` source subtasks.

Types: Spark's ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType,
BooleanType, StringType (and char/varchar), BinaryType, DecimalType, DateType,
TimestampType, TimestampNTZType, ArrayType, MapType and StructType map to the matching
``Types.*`` (``formats.arrow_types``); Spark's TIMESTAMP values arrive as naive local-time
datetimes, as ``df.collect()`` gives them. Other types (intervals, variant, null) are
refused naming the column: cast or drop them first.

Staging: by default a fresh temporary directory, deleted when the Python process exits
(or by :meth:`SparkDataFrameSource.cleanup`); pass ``staging_path`` (a directory that must
not exist yet) to keep it, e.g. on storage that every TaskManager can read when they run
on other machines (the readers read local or mounted paths). pyspark is never imported
here; the DataFrame's own methods are used.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
from typing import Any, Optional

from streamkernel.common.typeinfo import RowTypeInfo, TypeInformation, Types
from streamkernel.datastream.connectors.file_system import FileSource
from streamkernel.datastream.formats.parquet import ParquetColumnarRowInputFormat
from streamkernel.errors import InvalidProgramError

__all__ = ["SparkDataFrameSource", "spark_type_to_type_info", "spark_schema_to_row_type"]

_log = logging.getLogger(__name__)

_SIMPLE_TYPES = {
    "ByteType": Types.BYTE, "ShortType": Types.SHORT, "IntegerType": Types.INT, "LongType": Types.LONG,
    "FloatType": Types.FLOAT, "DoubleType": Types.DOUBLE, "BooleanType": Types.BOOLEAN,
    "StringType": Types.STRING, "CharType": Types.STRING, "VarcharType": Types.STRING,
    "BinaryType": lambda: Types.PRIMITIVE_ARRAY(Types.BYTE()), "DecimalType": Types.BIG_DEC,
    "DateType": Types.SQL_DATE, "TimestampType": Types.SQL_TIMESTAMP, "TimestampNTZType": Types.SQL_TIMESTAMP,
}

_staging_lock = threading.Lock()
_temporary_dirs: set[str] = set()  # staging directories to delete at exit (guarded by _staging_lock)


def _delete_temporary_dirs() -> None:
    with _staging_lock:
        dirs = list(_temporary_dirs)
        _temporary_dirs.clear()
    for directory in dirs:
        shutil.rmtree(directory, ignore_errors=True)


atexit.register(_delete_temporary_dirs)


def spark_type_to_type_info(data_type: Any, column: str) -> TypeInformation:
    """The ``Types.*`` of a Spark SQL data type (raise naming ``column`` when there is none)."""
    name = type(data_type).__name__
    simple = _SIMPLE_TYPES.get(name)
    if simple is not None:
        return simple()
    if name == "ArrayType":
        return Types.LIST(spark_type_to_type_info(data_type.elementType, f"{column}.element"))
    if name == "MapType":
        return Types.MAP(spark_type_to_type_info(data_type.keyType, f"{column}.key"),
                         spark_type_to_type_info(data_type.valueType, f"{column}.value"))
    if name == "StructType":
        return spark_schema_to_row_type(data_type, column)
    described = data_type.simpleString() if callable(getattr(data_type, "simpleString", None)) else name
    raise InvalidProgramError(
        f"SparkDataFrameSource: column {column!r} has Spark type {described}, which has no Types.* counterpart "
        f"(and no Parquet column); cast it (df.withColumn({column.split('.')[0]!r}, ...cast('string'))) or drop it")


def spark_schema_to_row_type(schema: Any, prefix: Optional[str] = None) -> RowTypeInfo:
    """``Types.ROW_NAMED`` of a Spark ``StructType`` (field names and mapped types)."""
    names = [field.name for field in schema.fields]
    types = [spark_type_to_type_info(field.dataType, f"{prefix}.{field.name}" if prefix else field.name)
             for field in schema.fields]
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise InvalidProgramError(f"SparkDataFrameSource: the DataFrame has duplicate column names {duplicates}; "
                                  f"rename them (df.toDF(...)) so that every Row field has its own name")
    return Types.ROW_NAMED(names, types)


def _master(df: Any) -> Optional[str]:
    try:
        return str(df.sparkSession.sparkContext.master)
    except Exception:  # Spark Connect has no SparkContext
        return None


class SparkDataFrameSource(FileSource):
    """A Spark DataFrame, materialized as Parquet on the driver, read as a bounded source of Rows.

    ``staging_path``: where the DataFrame is written (must not exist; default: a temporary
    directory deleted at exit). ``batch_size``: rows decoded at a time by the readers.
    """

    default_name = "SparkDataFrameSource"

    def __init__(self, df: Any, staging_path: Optional[str] = None, batch_size: int = 2048) -> None:
        if not hasattr(df, "schema") or not hasattr(df, "write"):
            raise InvalidProgramError(f"SparkDataFrameSource: expected a pyspark.sql.DataFrame, got {df!r}")
        row_type = spark_schema_to_row_type(df.schema)
        temporary = staging_path is None
        if temporary:
            master = _master(df)
            if master is not None and not master.startswith("local"):
                _log.warning("SparkDataFrameSource: the DataFrame is staged in a local temporary directory while "
                             "Spark runs on %s; executors and TaskManagers on other machines cannot share it: "
                             "pass staging_path on storage they all mount", master)
            root = tempfile.mkdtemp(prefix="streamkernel-dataframe-")
            with _staging_lock:
                _temporary_dirs.add(root)
            path = os.path.join(root, "data")
        else:
            path = os.path.abspath(os.fspath(staging_path))  # type: ignore[arg-type]
            if os.path.exists(path):
                raise InvalidProgramError(f"SparkDataFrameSource: staging_path {path!r} already exists; pass a "
                                          f"directory that does not exist yet (the DataFrame is written there)")
            root = path
        try:
            df.write.parquet(path)
        except Exception as exc:
            if temporary:
                self._remove(root)
            raise InvalidProgramError(f"SparkDataFrameSource: writing the DataFrame to {path!r} failed: "
                                      f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
        super().__init__(ParquetColumnarRowInputFormat(row_type, batch_size=batch_size), (path,), None)
        #: the record type: Types.ROW_NAMED of the DataFrame's columns
        self.row_type = row_type
        #: the Parquet directory the DataFrame was written to
        self.staging_path = path
        self._staging_root = root
        self._temporary = temporary

    @staticmethod
    def _remove(root: str) -> None:
        shutil.rmtree(root, ignore_errors=True)
        with _staging_lock:
            _temporary_dirs.discard(root)

    def cleanup(self) -> None:
        """Delete the staging directory (do it only once no job reads this source any more)."""
        self._remove(self._staging_root)

    def __repr__(self) -> str:
        return f"SparkDataFrameSource({self.row_type.type_name}, staging_path={self.staging_path!r})"
