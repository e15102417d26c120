"""Source readers (split assignment, positions, rate limits, file monitoring) and the SourceOperator."""

from __future__ import annotations

import pathlib

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.time import Duration
from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK, WatermarkStrategy
from streamkernel.datastream.connectors import (
    CollectionSource,
    DataGeneratorSource,
    FileSource,
    NumberSequenceSource,
    PandasSink,
    StreamFormat,
)
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import InvalidProgramError, UserFunctionError
from streamkernel.graph.operator_specs import SourceSpec
from streamkernel.runtime.core.clock import ManualClock
from streamkernel.runtime.sources import SourceReader, create_reader
from streamkernel.runtime.sources.base import split_range


def drain(reader: SourceReader, max_records: int = 7, limit: int = 10_000) -> list:
    """Everything a bounded reader emits (it must finish)."""
    out: list = []
    for _ in range(limit):
        batch = reader.read_batch(max_records)
        if batch is None:
            return out
        values, timestamps = batch
        assert timestamps is None
        assert len(values) <= max_records
        out.extend(values)
    raise AssertionError("reader did not finish")


def read_all_subtasks(source, parallelism: int, **kwargs) -> list[list]:
    parts = []
    for i in range(parallelism):
        reader = create_reader(source, i, parallelism, **kwargs)
        reader.open()
        parts.append(drain(reader))
        reader.close()
    return parts


def text_file_source(*paths, monitor_ms=None, charset="UTF-8") -> FileSource:
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(charset), *map(str, paths))
    if monitor_ms is not None:
        builder.monitor_continuously(Duration.of_millis(monitor_ms))
    return builder.build()


# ---------------------------------------------------------------- splitting
def test_split_range_covers_range_in_near_equal_contiguous_parts() -> None:
    parts = [split_range(5, 15, i, 4) for i in range(4)]
    assert parts == [(5, 8), (8, 11), (11, 13), (13, 15)]
    assert split_range(0, 2, 2, 3) == (2, 2)  # more subtasks than numbers: an empty part


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_number_sequence_splits_contiguously_without_overlap(parallelism: int) -> None:
    parts = read_all_subtasks(NumberSequenceSource(1, 20), parallelism)
    assert sorted(v for part in parts for v in part) == list(range(1, 21))
    for part in parts:  # each subtask reads one contiguous ascending range
        assert part == list(range(part[0], part[0] + len(part)))


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_bounded_datagen_generates_every_index_once(parallelism: int) -> None:
    parts = read_all_subtasks(DataGeneratorSource(lambda i: f"r{i}", count=17), parallelism)
    assert sorted(v for part in parts for v in part) == sorted(f"r{i}" for i in range(17))


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_unbounded_datagen_interleaves_indexes_by_subtask(parallelism: int) -> None:
    source = DataGeneratorSource(lambda i: i)
    seen = []
    for s in range(parallelism):
        reader = create_reader(source, s, parallelism)
        reader.open()
        values, _ = reader.read_batch(10)
        assert values == [s + k * parallelism for k in range(10)]
        seen.extend(values)
    assert sorted(seen) == list(range(10 * parallelism))


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_collection_is_read_by_subtask_zero_only(parallelism: int) -> None:
    parts = read_all_subtasks(CollectionSource(["a", "b", "c"]), parallelism)
    assert parts[0] == ["a", "b", "c"]
    assert all(part == [] for part in parts[1:])


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_files_are_split_by_sorted_index(tmp_path: pathlib.Path, parallelism: int) -> None:
    for n in range(5):
        (tmp_path / f"f{n}.txt").write_text(f"{n}-a\n{n}-b\n")
    (tmp_path / ".hidden").write_text("never\n")
    parts = read_all_subtasks(text_file_source(tmp_path), parallelism)
    assert sorted(v for part in parts for v in part) == sorted(f"{n}-{x}" for n in range(5) for x in "ab")
    for s, part in enumerate(parts):  # file i goes to subtask i % parallelism
        assert {v.split("-")[0] for v in part} == {str(n) for n in range(5) if n % parallelism == s}


# ---------------------------------------------------------------- positions
@pytest.mark.parametrize("make_source", [
    lambda tmp: NumberSequenceSource(0, 99),
    lambda tmp: CollectionSource(range(50)),
    lambda tmp: DataGeneratorSource(lambda i: i * i, count=60),
])
def test_position_snapshot_and_restore_resume_exactly(make_source, tmp_path) -> None:
    source = make_source(tmp_path)
    full = read_all_subtasks(source, 1)[0]
    reader = create_reader(source, 0, 1)
    reader.open()
    head = reader.read_batch(8)[0] + reader.read_batch(5)[0]
    position = reader.snapshot_position()
    reader.read_batch(5)  # emitted after the checkpoint: replayed on restore
    again = create_reader(source, 0, 1)
    again.restore_position(position)
    again.open()
    assert head + drain(again) == full


