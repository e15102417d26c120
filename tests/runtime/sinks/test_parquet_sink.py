"""The bulk-format FileSink: Parquet (and CSV) part files, rolled at checkpoints, committed exactly once.

As in ``test_exactly_once_sinks``: the harness plays the Task (write, snapshot = a
checkpoint, notify = it completed, close without finishing = a failure, restore from the
last completed checkpoint while the sources replay what followed it). The committed
Parquet files, read by pyarrow (which, like Spark, skips files starting with ``.`` or
``_``), must hold exactly the rows of a run without failures; end-to-end jobs check the
same through the JobMaster's restarts.
"""

from __future__ import annotations

import pathlib
import random
import re
from typing import Any, Callable, Optional

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common import Configuration, Types, WatermarkStrategy
from streamkernel.common.serialization import BulkWriter, BulkWriterFactory
from streamkernel.common.types import Row
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import BucketAssigner, FileSink, FileSource, OutputFileConfig
from streamkernel.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
from streamkernel.datastream.formats.parquet import ParquetBulkWriters, ParquetColumnarRowInputFormat
from streamkernel.errors import UserFunctionError
from streamkernel.graph.operator_specs import SinkSpec, SourceSpec
from streamkernel.testing import Fail, Pause, ScriptedSource

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


CHECKPOINTING = {"execution.checkpointing.interval": "1 s"}
ROW = Types.ROW_NAMED(["id", "word"], [Types.LONG(), Types.STRING()])
RECORDS = [Row(id=i, word=f"w{i}") for i in range(40)]


def parquet_sink(path: pathlib.Path, row_type: Any = ROW) -> FileSink:
    return (FileSink.for_bulk_format(str(path), ParquetBulkWriters.for_row_type(row_type))
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_output_file_config(OutputFileConfig.builder().with_part_suffix(".parquet").build()).build())


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def first_committed_file(path: pathlib.Path) -> pathlib.Path:
    """The committed part file 0 directly under ``path`` (one bucket), named as Flink 2.x names it."""
    [file] = [f for f in path.iterdir() if re.fullmatch(rf"part-{UUID}-0(\.parquet)?", f.name)]
    return file


def sink_harness(sink: Any, **kwargs: Any) -> Any:
    return harness.OperatorHarness(SinkSpec(sink=sink), name="Sink: parquet", **kwargs)


def committed(path: pathlib.Path) -> list[tuple]:
    """(id, word) of every committed row, as pyarrow reads the directory (hidden files skipped)."""
    if not any(f.is_file() and not f.name.startswith((".", "_")) for f in path.rglob("*")):
        return []
    table = pq.read_table(str(path))
    return sorted(zip(table.column("id").to_pylist(), table.column("word").to_pylist()))


def hidden(path: pathlib.Path) -> list[str]:
    return sorted(f.name for f in path.rglob(".*") if f.is_file())


def as_pairs(rows: list) -> list[tuple]:
    return sorted((r[0], r[1]) for r in rows)


# ------------------------------------------------------------------ the protocol
def test_part_files_roll_at_every_checkpoint_and_appear_when_it_completes(tmp_path: pathlib.Path) -> None:
    h = sink_harness(parquet_sink(tmp_path), configuration=CHECKPOINTING)
    h.process(RECORDS[:10])
    [in_progress] = hidden(tmp_path)
    assert re.fullmatch(rf"\.part-{UUID}-0\.parquet\.inprogress\.{UUID}", in_progress) and committed(tmp_path) == []
    h.operator.snapshot_state(1)  # rolled: complete, pending
    h.process(RECORDS[10:15])
    assert committed(tmp_path) == []
    h.operator.notify_checkpoint_complete(1)
    assert committed(tmp_path) == as_pairs(RECORDS[:10])
    assert pq.ParquetFile(str(first_committed_file(tmp_path))).metadata.num_rows == 10
    h.operator.snapshot_state(2)
    h.operator.snapshot_state(3)  # nothing written in between: no empty part file
    h.operator.notify_checkpoint_complete(3)
    assert committed(tmp_path) == as_pairs(RECORDS[:15])
    [uid] = {re.sub(r"-\d+\.parquet$", "", f.name) for f in tmp_path.iterdir()}  # one bucket: part-<uuid>
    assert sorted(f.name for f in tmp_path.iterdir()) == [f"{uid}-0.parquet", f"{uid}-1.parquet"]
    h.finish().close()
    assert hidden(tmp_path) == []


