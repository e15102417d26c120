"""Sources and sinks that belong with Spark, checked against a real SparkSession (local[1]).

* ``spark.read.parquet(dir)`` on a bulk Parquet FileSink's directory sees exactly the
  committed records: never an in-progress or pending part file, even mid-run, and after a
  job with failures exactly the failure-free output, with Spark types matching the row type;
* ``SparkDataFrameSource(df)``: the DataFrame is staged as Parquet on the driver and read as
  splits; every row exactly once at parallelism 2 and 3, Row fields and types from the
  DataFrame's schema; unsupported column types are refused naming the column.

One SparkSession serves the module (Spark starts in several seconds) and is stopped after;
no Spark job may be left running.
"""

from __future__ import annotations

import datetime
import decimal
import importlib.util
import os
import pathlib
import re
import sys
import threading
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from streamkernel.common import Configuration, Types, WatermarkStrategy  # noqa: E402
from streamkernel.common.types import Row  # noqa: E402
from streamkernel.datastream import StreamExecutionEnvironment  # noqa: E402
from streamkernel.datastream.connectors import (  # noqa: E402
    BucketAssigner,
    FileSink,
    OutputFileConfig,
    SparkDataFrameSource,
)
from streamkernel.datastream.formats.parquet import ParquetBulkWriters  # noqa: E402
from streamkernel.errors import InvalidProgramError  # noqa: E402
from streamkernel.graph.operator_specs import SinkSpec  # noqa: E402
from streamkernel.testing import Fail, Pause, ScriptedSource  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "operator_harness", pathlib.Path(__file__).parents[1] / "runtime" / "operator_harness.py")
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)

ROW = Types.ROW_NAMED(["id", "word", "at", "price", "tags"],
                      [Types.LONG(), Types.STRING(), Types.SQL_TIMESTAMP(), Types.BIG_DEC(), Types.LIST(Types.INT())])


def record(i: int) -> Row:
    return Row(id=i, word=f"w{i}", at=datetime.datetime(2024, 1, 1, 0, 0, i % 60),
               price=decimal.Decimal(i) / 4, tags=[i, i + 1])


@pytest.fixture(scope="module")
def spark() -> Any:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("streamkernel-connector-tests")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC").config("spark.pyspark.python", sys.executable)
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    assert session.sparkContext.statusTracker().getActiveJobsIds() == []
    session.stop()


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Any:
    before = {t.ident for t in threading.enumerate()}
    yield
    leftover = [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()
                and not t.daemon]
    assert leftover == [], f"threads left running: {leftover}"


def parquet_sink(path: pathlib.Path) -> FileSink:
    return (FileSink.for_bulk_format(str(path), ParquetBulkWriters.for_row_type(ROW))
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_output_file_config(OutputFileConfig.builder().with_part_suffix(".parquet").build()).build())


def spark_ids(spark: Any, path: pathlib.Path) -> list[int]:
    return sorted(r.id for r in spark.read.parquet(str(path)).select("id").collect())


# ------------------------------------------------------------------ the sink, read by Spark
def test_spark_reads_only_committed_part_files_while_the_sink_runs(spark: Any, tmp_path: pathlib.Path) -> None:
    h = harness.OperatorHarness(SinkSpec(sink=parquet_sink(tmp_path)), name="Sink: parquet",
                                configuration={"execution.checkpointing.interval": "1 s"})
    h.process([record(i) for i in range(10)])
    h.operator.snapshot_state(1)
    h.operator.notify_checkpoint_complete(1)  # part-<uuid>-0 committed
    h.process([record(i) for i in range(10, 15)])
    h.operator.snapshot_state(2)  # part 1 complete but pending: its checkpoint has not completed
    h.process([record(i) for i in range(15, 18)])  # in progress
    uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    names = sorted(os.listdir(tmp_path))  # Flink 2.x names: part-<bucket uuid>-<counter>.parquet
    assert [re.sub(uuid, "U", name) for name in names] == [".part-U-1.parquet.inprogress.U",
                                                           ".part-U-2.parquet.inprogress.U", "part-U-0.parquet"]
    assert spark_ids(spark, tmp_path) == list(range(10))
    h.operator.notify_checkpoint_complete(2)
    assert spark_ids(spark, tmp_path) == list(range(15))
    h.finish().close()
    assert spark_ids(spark, tmp_path) == list(range(18))