def test_unbounded_datagen_position_resumes_on_its_stride() -> None:
    source = DataGeneratorSource(lambda i: i)
    reader = create_reader(source, 1, 3)
    reader.open()
    reader.read_batch(4)
    restored = create_reader(source, 1, 3)
    restored.restore_position(reader.snapshot_position())
    restored.open()
    assert restored.read_batch(3)[0] == [13, 16, 19]


def test_file_position_resumes_inside_a_file_and_skips_finished_files(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"a{i}\n" for i in range(5)))
    (tmp_path / "b.txt").write_text("".join(f"b{i}\n" for i in range(5)))
    source = text_file_source(tmp_path)
    reader = create_reader(source, 0, 1)
    reader.open()
    first = reader.read_batch(5)[0] + reader.read_batch(3)[0]  # all of a, then b0..b2
    position = reader.snapshot_position()
    assert position == [(str(tmp_path / "a.txt"), None), (str(tmp_path / "b.txt"), 3)]  # (path, lines or done)
    reader.close()
    restored = create_reader(source, 0, 1)
    restored.restore_position(position)
    restored.open()
    assert first + drain(restored) == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]


# -------------------------------------------------------------- file format
def test_text_lines_lose_their_terminators_and_use_the_charset(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes("caf\xe9\r\n\nlast".encode("latin-1"))
    assert read_all_subtasks(text_file_source(path, charset="ISO-8859-1"), 1) == [["café", "", "last"]]


def test_static_file_source_with_no_existing_path_fails_clearly(tmp_path: pathlib.Path) -> None:
    reader = create_reader(text_file_source(tmp_path / "missing"), 0, 1)
    with pytest.raises(InvalidProgramError, match="missing.*does not exist"):
        reader.open()


def test_file_monitoring_picks_up_new_files_once(tmp_path: pathlib.Path) -> None:
    clock = ManualClock(0)
    (tmp_path / "1.txt").write_text("one\n")
    reader = create_reader(text_file_source(tmp_path, monitor_ms=1000), 0, 1, now_ms=clock.now_ms)
    reader.open()
    assert reader.read_batch(10) == (["one"], None)
    assert reader.read_batch(10) == ([], None)  # nothing new: wait for the next scan
    assert reader.poll_delay_seconds() == pytest.approx(0.5)  # capped; the scan is 1 s away
    (tmp_path / "2.txt").write_text("two\n")
    assert reader.read_batch(10) == ([], None)  # not before the discovery interval
    clock.advance(1000)
    assert reader.read_batch(10) == (["two"], None)
    clock.advance(1000)
    assert reader.read_batch(10) == ([], None)  # files already read are not read again
    assert reader.snapshot_position() == [(str(tmp_path / "1.txt"), None), (str(tmp_path / "2.txt"), None)]


@pytest.mark.parametrize("parallelism", [2, 3])
def test_monitored_files_go_to_exactly_one_subtask(tmp_path: pathlib.Path, parallelism: int) -> None:
    clock = ManualClock(0)
    readers = [create_reader(text_file_source(tmp_path, monitor_ms=10), s, parallelism, now_ms=clock.now_ms)
               for s in range(parallelism)]
    for reader in readers:
        reader.open()
    seen: list = []
    for n in range(8):
        (tmp_path / f"{n}.txt").write_text(f"{n}\n")
        clock.advance(10)
        for reader in readers:
            seen.extend(reader.read_batch(100)[0])
    assert sorted(seen) == [str(n) for n in range(8)]


# ---------------------------------------------------------------- rate limit
def test_rate_limit_budget_is_shared_by_subtasks_and_follows_the_clock() -> None:
    clock = ManualClock(10_000)
    source = DataGeneratorSource(lambda i: i, count=1000, rate_limiter_strategy=100.0)
    reader = create_reader(source, 0, 2, now_ms=clock.now_ms)  # 50 records/s for this subtask
    reader.open()
    assert reader.read_batch(100)[0] == [0]  # the first record is due at once
    assert reader.read_batch(100) == ([], None)
    assert reader.poll_delay_seconds() == pytest.approx(0.02)  # next one after 1/50 s
    clock.advance(100)
    assert len(reader.read_batch(100)[0]) == 5
    clock.advance(5000)  # a long stall: at most one second of budget is kept
    assert len(reader.read_batch(1000)[0]) == 51


def test_unlimited_datagen_fills_whole_batches() -> None:
    reader = create_reader(DataGeneratorSource(lambda i: i), 0, 1)
    reader.open()
    assert len(reader.read_batch(1024)[0]) == 1024
    assert reader.poll_delay_seconds() == 0.0


# ------------------------------------------------------------------ plug-in
def test_a_source_of_ones_own_plugs_in_with_create_reader() -> None:
    class Countdown(SourceReader):
        def __init__(self, n: int) -> None:
            super().__init__(0, 1)
            self.n = n

        def read_batch(self, max_records):
            if self.n == 0:
                return None
            self.n -= 1
            return [self.n], None

        def snapshot_position(self):
            return self.n

        def restore_position(self, position):
            self.n = position

    class CountdownSource:
        def create_reader(self, subtask_index, parallelism):
            return Countdown(3)

    assert drain(create_reader(CountdownSource(), 0, 1)) == [2, 1, 0]
    with pytest.raises(InvalidProgramError, match="create_reader"):
        create_reader(object(), 0, 1)


# ------------------------------------------------------------ SourceOperator
def source_harness(source, strategy=None, **kwargs):
    return harness.OperatorHarness(SourceSpec(source=source, watermark_strategy=strategy),
                                   name="Source: test", **kwargs)


def run_to_end(h, max_records=4) -> None:
    for _ in range(10_000):
        if not h.operator.emit_next(max_records):
            return
    raise AssertionError("source did not finish")


def test_source_without_strategy_emits_records_without_timestamps_then_max_watermark() -> None:
    h = source_harness(NumberSequenceSource(1, 10))
    run_to_end(h)
    assert h.output.values == list(range(1, 11))
    assert h.output.timestamps == [None] * 10
    assert h.output.watermarks == [MAX_WATERMARK]
    assert h.output.events[-1] == ("watermark", MAX_WATERMARK)
    assert h.metrics.records_out == 10
    assert h.operator.emit_next() is False  # stays finished


def test_source_assigns_timestamps_and_emits_periodic_watermarks() -> None:
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
                .with_timestamp_assigner(lambda v, ts: v * 100))
    h = source_harness(NumberSequenceSource(1, 8), strategy,
                       configuration={"pipeline.auto-watermark-interval": "50 ms"})
    h.operator.emit_next(4)
    assert h.output.records == [(v, v * 100) for v in range(1, 5)]
    assert h.output.watermarks == []  # not before the interval passed
    h.clock.advance(50)
    h.operator.emit_next(4)
    assert h.output.watermarks == [800 - 5 - 1]
    run_to_end(h)
    assert h.output.watermarks == [794, MAX_WATERMARK]