def test_a_bulk_checkpoint_holds_no_in_progress_file(tmp_path: pathlib.Path) -> None:
    h = sink_harness(parquet_sink(tmp_path), configuration=CHECKPOINTING)
    h.process(RECORDS[:3])
    state = h.operator.snapshot_state(1)["writer"]
    assert state["in_progress"] == [] and len(state["pending"]) == 1


def test_restore_commits_what_the_checkpoint_had_and_removes_what_followed(tmp_path: pathlib.Path) -> None:
    sink = parquet_sink(tmp_path)
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(RECORDS[:8])
    state = h.operator.snapshot_state(1)  # completes, but the notification is lost
    h.process(RECORDS[8:12])
    h.operator.snapshot_state(2)  # never completes
    h.process(RECORDS[12:14])
    h.close()  # the task fails
    assert committed(tmp_path) == [] and len(hidden(tmp_path)) == 3
    restored = sink_harness(sink, configuration=CHECKPOINTING, restored_state=state)
    assert committed(tmp_path) == as_pairs(RECORDS[:8]) and hidden(tmp_path) == []
    restored.process(RECORDS[8:20]).finish().close()
    assert committed(tmp_path) == as_pairs(RECORDS[:20])


def test_restored_at_another_parallelism_every_old_subtask_is_recovered(tmp_path: pathlib.Path) -> None:
    sink = parquet_sink(tmp_path)
    shares = [RECORDS[0::2], RECORDS[1::2]]
    old = [sink_harness(sink, configuration=CHECKPOINTING, subtask_index=i, parallelism=2) for i in range(2)]
    old[0].process(shares[0][:5])
    old[1].process(shares[1][:3])
    states = [h.operator.snapshot_state(1) for h in old]
    old[0].process(shares[0][5:9])  # lost
    for h in old:
        h.close()
    rest = shares[0][5:] + shares[1][3:]
    new = [sink_harness(sink, configuration=CHECKPOINTING, subtask_index=i, parallelism=3,
                        restored_state={"raw_all": states}) for i in range(3)]
    for i, h in enumerate(new):
        h.process(rest[i::3]).finish().close()
    assert committed(tmp_path) == as_pairs(RECORDS) and hidden(tmp_path) == []


class Run:
    """One sink subtask through checkpoints, lost notifications and failures (random, seeded)."""

    def __init__(self, make: Callable[[Optional[dict]], Any], seed: int, failures: int = 4) -> None:
        self.make, self.rng, self.failures = make, random.Random(seed), failures

    def play(self, records: list) -> None:
        rng, checkpoint_id = self.rng, 0
        completed: tuple[int, Optional[dict]] = (0, None)
        while True:
            position, state = completed
            h = self.make(state)
            failed = False
            while position < len(records):
                n = rng.randint(1, 6)
                h.process(records[position:position + n])
                position += n
                roll = rng.random()
                if roll < 0.3:
                    checkpoint_id += 1
                    snapshot = h.operator.snapshot_state(checkpoint_id)
                    if rng.random() < 0.8:
                        completed = (position, snapshot)
                        if rng.random() < 0.7:
                            h.operator.notify_checkpoint_complete(checkpoint_id)
                elif roll < 0.4 and self.failures:
                    failed = True
                    break
            if not failed:
                h.finish()
                if self.failures and completed[1] is not None and rng.random() < 0.3:
                    failed = True  # the job fails after this subtask finished: restored before its end
            h.close()
            if not failed:
                return
            self.failures -= 1


@pytest.mark.parametrize("seed", range(8))
def test_committed_rows_equal_a_run_without_failures(tmp_path: pathlib.Path, seed: int) -> None:
    sink = parquet_sink(tmp_path)
    Run(lambda state: sink_harness(sink, configuration=CHECKPOINTING, restored_state=state), seed).play(RECORDS)
    assert committed(tmp_path) == as_pairs(RECORDS)


# ------------------------------------------------------------------ records and types
def test_rows_tuples_and_dicts_are_written_by_field(tmp_path: pathlib.Path) -> None:
    h = sink_harness(parquet_sink(tmp_path))
    h.process([Row(id=1, word="a"), (2, "b"), {"word": "c", "id": 3}, Row(word="d", id=4), Row(5, "e")])
    h.finish().close()
    assert committed(tmp_path) == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]