def test_after_a_job_with_failures_spark_reads_exactly_the_failure_free_output(
        spark: Any, tmp_path: pathlib.Path) -> None:
    ids = list(range(600))
    script = [*ids[:200], Pause(250), Fail("crash"), *ids[200:400], Pause(250), Fail("again"), *ids[400:]]
    paced: list = []
    for x in script:
        paced.append(x)
        if isinstance(x, int) and x % 40 == 39:
            paced.append(Pause(15))  # let checkpoints happen between records
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "10",
        "restart-strategy.fixed-delay.delay": "20 ms"}))
    env.enable_checkpointing(50)
    env.set_parallelism(2)
    (env.from_source(ScriptedSource(paced), WatermarkStrategy.no_watermarks(), "ids").uid("ids")
        .map(record, output_type=ROW).uid("rows")
        .sink_to(parquet_sink(tmp_path / "out")).uid("parquet"))
    assert env.execute("parquet for spark").get_num_restarts() == 2
    frame = spark.read.parquet(str(tmp_path / "out"))
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
        ("id", "bigint"), ("word", "string"), ("at", "timestamp_ntz"), ("price", "decimal(38,18)"),
        ("tags", "array<int>")]
    rows = sorted(frame.collect(), key=lambda r: r.id)
    assert [r.id for r in rows] == ids
    assert rows[7].asDict() == record(7).as_dict()


# ------------------------------------------------------------------ the DataFrame source
def data_frame(spark: Any, n: int = 1000, partitions: int = 4) -> Any:
    rows = [(i, f"n{i}", i * 0.5, datetime.date(2024, 1, 1 + i % 28), [i % 3], {"k": i}, (i, f"s{i}"),
             decimal.Decimal(i) / 100) for i in range(n)]
    schema = ("id long, name string, score double, day date, small array<int>, m map<string,int>, "
              "st struct<a:int,b:string>, amount decimal(10,2)")
    return spark.createDataFrame(rows, schema).repartition(partitions)


@pytest.mark.parametrize("parallelism", [2, 3])
def test_a_dataframe_source_job_reads_every_row_exactly_once(
        spark: Any, tmp_path: pathlib.Path, parallelism: int) -> None:
    df = data_frame(spark)
    source = SparkDataFrameSource(df, staging_path=str(tmp_path / "staged"))
    assert source.row_type.get_field_names() == df.columns
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "frame")
    assert ds.get_type() == source.row_type
    with ds.execute_and_collect(f"dataframe at {parallelism}") as results:
        got = list(results)
    assert sorted(r.id for r in got) == list(range(1000))
    expected = {r.id: r.asDict(recursive=True) for r in df.collect()}
    for row in got:
        as_dict = row.as_dict(recursive=True)
        assert as_dict == expected[row.id]


def test_dataframe_types_become_types(spark: Any) -> None:
    source = SparkDataFrameSource(data_frame(spark, n=3, partitions=1))
    try:
        assert source.row_type == Types.ROW_NAMED(
            ["id", "name", "score", "day", "small", "m", "st", "amount"],
            [Types.LONG(), Types.STRING(), Types.DOUBLE(), Types.SQL_DATE(), Types.LIST(Types.INT()),
             Types.MAP(Types.STRING(), Types.INT()), Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()]),
             Types.BIG_DEC()])
        assert os.path.isdir(source.staging_path)
    finally:
        source.cleanup()
    assert not os.path.exists(source.staging_path)


