"""Reading Parquet and CSV directories with a FileSource: splits, Rows, types, errors, rescaling.

Parquet files are written here with pyarrow (several row groups each); each row group is
a split. Restores use the operator harness as ``test_source_rescaling`` does: read part
of the splits at one parallelism, snapshot, drop what came after (replayed), restore at
another parallelism; what was read before plus after must be every row exactly once.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import pathlib
from typing import Any, Optional

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common import Types, WatermarkStrategy
from streamkernel.common.time import Duration, Instant
from streamkernel.common.types import Row
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSource
from streamkernel.datastream.formats.csv import CsvReaderFormat, CsvSchema
from streamkernel.datastream.formats.parquet import ParquetColumnarRowInputFormat
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.operator_specs import SourceSpec

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


BATCH = 4
ROW = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])


def write_parquet(directory: pathlib.Path, files: int = 3, rows: int = 25, group: int = 10) -> list[Row]:
    """``files`` files of ``rows`` rows in row groups of ``group``; the rows as the source reads them."""
    directory.mkdir(parents=True, exist_ok=True)
    expected = []
    for f in range(files):
        ids = list(range(f * 1000, f * 1000 + rows))
        table = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
                          "extra": pa.array([i * 0.5 for i in ids])})
        pq.write_table(table, directory / f"part-{f}.parquet", row_group_size=group)
        expected += [Row(id=i, name=f"n{i}") for i in ids]
    (directory / "_SUCCESS").write_text("")  # hidden files are skipped
    (directory / ".part-9.parquet.crc").write_text("not parquet")
    return expected


def parquet_source(directory: pathlib.Path, row_type: Any = ROW, **kwargs: Any) -> FileSource:
    return FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type, **kwargs), str(directory)).build()


def subtask(source: Any, index: int = 0, parallelism: int = 1, restored: Optional[dict] = None) -> Any:
    spec = SourceSpec(source=source, watermark_strategy=None)
    return harness.OperatorHarness(spec, name="Source: files", subtask_index=index, parallelism=parallelism,
                                   restored_state=restored)


def read(h: Any, batches: int) -> list:
    before = len(h.output.values)
    for _ in range(batches):
        if not h.operator.emit_next(BATCH):
            break
    return h.output.values[before:]


def run_to_end(h: Any) -> list:
    before = len(h.output.values)
    for _ in range(10_000):
        if not h.operator.emit_next(BATCH):
            return h.output.values[before:]
    raise AssertionError("source did not finish")


def read_all(source: Any, parallelism: int = 1) -> list:
    return [v for i in range(parallelism) for v in run_to_end(subtask(source, i, parallelism))]


def assert_exactly_once(got: list, expected: list) -> None:
    counts = collections.Counter(map(repr, got))  # by repr: Rows holding lists do not hash
    duplicates = [v for v, n in counts.items() if n > 1]
    missing = [v for v in map(repr, expected) if v not in counts]
    assert not duplicates and not missing, f"duplicates {duplicates[:5]}, missing {missing[:5]}"
    assert len(got) == len(expected)


# ------------------------------------------------------------------ splits and rows
def test_every_row_group_is_a_split_dealt_round_robin(tmp_path: pathlib.Path) -> None:
    expected = write_parquet(tmp_path / "in")  # 3 files x 3 row groups (10, 10, 5 rows)
    source = parquet_source(tmp_path / "in")
    subtasks = [subtask(source, i, 2) for i in range(2)]
    splits = [[split for split, _ in h.operator.snapshot_state(0)["splits"]] for h in subtasks]
    files = [str(tmp_path / "in" / f"part-{f}.parquet") for f in range(3)]
    every = [(path, group) for path in files for group in range(3)]
    assert splits == [every[0::2], every[1::2]]
    got = [v for h in subtasks for v in run_to_end(h)]
    assert_exactly_once(got, expected)
    assert got[0] == Row(id=0, name="n0") and got[0]._fields == ["id", "name"]


def test_rows_follow_the_row_type_whatever_the_column_order(tmp_path: pathlib.Path) -> None:
    write_parquet(tmp_path / "in", files=1, rows=3)
    reordered = Types.ROW_NAMED(["name", "extra"], [Types.STRING(), Types.FLOAT()])
    assert read_all(parquet_source(tmp_path / "in", reordered)) == [
        Row(name=f"n{i}", extra=i * 0.5) for i in range(3)]
    shouted = Types.ROW_NAMED(["ID"], [Types.INT()])
    assert read_all(parquet_source(tmp_path / "in", shouted, is_case_sensitive=False)) == [Row(ID=i) for i in range(3)]


def test_without_a_row_type_every_column_is_read_as_stored(tmp_path: pathlib.Path) -> None:
    write_parquet(tmp_path / "in", files=1, rows=2)
    rows = read_all(parquet_source(tmp_path / "in", None))
    assert rows == [Row(id=0, name="n0", extra=0.0), Row(id=1, name="n1", extra=0.5)]


def test_nested_values_nulls_and_decimals(tmp_path: pathlib.Path) -> None:
    point = pa.struct([("x", pa.int32()), ("y", pa.int32())])
    table = pa.table({
        "tags": pa.array([["a", "b"], None], pa.list_(pa.string())),
        "counts": pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int64())),
        "point": pa.array([{"x": 1, "y": 2}, None], point),
        "price": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(10, 2)),
        "big": pa.array([decimal.Decimal(12345678901234567890), decimal.Decimal(1)], pa.decimal128(38, 0)),
        "day": pa.array([datetime.date(2024, 2, 29), None], pa.date32()),
        "raw": pa.array([b"\x00\x01", b""], pa.binary()),
    })
    (tmp_path / "in").mkdir()
    pq.write_table(table, tmp_path / "in" / "nested.parquet")
    row_type = Types.ROW_NAMED(
        ["tags", "counts", "point", "price", "big", "day", "raw"],
        [Types.LIST(Types.STRING()), Types.MAP(Types.STRING(), Types.LONG()),
         Types.ROW_NAMED(["y", "x"], [Types.INT(), Types.INT()]), Types.BIG_DEC(), Types.BIG_INT(),
         Types.SQL_DATE(), Types.PRIMITIVE_ARRAY(Types.BYTE())])
    first, second = read_all(parquet_source(tmp_path / "in", row_type))
    assert first == Row(tags=["a", "b"], counts={"k": 1}, point=Row(y=2, x=1), price=decimal.Decimal("1.25"),
                        big=12345678901234567890, day=datetime.date(2024, 2, 29), raw=b"\x00\x01")
    assert isinstance(first.big, int)
    assert second == Row(tags=None, counts={}, point=None, price=None, big=1, day=None, raw=b"")


def test_timestamps_instants_become_local_or_utc_wall_clock_times(tmp_path: pathlib.Path) -> None:
    instant = datetime.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=datetime.timezone.utc)
    wall = datetime.datetime(2024, 5, 1, 8, 0)
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"at": pa.array([instant], pa.timestamp("ms", tz="UTC")),
                             "wall": pa.array([wall], pa.timestamp("ns")),
                             "int96": pa.array([instant.replace(tzinfo=None)], pa.timestamp("us"))}),
                   tmp_path / "in" / "t.parquet", use_deprecated_int96_timestamps=False)
    pq.write_table(pa.table({"int96": pa.array([instant.replace(tzinfo=None)], pa.timestamp("us"))}),
                   tmp_path / "int96.parquet", use_deprecated_int96_timestamps=True)  # as Spark writes TIMESTAMP
    ts = Types.SQL_TIMESTAMP()
    local = instant.astimezone().replace(tzinfo=None)
    both = Types.ROW_NAMED(["at", "wall"], [ts, ts])
    assert read_all(parquet_source(tmp_path / "in", both)) == [Row(at=local, wall=wall)]
    assert read_all(parquet_source(tmp_path / "in", both, is_utc_timestamp=True)) == [
        Row(at=instant.replace(tzinfo=None), wall=wall)]
    as_instant = Types.ROW_NAMED(["at"], [Types.INSTANT()])
    assert read_all(parquet_source(tmp_path / "in", as_instant)) == [Row(at=Instant(1714566615, 250_000_000))]
    spark_like = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(Types.ROW_NAMED(["int96"], [ts])),
                                                 str(tmp_path / "int96.parquet")).build()
    assert read_all(spark_like) == [Row(int96=local)]  # INT96 holds an instant


def test_a_file_without_rows_yields_nothing(tmp_path: pathlib.Path) -> None:
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"id": pa.array([], pa.int64()), "name": pa.array([], pa.string())}),
                   tmp_path / "in" / "empty.parquet")
    h = subtask(parquet_source(tmp_path / "in"))
    assert run_to_end(h) == []
    assert all(count is None for _, count in h.operator.snapshot_state(1)["splits"])


# ------------------------------------------------------------------ errors
def test_a_missing_directory_is_named(tmp_path: pathlib.Path) -> None:
    with pytest.raises(InvalidProgramError, match=r"FileSource \(source subtask 1/1\): path '.*nowhere' does not"):
        subtask(parquet_source(tmp_path / "nowhere"))


def test_a_missing_column_names_the_file_and_the_column(tmp_path: pathlib.Path) -> None:
    write_parquet(tmp_path / "in", files=1)
    row_type = Types.ROW_NAMED(["id", "email"], [Types.LONG(), Types.STRING()])
    with pytest.raises(InvalidProgramError, match=r"Parquet file '.*part-0.parquet' has no column 'email' \(its "
                                                  r"columns: id, name, extra\)"):
        subtask(parquet_source(tmp_path / "in", row_type))


def test_a_column_of_another_type_names_the_file_the_column_and_both_types(tmp_path: pathlib.Path) -> None:
    write_parquet(tmp_path / "in", files=1)
    row_type = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.INT()])
    with pytest.raises(InvalidProgramError, match=r"part-0.parquet': column 'name' holds string \(String\), but "
                                                  r"the row type declares field 'name' as Integer"):
        subtask(parquet_source(tmp_path / "in", row_type))


def test_an_unsupported_column_type_names_the_file_and_the_column(tmp_path: pathlib.Path) -> None:
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"id": [1], "wait": pa.array([5], pa.duration("s"))}), tmp_path / "in" / "d.parquet")
    with pytest.raises(InvalidProgramError, match=r"d.parquet': column 'wait' has type duration\[s\], which "
                                                  r"streamkernel cannot read"):
        subtask(parquet_source(tmp_path / "in", None))
    # left out of the row type, the file reads
    assert read_all(parquet_source(tmp_path / "in", Types.ROW_NAMED(["id"], [Types.LONG()]))) == [Row(id=1)]


def test_a_file_that_is_not_parquet_is_named(tmp_path: pathlib.Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.txt").write_text("hello")
    with pytest.raises(InvalidProgramError, match=r"cannot read '.*notes.txt' as a Parquet file"):
        subtask(parquet_source(tmp_path / "in"))


# ------------------------------------------------------------------ positions and rescaling
@pytest.mark.parametrize("new_parallelism", [1, 2, 3, 4])
def test_restoring_mid_row_group_at_another_parallelism_reads_every_row_once(
        tmp_path: pathlib.Path, new_parallelism: int) -> None:
    expected = write_parquet(tmp_path / "in")
    source = parquet_source(tmp_path / "in")
    old = [subtask(source, i, 2) for i in range(2)]
    before = read(old[0], 2) + read(old[1], 4)  # mid row group on both
    snapshots = [h.operator.snapshot_state(1) for h in old]
    assert any(count not in (None, 0) for _, count in snapshots[0]["splits"])
    for h in old:
        read(h, 3)  # after the checkpoint: replayed
        h.close()
    after = [v for i in range(new_parallelism)
             for v in run_to_end(subtask(source, i, new_parallelism, {"raw_all": snapshots}))]
    assert_exactly_once(before + after, expected)


def test_restoring_at_the_same_parallelism_continues_each_split(tmp_path: pathlib.Path) -> None:
    expected = write_parquet(tmp_path / "in", files=2)
    source = parquet_source(tmp_path / "in", batch_size=3)
    h = subtask(source)
    before = read(h, 5)
    snapshot = h.operator.snapshot_state(1)
    after = run_to_end(subtask(source, 0, 1, snapshot))
    assert before + after == expected  # in file and row order


def test_monitored_directories_read_new_parquet_files(tmp_path: pathlib.Path) -> None:
    expected = write_parquet(tmp_path / "in", files=1, rows=5)
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW), str(tmp_path / "in")) \
        .monitor_continuously(Duration.of_millis(100)).build()
    assert not source.is_bounded
    h = subtask(source)
    got = read(h, 10)
    pq.write_table(pa.table({"id": pa.array([7], pa.int64()), "name": ["late"]}), tmp_path / "in" / "late.parquet")
    h.advance_time(100)
    got += read(h, 10)
    assert_exactly_once(got, expected + [Row(id=7, name="late")])


def test_a_job_reads_a_parquet_directory_at_parallelism_3(tmp_path: pathlib.Path) -> None:
    expected = write_parquet(tmp_path / "in", files=4, rows=300, group=64)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    ds = env.from_source(parquet_source(tmp_path / "in"), WatermarkStrategy.no_watermarks(), "parquet")
    with ds.map(lambda row: row.id).execute_and_collect("parquet at 3") as results:
        got = list(results)
    assert sorted(got) == sorted(row.id for row in expected)


def test_savepoints_restored_at_parallelism_3_then_1_read_every_parquet_row_once(tmp_path: pathlib.Path) -> None:
    """A paced job over a Parquet directory, stopped with a savepoint mid-file at parallelism 2,
    restored at 3, stopped again, finished at 1: row-group splits and their positions move.
    The first two jobs hold at a closed Gate after 150 rows per subtask, so each is provably
    running (and mid-input) when its savepoint is taken."""
    import time

    from streamkernel.common import Configuration
    from streamkernel.datastream.connectors import PandasSink
    from streamkernel.runtime.minicluster.minicluster import MiniCluster
    from streamkernel.testing import Gate, GatedSource, wait_until

    expected = write_parquet(tmp_path / "in", files=3, rows=400, group=100)
    sink = PandasSink("parquet rescaled")
    sink.clear()

    def slow_id(row: Row) -> int:
        time.sleep(0.0005)
        return row.id

    def run(parallelism: int, savepoint: Optional[str], stop: bool) -> Optional[str]:
        conf = {"execution.checkpointing.dir": str(tmp_path / "checkpoints"), "taskmanager.network.batch-size": "16"}
        if savepoint is not None:
            conf["execution.state-recovery.path"] = savepoint
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
        env.enable_checkpointing(40)
        env.set_parallelism(parallelism)
        gate = Gate(f"at {parallelism}")
        source = GatedSource(parquet_source(tmp_path / "in"), gate, 150) if stop else parquet_source(tmp_path / "in")
        (env.from_source(source, WatermarkStrategy.no_watermarks(), "rows").uid("rows")
            .map(slow_id).uid("ids").sink_to(sink).uid("frame"))
        if not stop:
            env.execute(f"at {parallelism}")
            return None
        client = env.execute_async(f"at {parallelism}")
        before = len(sink.records())
        # a held subtask keeps the job running; checkpoints commit what was read before the gate
        wait_until(lambda: gate.reached and len(sink.records()) > before + 100,
                   message=f"a subtask held at the gate and 100 more rows committed at parallelism {parallelism}")
        path = client.stop_with_savepoint(savepoint_directory=str(tmp_path / "savepoints")).result(60)
        stopped_at.append(len(sink.records()))
        return path

    stopped_at: list[int] = []
    with MiniCluster(1, 3):
        first = run(2, None, stop=True)
        second = run(3, first, stop=True)
        run(1, second, stop=False)
    assert 0 < stopped_at[0] < stopped_at[1] < len(expected)  # both savepoints were taken mid-input
    assert sorted(sink.records()) == sorted(row.id for row in expected)


# ---------------------------------------------------------------------------- CSV
CSV_SCHEMA = (CsvSchema.builder().add_number_column("id", Types.INT()).add_string_column("name")
              .add_array_column("tags", "|", Types.INT()).add_boolean_column("ok")
              .add_column("day", Types.SQL_DATE()).set_use_header().build())


def write_csv(directory: pathlib.Path, files: int = 3, rows: int = 9) -> list[Row]:
    directory.mkdir(parents=True, exist_ok=True)
    expected = []
    for f in range(files):
        lines = ["id,name,tags,ok,day"]
        for i in range(f * 100, f * 100 + rows):
            lines.append(f'{i},"n, {i}",{i}|{i + 1},{"true" if i % 2 else "false"},2024-01-0{1 + i % 9}')
            expected.append(Row(id=i, name=f"n, {i}", tags=[i, i + 1], ok=bool(i % 2),
                                day=datetime.date(2024, 1, 1 + i % 9)))
        (directory / f"{f}.csv").write_text("\n".join(lines) + "\n")
    return expected


def csv_source(directory: pathlib.Path, schema: CsvSchema = CSV_SCHEMA) -> FileSource:
    return FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), str(directory)).build()


def test_a_csv_directory_is_read_into_typed_rows(tmp_path: pathlib.Path) -> None:
    expected = write_csv(tmp_path / "in")
    got = read_all(csv_source(tmp_path / "in"), parallelism=2)
    assert_exactly_once(got, expected)
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.from_source(csv_source(tmp_path / "in"), None, "csv").get_type() == CSV_SCHEMA.get_type_info()


def test_csv_nulls_quotes_comments_and_short_rows(tmp_path: pathlib.Path) -> None:
    schema = (CsvSchema.builder().add_number_column("n", Types.DOUBLE()).add_string_column("s")
              .add_string_column("t").set_column_separator(";").set_allow_comments().build())
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text('# a comment\n1.5;"multi\nline";x\n;;\n\n2;only\n', encoding="utf-8")
    assert read_all(csv_source(tmp_path / "in", schema)) == [
        Row(n=1.5, s="multi\nline", t="x"), Row(n=None, s="", t=""), Row(n=2.0, s="only", t=None)]


@pytest.mark.parametrize("new_parallelism", [1, 3])
def test_csv_restored_mid_file_at_another_parallelism_reads_every_row_once(
        tmp_path: pathlib.Path, new_parallelism: int) -> None:
    expected = write_csv(tmp_path / "in", files=4)
    source = csv_source(tmp_path / "in")
    old = [subtask(source, i, 2) for i in range(2)]
    before = read(old[0], 1) + read(old[1], 3)
    snapshots = [h.operator.snapshot_state(1) for h in old]
    for h in old:
        read(h, 1)
        h.close()
    after = [v for i in range(new_parallelism)
             for v in run_to_end(subtask(source, i, new_parallelism, {"raw_all": snapshots}))]
    assert_exactly_once(before + after, expected)


def test_csv_errors_name_the_file_the_line_and_the_column(tmp_path: pathlib.Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bad.csv").write_text("id,name,tags,ok,day\n1,a,1,true,2024-01-01\n2,b,x,true,2024-01-01\n")
    with pytest.raises(InvalidProgramError, match=r"CSV file '.*bad.csv', line 3: column 'tags' \(ListTypeInfo"
                                                  r"<Integer>\) cannot hold 'x'"):
        read_all(csv_source(tmp_path / "in"))
    (tmp_path / "in" / "bad.csv").write_text("id,name,tags,ok,day\n1,a,1,true,2024-01-01,extra\n")
    with pytest.raises(InvalidProgramError, match="line 2: 6 fields, but the schema has 5 columns"):
        read_all(csv_source(tmp_path / "in"))
    strict = CsvSchema.builder().add_columns_from(CSV_SCHEMA).set_use_header().set_strict_headers().build()
    (tmp_path / "in" / "bad.csv").write_text("id,title,tags,ok,day\n")
    with pytest.raises(InvalidProgramError, match="line 1: the header .* does not name the schema's columns"):
        read_all(csv_source(tmp_path / "in", strict))
