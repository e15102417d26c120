"""MemoryLog (a partitioned topic) and its source: partitions vs source parallelism, idleness, offsets."""

from __future__ import annotations

import pickle
import threading

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.watermark_strategy import MAX_WATERMARK, WatermarkStrategy
from streamkernel.datastream.connectors import MemoryLog, MemoryLogSource, PandasSink
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.operator_specs import SourceSpec
from streamkernel.runtime.sources import create_reader
from streamkernel.testing import wait_until


def filled_log(partitions: int = 3, per_partition: int = 4) -> MemoryLog:
    log = MemoryLog("topic", partitions)
    for p in range(partitions):
        for i in range(per_partition):
            log.append(f"p{p}-{i}", partition=p)
    return log


def drain(reader, max_records: int = 3) -> list:
    out = []
    for _ in range(1000):
        batch = reader.read_batch(max_records)
        if batch is None:
            return out
        out.extend(batch[0])
    raise AssertionError("bounded reader did not finish")


# -------------------------------------------------------------------- the log
def test_same_key_same_partition_and_round_robin_without_key() -> None:
    log = MemoryLog("t", 4)
    partitions_of_k = {log.append(i, key="user-7")[0] for i in range(10)}
    assert len(partitions_of_k) == 1
    round_robin = [log.append("x")[0] for _ in range(8)]
    assert sorted(round_robin) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert log.append("y", partition=2) == (2, len(log.partition(2)) - 1)


def test_key_to_partition_is_deterministic_across_logs() -> None:
    a, b = MemoryLog("a", 5), MemoryLog("b", 5)
    assert [a.append(0, key=f"k{i}")[0] for i in range(20)] == [b.append(0, key=f"k{i}")[0] for i in range(20)]


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(InvalidProgramError, match="partitions"):
        MemoryLog("t", 0)
    with pytest.raises(InvalidProgramError, match="partition must be"):
        MemoryLog("t", 2).append(1, partition=2)
    with pytest.raises(InvalidProgramError, match="MemoryLog"):
        MemoryLogSource("not a log")