def test_spark_timestamps_arrive_as_collect_gives_them(spark: Any) -> None:
    df = spark.sql("SELECT 1 AS id, TIMESTAMP'2024-05-01 12:30:00' AS at")
    source = SparkDataFrameSource(df)
    try:
        env = StreamExecutionEnvironment.get_execution_environment()
        with env.from_source(source, WatermarkStrategy.no_watermarks(), "ts").execute_and_collect() as results:
            (row,) = list(results)
        assert row.at == df.collect()[0].at  # a naive local-time datetime, INT96 in the staged file
    finally:
        source.cleanup()


def test_unsupported_columns_and_an_existing_staging_path_are_refused(spark: Any, tmp_path: pathlib.Path) -> None:
    with pytest.raises(InvalidProgramError, match=r"column 'wait' has Spark type interval day, which has no "
                                                  r"Types.* counterpart.*cast it"):
        SparkDataFrameSource(spark.sql("SELECT 1 AS id, INTERVAL '1' DAY AS wait"))
    (tmp_path / "taken").mkdir()
    with pytest.raises(InvalidProgramError, match="staging_path .*taken' already exists"):
        SparkDataFrameSource(data_frame(spark, n=2), staging_path=str(tmp_path / "taken"))
    with pytest.raises(InvalidProgramError, match="expected a pyspark.sql.DataFrame"):
        SparkDataFrameSource([1, 2, 3])


def test_dataframe_to_parquet_sink_round_trip(spark: Any, tmp_path: pathlib.Path) -> None:
    """A DataFrame through a streamkernel job into a Parquet directory Spark reads back unchanged."""
    df = spark.createDataFrame([(i, f"w{i}", datetime.datetime(2024, 1, 1, 0, 0, i % 60), decimal.Decimal(i) / 4,
                                 [i, i + 1]) for i in range(200)],
                               "id long, word string, at timestamp_ntz, price decimal(38,18), tags array<int>")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    source = SparkDataFrameSource(df, staging_path=str(tmp_path / "staged"))
    env.from_source(source, WatermarkStrategy.no_watermarks(), "frame").sink_to(parquet_sink(tmp_path / "out"))
    env.execute("round trip")
    back = spark.read.parquet(str(tmp_path / "out"))
    assert back.count() == 200 and back.exceptAll(df).count() == 0 and df.exceptAll(back).count() == 0


def test_a_dataframe_source_read_by_taskmanagers_hosted_on_spark(spark: Any) -> None:
    """The staged splits are read inside Spark tasks (the spark backend), which have no SparkSession."""
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    source = SparkDataFrameSource(spark.range(0, 3000).selectExpr("id", "cast(id AS string) AS s").repartition(3))
    try:
        with MiniCluster(1, 3, backend="spark", spark_session=spark):
            env = StreamExecutionEnvironment.get_execution_environment()
            env.set_parallelism(3)
            ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "frame")
            with ds.map(lambda row: (row.id, row.s)).execute_and_collect("dataframe on spark") as results:
                got = list(results)
    finally:
        source.cleanup()
    assert sorted(got) == [(i, str(i)) for i in range(3000)]
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == []  # the TaskManagers' Spark job ended


def test_an_environment_configured_for_spark_runs_on_the_notebooks_session_and_leaves_it_running(spark: Any) -> None:
    """``streamkernel.backend: spark`` in the environment's configuration: the job's transient
    cluster hosts its TaskManagers on the SparkSession already running (it is not stopped)."""
    from streamkernel.common import Configuration

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration.from_dict({"streamkernel.backend": "spark"}))
    env.set_parallelism(2)
    pids = (env.from_collection(list(range(40))).rebalance()
            .map(lambda x: __import__("os").getpid()).execute_and_collect("configured for spark", limit=40))
    assert os.getpid() not in pids and len(set(pids)) == 1  # one TaskManager with 2 slots, in a Spark worker
    import time

    deadline = time.monotonic() + 30  # the transient cluster stops (its Spark job ends) just after the job
    while spark.sparkContext.statusTracker().getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == []
    assert spark.sparkContext._jsc is not None and spark.range(3).count() == 3  # the session still runs