def test_a_record_that_does_not_fit_names_the_record_and_the_column(tmp_path: pathlib.Path) -> None:
    h = sink_harness(parquet_sink(tmp_path))
    with pytest.raises(UserFunctionError, match=r"record .*'oops'.*column 'id' \(Long, Parquet int64\) cannot hold "
                                                r"'oops'"):
        h.process([(1, "a"), ("oops", "b")])
    with pytest.raises(UserFunctionError, match=r"3 values for the 2 fields \['id', 'word'\]"):
        h.process([(1, "a", "surplus")])
    with pytest.raises(UserFunctionError, match="the dict has no key 'word'"):
        h.process([{"id": 1}])
    h.close()


def test_every_column_type_round_trips_through_the_source(tmp_path: pathlib.Path) -> None:
    import datetime
    import decimal

    from streamkernel.common.time import Instant

    row_type = Types.ROW_NAMED(
        ["b", "s", "i", "f", "ok", "dec", "big", "day", "at", "when", "instant", "raw", "tags", "m", "nested"],
        [Types.BYTE(), Types.SHORT(), Types.INT(), Types.FLOAT(), Types.BOOLEAN(), Types.BIG_DEC(), Types.BIG_INT(),
         Types.SQL_DATE(), Types.SQL_TIME(), Types.SQL_TIMESTAMP(), Types.INSTANT(),
         Types.PRIMITIVE_ARRAY(Types.BYTE()),
         Types.LIST(Types.LONG()), Types.MAP(Types.STRING(), Types.DOUBLE()),
         Types.ROW_NAMED(["x", "when"], [Types.INT(), Types.SQL_TIMESTAMP()])])
    when = datetime.datetime(2024, 3, 1, 12, 0, 0, 123456)
    row = Row(b=1, s=2, i=3, f=0.5, ok=True, dec=decimal.Decimal("1.25"), big=10**20, day=datetime.date(2024, 3, 1),
              at=datetime.time(12, 30), when=when, instant=Instant(1700000000, 5000), raw=b"\x01",
              tags=[1, None], m={"k": 1.5}, nested=Row(x=7, when=when))
    empty = Row(b=None, s=None, i=None, f=None, ok=None, dec=None, big=None, day=None, at=None, when=None,
                instant=None, raw=None, tags=None, m=None, nested=None)
    h = sink_harness(parquet_sink(tmp_path, row_type))
    h.process([row, empty]).finish().close()
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), str(tmp_path)).build()
    reader = harness.OperatorHarness(SourceSpec(source=source, watermark_strategy=None),
                                     name="Source: back")
    while reader.operator.emit_next(10):
        pass
    got = reader.output.values
    assert got[0] == row and got[1] == empty


# ------------------------------------------------------------------ CSV and custom bulk writers
def test_csv_bulk_writer_round_trips_through_the_csv_source(tmp_path: pathlib.Path) -> None:
    schema = (CsvSchema.builder().add_number_column("id", Types.INT()).add_string_column("name")
              .add_array_column("tags", "|", Types.INT()).add_boolean_column("ok").set_use_header().build())
    rows = [Row(id=1, name='a, "quoted"', tags=[1, 2], ok=True), Row(id=2, name="b", tags=[], ok=False),
            Row(id=None, name="", tags=None, ok=None)]
    h = sink_harness(FileSink.for_bulk_format(str(tmp_path), CsvBulkWriters.for_schema(schema))
                     .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build(),
                     configuration=CHECKPOINTING)
    h.process(rows[:2])
    h.operator.snapshot_state(1)
    h.operator.notify_checkpoint_complete(1)
    h.process(rows[2:]).finish().close()
    assert first_committed_file(tmp_path).read_text().splitlines() == ["id,name,tags,ok", '1,"a, ""quoted""",1|2,true',
                                                                 "2,b,,false"]
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), str(tmp_path)).build()
    reader = harness.OperatorHarness(SourceSpec(source=source, watermark_strategy=None),
                                     name="Source: csv")
    while reader.operator.emit_next(10):
        pass
    assert reader.output.values == [rows[0], Row(id=2, name="b", tags=None, ok=False), rows[2]]


