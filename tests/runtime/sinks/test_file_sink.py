"""FileSink (part files, rolling, commit) and CsvSink at runtime."""

from __future__ import annotations

import csv
import datetime
import os
import pathlib
import re

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.serialization import Encoder
from streamkernel.common.types import Row
from streamkernel.datastream.connectors import (
    BucketAssigner,
    CsvSink,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
)
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import InvalidProgramError, UserFunctionError
from streamkernel.graph.operator_specs import SinkSpec

CHECKPOINTING = {"execution.checkpointing.interval": "10 s"}


def sink_harness(sink, **kwargs):
    return harness.OperatorHarness(SinkSpec(sink=sink), name="Sink: files", **kwargs)


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def bucket_uuids(path: pathlib.Path) -> set[str]:
    """The bucket UUIDs in the part file names directly under ``path``."""
    return {m.group(1) for p in path.iterdir() if (m := re.search(rf"-({UUID})-\d+", p.name))}


def files(path: pathlib.Path) -> dict[str, str]:
    """name -> content of every file directly under ``path`` (hidden ones included), written
    with the bucket's UUID as ``U`` and an in-progress file's own UUID as ``X``; all part files
    belong to one bucket."""
    [bucket] = bucket_uuids(path) or {"-"}
    return {re.sub(rf"inprogress\.{UUID}$", "inprogress.X", p.name.replace(bucket, "U")): p.read_text()
            for p in sorted(path.iterdir()) if p.is_file()}


def text_sink(path, **builder):
    b = FileSink.for_row_format(str(path), Encoder.simple_string_encoder())
    if "with_bucket_assigner" not in builder:
        b.with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
    for name, arg in builder.items():
        getattr(b, name)(arg)
    return b.build()


# ------------------------------------------------------------------- FileSink
def test_part_files_are_in_progress_until_the_end_of_input(tmp_path: pathlib.Path) -> None:
    h = sink_harness(text_sink(tmp_path))
    h.process(["a", "b"]).process([1])
    assert list(files(tmp_path)) == [".part-U-0.inprogress.X"]  # hidden while in progress (Flink 2.x names)
    h.finish().close()
    assert files(tmp_path) == {"part-U-0": "a\nb\n1\n"}


def test_simple_string_encoder_writes_javas_text_of_the_declared_type(tmp_path: pathlib.Path) -> None:
    """PyFlink's SimpleStringEncoder writes the Java object's toString: (a,1) for a tuple
    type, +I[a, 1] for a row type; records without a declared type are written with str()."""
    from streamkernel.common.typeinfo import Types

    for name, input_type, expected in [
            ("tuple", Types.TUPLE([Types.STRING(), Types.INT()]), "(a,1)\n"),
            ("row", Types.ROW([Types.STRING(), Types.INT()]), "+I[a, 1]\n"),
            ("none", None, "('a', 1)\n")]:
        spec = SinkSpec(sink=text_sink(tmp_path / name), input_type=input_type)
        harness.OperatorHarness(spec, name="Sink: files").process([("a", 1)]).finish().close()
        assert files(tmp_path / name) == {"part-U-0": expected}, name


def test_each_subtask_writes_part_files_of_its_own_bucket_uuid_with_prefix_and_suffix(
        tmp_path: pathlib.Path) -> None:
    config = OutputFileConfig.builder().with_part_prefix("data").with_part_suffix(".txt").build()
    sink = text_sink(tmp_path, with_output_file_config=config)
    for subtask in (0, 1):
        sink_harness(sink, subtask_index=subtask, parallelism=2).process([f"s{subtask}"]).finish().close()
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert all(re.fullmatch(rf"data-{UUID}-0\.txt", name) for name in written), written
    assert len(bucket_uuids(tmp_path)) == 2 and sorted(written.values()) == ["s0\n", "s1\n"]


def test_rolls_before_a_record_once_larger_than_part_size_and_commits_at_the_end_without_checkpointing(
        tmp_path: pathlib.Path) -> None:
    """As Flink's DefaultRollingPolicy: a part file rolls before a record when it holds more
    than part_size bytes (also inside a batch); without checkpointing rolled files stay pending
    (hidden) until the end of input."""
    sink = text_sink(tmp_path, with_rolling_policy=RollingPolicy.default_rolling_policy(part_size=5))
    h = sink_harness(sink)
    h.process(["aa", "bb", "cc"])  # 3 bytes, then 6 > 5: cc rolls part 0
    h.process(["d"])  # part 1 holds 3 bytes, not more than 5
    assert sorted(files(tmp_path)) == [".part-U-0.inprogress.X", ".part-U-1.inprogress.X"]
    h.finish()
    assert files(tmp_path) == {"part-U-0": "aa\nbb\n", "part-U-1": "cc\nd\n"}