def test_concurrent_appends_lose_nothing() -> None:
    log = MemoryLog("t", 3)
    threads = [threading.Thread(target=lambda: [log.append(i) for i in range(2000)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(log) == 8000
    assert log.end_offsets() == [sum(1 for _ in log.partition(p)) for p in range(3)]


def test_pickled_log_is_the_live_log_in_the_same_process() -> None:
    log = filled_log()
    assert pickle.loads(pickle.dumps(log)) is log
    source = pickle.loads(pickle.dumps(MemoryLogSource(log)))
    assert source.log is log


# ---------------------------------------------------- partitions vs parallelism
@pytest.mark.parametrize("parallelism", [1, 2, 3, 5])
def test_partition_p_goes_to_subtask_p_mod_parallelism(parallelism: int) -> None:
    log = filled_log(partitions=3)
    source = MemoryLogSource(log, bounded=True)
    everything = []
    for s in range(parallelism):
        reader = create_reader(source, s, parallelism)
        reader.open()
        values = drain(reader)
        assert {v.split("-")[0] for v in values} == {f"p{p}" for p in range(3) if p % parallelism == s}
        for p in {v.split("-")[0] for v in values}:  # offset order within a partition
            assert [v for v in values if v.startswith(p)] == [f"{p}-{i}" for i in range(4)]
        assert reader.is_idle == (s >= 3)
        everything.extend(values)
    assert sorted(everything) == sorted(f"p{p}-{i}" for p in range(3) for i in range(4))


def test_bounded_reader_stops_at_the_end_present_at_open() -> None:
    log = filled_log(partitions=1, per_partition=3)
    reader = create_reader(MemoryLogSource(log, bounded=True), 0, 1)
    reader.open()
    log.append("late", partition=0)
    assert drain(reader) == ["p0-0", "p0-1", "p0-2"]


def test_unbounded_reader_sees_appends_and_latest_start_skips_old_records() -> None:
    log = filled_log(partitions=2, per_partition=2)
    reader = create_reader(MemoryLogSource(log, start_from_earliest=False), 0, 1)
    reader.open()
    assert reader.read_batch(10) == ([], None)
    log.append("new", partition=1)
    assert reader.read_batch(10) == (["new"], None)


def test_readable_while_being_written() -> None:
    log = MemoryLog("t", 2)
    reader = create_reader(MemoryLogSource(log), 0, 1)
    reader.open()
    done = threading.Event()

    def write() -> None:
        for i in range(5000):
            log.append(i, partition=i % 2)
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    seen: list = []
    while not (done.is_set() and len(seen) == 5000):
        seen.extend(reader.read_batch(64)[0])
    writer.join()
    assert sorted(seen) == list(range(5000))
    assert [v for v in seen if v % 2 == 0] == list(range(0, 5000, 2))  # each partition in order


def test_offsets_snapshot_and_restore_resume_exactly() -> None:
    log = filled_log(partitions=2, per_partition=5)
    source = MemoryLogSource(log, bounded=True)
    reader = create_reader(source, 0, 1)
    reader.open()
    head = reader.read_batch(3)[0] + reader.read_batch(3)[0]
    position = reader.snapshot_position()
    assert sum(offset for _partition, offset, _stop in position) == 6
    log.append("after-start", partition=0)  # beyond the stop offsets saved in the position
    restored = create_reader(source, 0, 1)
    restored.restore_position(position)
    restored.open()
    assert sorted(head + drain(restored)) == sorted(f"p{p}-{i}" for p in range(2) for i in range(5))


# ----------------------------------------------------------- idle subtasks
def test_extra_source_subtask_marks_its_output_idle_and_finishes_when_bounded() -> None:
    log = filled_log(partitions=2)
    spec = SourceSpec(source=MemoryLogSource(log, bounded=True),
                      watermark_strategy=WatermarkStrategy.for_monotonous_timestamps())
    h = harness.OperatorHarness(spec, subtask_index=3, parallelism=4)
    assert h.output.statuses == [True]  # idle from the start: downstream ignores its watermark
    assert h.operator.emit_next() is False
    assert h.output.events == [("status", True), ("status", False), ("watermark", MAX_WATERMARK)]


def test_extra_source_subtask_of_an_unbounded_log_stays_idle() -> None:
    spec = SourceSpec(source=MemoryLogSource(filled_log(partitions=1)), watermark_strategy=None)
    h = harness.OperatorHarness(spec, subtask_index=1, parallelism=2)
    for _ in range(3):
        assert h.operator.emit_next() is True
    assert h.output.events == [("status", True)]
    assert h.operator.idle_wait_seconds() > 0


def test_memory_log_through_a_job_with_more_subtasks_than_partitions() -> None:
    log = filled_log(partitions=2, per_partition=50)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    sink = PandasSink("log")
    env.from_source(MemoryLogSource(log, bounded=True), WatermarkStrategy.no_watermarks(), "log").sink_to(sink)
    env.execute("memory log")
    assert sorted(sink.records()) == sorted(f"p{p}-{i}" for p in range(2) for i in range(50))


def test_idle_extra_subtask_does_not_hold_back_event_time_windows() -> None:
    """One partition, two source subtasks: the idle one must not stall the window (unbounded job)."""

    from streamkernel.common.time import Time
    from streamkernel.datastream.window import TumblingEventTimeWindows

    log = MemoryLog("clicks", 1)
    for ts in (0, 300, 900, 2500):
        log.append(("k", ts))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    sink = PandasSink("windows")
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e[1])
    env.from_source(MemoryLogSource(log), strategy, "clicks") \
        .map(lambda e: (e[0], 1)).key_by(lambda e: e[0]) \
        .window(TumblingEventTimeWindows.of(Time.seconds(1))) \
        .reduce(lambda a, b: (a[0], a[1] + b[1])).sink_to(sink)
    client = env.execute_async("idle subtask")
    try:
        wait_until(sink.records, message="the window [0, 1000) to fire")
        assert sink.records() == [("k", 3)]  # window [0, 1000) fired although subtask 1 has no partition
    finally:
        client.cancel().result(10)