def test_a_bulk_writer_factory_of_your_own(tmp_path: pathlib.Path) -> None:
    class Upper(BulkWriter):
        def __init__(self, stream: Any) -> None:
            self.stream = stream

        def add_element(self, element: Any) -> None:
            self.stream.write(str(element).upper().encode() + b"\n")

        def finish(self) -> None:
            self.stream.write(b"END\n")

    class UpperFactory(BulkWriterFactory):
        def create(self, stream: Any) -> BulkWriter:
            return Upper(stream)

    h = sink_harness(FileSink.for_bulk_format(str(tmp_path), UpperFactory())
                     .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
    h.process(["a", "b"]).finish().close()
    assert first_committed_file(tmp_path).read_text() == "A\nB\nEND\n"


# ------------------------------------------------------------------ end to end
def paced(records: list, chunk: int = 40, pause_ms: int = 15) -> list:
    script: list = []
    for i in range(0, len(records), chunk):
        script += records[i:i + chunk] + [Pause(pause_ms)]
    return script


def test_a_parquet_sink_job_with_failures_commits_exactly_the_failure_free_output(tmp_path: pathlib.Path) -> None:
    records = [(i, f"w{i}") for i in range(900)]
    third = len(records) // 3
    script = (paced(records[:third]) + [Pause(250), Fail("first crash")] + paced(records[third:2 * third])
              + [Pause(250), Fail("second crash")] + paced(records[2 * third:]))
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "10",
        "restart-strategy.fixed-delay.delay": "20 ms"}))
    env.enable_checkpointing(50)
    env.set_parallelism(2)
    (env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), "rows").uid("rows")
        .map(lambda t: Row(id=t[0], word=t[1].upper()), output_type=ROW).uid("upper")
        .sink_to(parquet_sink(tmp_path / "out")).uid("parquet"))
    result = env.execute("exactly-once parquet")
    assert result.get_num_restarts() == 2
    expected = sorted((i, w.upper()) for i, w in records)
    assert committed(tmp_path / "out") == expected
    assert len(list((tmp_path / "out").glob("part-*.parquet"))) > 4  # rolled at checkpoints
    # and read back with the Parquet source, at another parallelism
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW), str(tmp_path / "out")).build()
    with env.from_source(source, WatermarkStrategy.no_watermarks(), "back").execute_and_collect() as results:
        assert sorted((r.id, r.word) for r in results) == expected


def test_without_checkpointing_a_bounded_job_commits_at_its_end(tmp_path: pathlib.Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([(i, f"w{i}") for i in range(100)]).sink_to(parquet_sink(tmp_path / "out"))
    env.execute("bounded parquet")
    assert committed(tmp_path / "out") == [(i, f"w{i}") for i in range(100)]
    assert hidden(tmp_path / "out") == []


def _child_pids() -> set[int]:
    """Live child processes of this process (Linux /proc)."""
    import os

    children = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                children.add(int(entry))
    return children


@pytest.mark.skipif(not pathlib.Path("/proc").is_dir(), reason="lists child processes through /proc")
def test_parquet_source_and_sink_run_in_taskmanager_processes(tmp_path: pathlib.Path) -> None:
    """The formats are plan data: shipped to TaskManager child processes, which read and write with pyarrow."""
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    (tmp_path / "in").mkdir()
    for f in range(3):
        pq.write_table(pa.table({"id": pa.array(range(f * 1000, f * 1000 + 300), pa.int64()),
                                 "word": [f"w{i}" for i in range(300)]}), tmp_path / "in" / f"{f}.parquet",
                       row_group_size=64)
    before = _child_pids()
    with MiniCluster(2, 2, backend="process"):
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
            "execution.checkpointing.dir": str(tmp_path / "checkpoints")}))
        env.enable_checkpointing(100)
        env.set_parallelism(3)
        source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW), str(tmp_path / "in")).build()
        env.from_source(source, WatermarkStrategy.no_watermarks(), "rows").sink_to(parquet_sink(tmp_path / "out"))
        env.execute("parquet on processes")
    assert committed(tmp_path / "out") == sorted((f * 1000 + i, f"w{i}") for f in range(3) for i in range(300))
    from streamkernel.testing import wait_until

    wait_until(lambda: _child_pids() <= before, message="every TaskManager process to end (none left behind)")