def test_rolls_inactive_and_old_files_on_the_check_timer(tmp_path: pathlib.Path) -> None:
    policy = RollingPolicy.default_rolling_policy(rollover_interval=10_000, inactivity_interval=3_000)
    sink = text_sink(tmp_path, with_rolling_policy=policy, with_bucket_check_interval=1_000)
    h = sink_harness(sink)
    h.process(["x"])
    h.advance_time(2_000)
    assert list(files(tmp_path)) == [".part-U-0.inprogress.X"]
    h.advance_time(1_000)  # 3 s without writes: rolled (pending), the next record opens part 1
    for _ in range(10):  # written every second: only the rollover interval rolls it
        h.process(["y"])
        h.advance_time(1_000)
    h.process(["z"])
    h.finish()
    assert files(tmp_path) == {"part-U-0": "x\n", "part-U-1": "y\n" * 10, "part-U-2": "z\n"}


def test_with_checkpointing_rolled_files_wait_for_the_checkpoint_to_complete(tmp_path: pathlib.Path) -> None:
    sink = text_sink(tmp_path, with_rolling_policy=RollingPolicy.on_checkpoint_rolling_policy())
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(["a"])
    h.operator.snapshot_state(1)  # rolls: pending for checkpoint 1
    h.process(["b"])
    assert sorted(files(tmp_path)) == [".part-U-0.inprogress.X", ".part-U-1.inprogress.X"]
    h.operator.notify_checkpoint_complete(1)
    assert sorted(files(tmp_path)) == [".part-U-1.inprogress.X", "part-U-0"]
    assert files(tmp_path)["part-U-0"] == "a\n"


def test_a_bucket_idle_for_a_checkpoint_is_dropped_and_the_next_record_opens_a_new_uuid(
        tmp_path: pathlib.Path) -> None:
    """Flink's FileWriter drops a bucket with no in-progress and no pending file at a checkpoint."""
    sink = text_sink(tmp_path, with_rolling_policy=RollingPolicy.on_checkpoint_rolling_policy())
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(["a"])
    h.operator.snapshot_state(1)  # rolls part 0
    h.operator.snapshot_state(2)  # the bucket had a pending file: kept
    h.operator.snapshot_state(3)  # nothing in it: dropped
    [first] = bucket_uuids(tmp_path)
    h.process(["b"]).finish()
    names = sorted(p.name for p in tmp_path.iterdir())
    [second] = bucket_uuids(tmp_path) - {first}
    assert names == sorted([f"part-{first}-0", f"part-{second}-0"])


def test_restore_commits_prepared_files_and_truncates_the_in_progress_file(tmp_path: pathlib.Path) -> None:
    sink = text_sink(tmp_path, with_rolling_policy=RollingPolicy.default_rolling_policy(part_size=4))
    h = sink_harness(sink, configuration=CHECKPOINTING)
    h.process(["a1", "a2"])
    h.process(["b1"])  # part 0 holds 6 > 4 bytes: rolled, pending
    state = h.operator.snapshot_state(7)
    h.process(["b2-lost"])  # after the checkpoint: the sources replay it
    h.close()  # the job failed before checkpoint 7 was confirmed
    restored = sink_harness(sink, configuration=CHECKPOINTING, restored_state=state)
    restored.process(["b2"]).finish()
    assert files(tmp_path) == {"part-U-0": "a1\na2\n", "part-U-1": "b1\nb2\n"}


def test_a_sink_run_again_into_the_same_directory_writes_new_part_files(tmp_path: pathlib.Path) -> None:
    sink = text_sink(tmp_path)
    sink_harness(sink).process(["first"]).finish().close()
    sink_harness(sink).process(["second"]).finish().close()  # the same cell run again
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert sorted(written.values()) == ["first\n", "second\n"] and len(bucket_uuids(tmp_path)) == 2
    assert all(re.fullmatch(rf"part-{UUID}-0", name) for name in written), written