def test_timestamp_assigner_receives_min_watermark_as_record_timestamp() -> None:
    seen = []
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, ts: seen.append(ts) or v)
    run_to_end(source_harness(CollectionSource([1, 2]), strategy))
    assert seen == [MIN_WATERMARK, MIN_WATERMARK]


def test_failing_timestamp_assigner_names_the_record() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v: 10 // v)
    h = source_harness(CollectionSource([5, 0, 1]), strategy)
    with pytest.raises(UserFunctionError, match=r"Source: test.*record 0"):
        h.operator.emit_next()


class Scripted(SourceReader):
    """An unbounded reader emitting whatever the test puts into ``pending``."""

    def __init__(self) -> None:
        super().__init__(0, 1)
        self.pending: list = []

    def read_batch(self, max_records):
        batch, self.pending = self.pending, []
        return batch, None

    def snapshot_position(self):
        return None

    def restore_position(self, position):
        pass


class ScriptedSource:
    def __init__(self) -> None:
        self.reader = Scripted()

    def create_reader(self, subtask_index, parallelism):
        return self.reader


def test_source_marks_itself_idle_after_the_idle_timeout_and_active_on_the_next_record() -> None:
    source = ScriptedSource()
    strategy = (WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v: v)
                .with_idleness(Duration.of_millis(300)))
    h = source_harness(source, strategy)
    source.reader.pending = [1, 2]
    h.operator.emit_next()
    h.clock.advance(200)
    h.operator.emit_next()
    assert h.output.statuses == []
    assert h.operator.idle_wait_seconds() > 0
    h.clock.advance(200)
    h.operator.emit_next()
    assert h.output.statuses == [True]
    source.reader.pending = [3]
    h.operator.emit_next()
    assert h.output.statuses == [True, False]
    assert [e[0] for e in h.output.events[-2:]] == ["status", "records"]  # active again before the record
    assert h.operator.idle_wait_seconds() == 0.0  # records came: poll again at once


def test_source_snapshot_state_restores_through_restored_state() -> None:
    h = source_harness(NumberSequenceSource(0, 9))
    h.operator.emit_next(4)
    state = h.operator.snapshot_state(1)
    assert state == {"splits": [(4, 10)]}  # (next number, end exclusive)
    restored = source_harness(NumberSequenceSource(0, 9), restored_state=state)
    run_to_end(restored)
    assert restored.output.values == list(range(4, 10))


# --------------------------------------------------------- public API, end to end
def test_number_sequence_at_parallelism_three_through_a_job() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    sink = PandasSink("numbers")
    env.from_source(NumberSequenceSource(1, 1000), WatermarkStrategy.no_watermarks(), "numbers") \
        .map(lambda x: x * 2).sink_to(sink)
    env.execute("numbers")
    assert sorted(sink.records()) == [2 * x for x in range(1, 1001)]