def test_custom_encoder_and_its_errors(tmp_path: pathlib.Path) -> None:
    class Pipe(Encoder):
        def encode(self, element, stream):
            stream.write(f"{element[0]}|{element[1]}\n".encode())

    builder = FileSink.for_row_format(str(tmp_path), Pipe())
    h = sink_harness(builder.with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
    h.process([("a", 1), ("b", 2)]).finish()
    assert files(tmp_path) == {"part-U-0": "a|1\nb|2\n"}
    with pytest.raises(UserFunctionError, match=r"record 7"):
        sink_harness(FileSink.for_row_format(str(tmp_path / "bad"), Pipe()).build()).process([("ok", 1), 7])


def test_date_time_buckets_are_sub_directories(tmp_path: pathlib.Path) -> None:
    sink = text_sink(tmp_path, with_bucket_assigner=BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd", "UTC"))
    h = sink_harness(sink, start_ms=86_400_000)  # 1970-01-02 UTC
    h.process(["x"]).finish()
    assert files(tmp_path / "1970-01-02") == {"part-U-0": "x\n"}


def test_the_default_bucket_assigner_is_hourly_in_the_local_time_zone_with_a_uuid_per_bucket(
        tmp_path: pathlib.Path) -> None:
    """Flink's default DateTimeBucketAssigner ("yyyy-MM-dd--HH", local time); each bucket of a
    subtask has its own UUID and counter."""
    sink = FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).build()
    h = sink_harness(sink, start_ms=86_400_000)
    h.process(["x"])
    h.advance_time(3_600_000)  # the next hour: another bucket
    h.process(["y"]).finish()
    hours = [datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d--%H") for t in (86_400, 90_000)]
    assert [files(tmp_path / hour) for hour in hours] == [{"part-U-0": "x\n"}, {"part-U-0": "y\n"}]
    assert bucket_uuids(tmp_path / hours[0]) != bucket_uuids(tmp_path / hours[1])


def test_builder_checks_its_arguments(tmp_path: pathlib.Path) -> None:
    with pytest.raises(InvalidProgramError, match="Encoder"):
        FileSink.for_row_format(str(tmp_path), "not an encoder")
    with pytest.raises(InvalidProgramError, match="path separators"):
        OutputFileConfig("a/b")
    with pytest.raises(InvalidProgramError, match="part_size"):
        RollingPolicy.default_rolling_policy(part_size=0)


def test_file_sink_through_a_job(tmp_path: pathlib.Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(range(100)).map(str).sink_to(text_sink(tmp_path))
    env.execute("files")
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert all(re.fullmatch(rf"part-{UUID}-0", name) for name in written) and len(bucket_uuids(tmp_path)) == 2
    assert sorted(int(line) for text in written.values() for line in text.splitlines()) == list(range(100))


# -------------------------------------------------------------------- CsvSink
def read_csv(path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_csv_sink_writes_a_header_and_tuple_and_row_records(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "out.csv"
    h = sink_harness(CsvSink(str(path), columns=["word", "count"]))
    h.process([("a, b", 1), ("c", 2)])
    assert read_csv(path) == [["word", "count"], ["a, b", "1"], ["c", "2"]]  # visible while running
    h.process([Row("d", 3)]).finish()
    assert read_csv(path)[-1] == ["d", "3"]


def test_csv_sink_dicts_use_the_first_keys_as_header_and_scalars_one_field(tmp_path: pathlib.Path) -> None:
    sink_harness(CsvSink(str(tmp_path / "d.csv"))).process([{"k": "x", "v": 1}, {"v": 2, "k": "y"}]).finish()
    assert read_csv(tmp_path / "d.csv") == [["k", "v"], ["x", "1"], ["y", "2"]]
    sink_harness(CsvSink(str(tmp_path / "s.csv"), delimiter=";")).process([1, "two"]).finish()
    assert read_csv(tmp_path / "s.csv") == [["1"], ["two"]]


def test_csv_sink_at_parallelism_two_is_a_directory_of_files(tmp_path: pathlib.Path) -> None:
    sink = CsvSink(str(tmp_path / "out"))
    for subtask in (0, 1):
        sink_harness(sink, subtask_index=subtask, parallelism=2).process([(subtask,)]).finish()
    assert sorted(os.listdir(tmp_path / "out")) == ["1.csv", "2.csv"]
    assert read_csv(tmp_path / "out" / "2.csv") == [["1"]]


def test_csv_sink_restore_truncates_to_the_checkpoint(tmp_path: pathlib.Path) -> None:
    sink = CsvSink(str(tmp_path / "r.csv"), columns=["n"])
    h = sink_harness(sink)
    h.process([(1,), (2,)])
    state = h.operator.snapshot_state(1)
    h.process([(3,)])
    h.close()
    sink_harness(sink, restored_state=state).process([(30,)]).finish()
    assert read_csv(tmp_path / "r.csv") == [["n"], ["1"], ["2"], ["30"]]


def test_csv_sink_names_a_record_that_does_not_fit(tmp_path: pathlib.Path) -> None:
    with pytest.raises(UserFunctionError, match="CsvSink"):
        sink_harness(CsvSink(str(tmp_path / "x.csv"))).process([(1, 2), 3])
