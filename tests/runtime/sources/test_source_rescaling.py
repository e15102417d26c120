"""Source positions survive a change of parallelism: splits are snapshotted and dealt out again.

Each test reads part of a source at one parallelism, snapshots every subtask (what a
checkpoint stores), throws away what was read after the snapshot (the job failed: those
records are replayed), and restores every new subtask with ``{"raw_all": [...]}`` as
``checkpoint.restore`` hands it over when the parallelism changed. What was read before
the snapshot plus what the new subtasks read must be every record exactly once.
"""

from __future__ import annotations

import collections
import pathlib
from typing import Any, Callable, Optional

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.time import Duration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import (
    CollectionSource,
    DataGeneratorSource,
    FileSource,
    MemoryLog,
    MemoryLogSource,
    NumberSequenceSource,
    PandasSink,
    StreamFormat,
)
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.operator_specs import SourceSpec
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.sources.base import owned_splits
from streamkernel.testing import Gate, GatedSource, ScriptedSource, wait_until

BATCH = 3


def subtask(source: Any, index: int, parallelism: int, restored: Optional[dict] = None) -> Any:
    """A SourceOperator for one subtask, set up, restored and opened as a Task would."""
    spec = SourceSpec(source=source, watermark_strategy=None)
    return harness.OperatorHarness(spec, name="Source: test", subtask_index=index, parallelism=parallelism,
                                   restored_state=restored)


def read(h: Any, batches: int) -> list:
    """What ``batches`` calls of emit_next emit (fewer when the source ends)."""
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


def first_run(source: Any, parallelism: int) -> tuple[list, list]:
    """Read a different amount on each subtask, snapshot all, read a bit more (lost in the failure)."""
    subtasks = [subtask(source, i, parallelism) for i in range(parallelism)]
    before = [v for i, h in enumerate(subtasks) for v in read(h, i + 1)]
    snapshots = [h.operator.snapshot_state(1) for h in subtasks]
    for h in subtasks:
        read(h, 1)  # emitted after the checkpoint: the restored job replays it
        h.close()
    return before, snapshots


def restore_and_finish(source: Any, snapshots: list, parallelism: int) -> list:
    return [v for i in range(parallelism)
            for v in run_to_end(subtask(source, i, parallelism, {"raw_all": snapshots}))]


def assert_exactly_once(got: list, expected: list) -> None:
    counts = collections.Counter(got)
    duplicates = sorted((v for v, n in counts.items() if n > 1), key=repr)
    missing = sorted((v for v in expected if v not in counts), key=repr)
    assert not duplicates and not missing, f"duplicates {duplicates[:10]}, missing {missing[:10]}"
    assert sorted(got, key=repr) == sorted(expected, key=repr)


def text_files(directory: pathlib.Path, files: int = 5, lines: int = 7) -> list:
    directory.mkdir(exist_ok=True)
    for f in range(files):
        (directory / f"{f}.txt").write_text("".join(f"{f}-{i}\n" for i in range(lines)))
    return [f"{f}-{i}" for f in range(files) for i in range(lines)]


def file_source(directory: pathlib.Path, monitor_ms: Optional[int] = None) -> FileSource:
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
    if monitor_ms is not None:
        builder.monitor_continuously(Duration.of_millis(monitor_ms))
    return builder.build()


def memory_log(partitions: int = 5, per_partition: int = 8) -> tuple[MemoryLog, list]:
    log = MemoryLog("topic", partitions)
    for p in range(partitions):
        for i in range(per_partition):
            log.append(f"p{p}-{i}", partition=p)
    return log, [f"p{p}-{i}" for p in range(partitions) for i in range(per_partition)]


Case = Callable[[pathlib.Path], tuple[Any, list]]

BOUNDED: dict[str, Case] = {
    "number sequence": lambda tmp: (NumberSequenceSource(0, 99), list(range(100))),
    "bounded data generator": lambda tmp: (DataGeneratorSource(lambda i: i * 10, count=61),
                                           [i * 10 for i in range(61)]),
    "files": lambda tmp: (file_source(tmp / "in"), text_files(tmp / "in")),
    "memory log": lambda tmp: (lambda log, records: (MemoryLogSource(log, bounded=True), records))(*memory_log()),
}


# ------------------------------------------------------------------ bounded sources
@pytest.mark.parametrize("name", list(BOUNDED))
@pytest.mark.parametrize("new_parallelism", [3, 1, 2])
def test_every_record_exactly_once_after_restoring_at_another_parallelism(
        tmp_path: pathlib.Path, name: str, new_parallelism: int) -> None:
    source, expected = BOUNDED[name](tmp_path)
    before, snapshots = first_run(source, 2)
    assert before, "the first run read something"
    after = (restore_and_finish(source, snapshots, new_parallelism) if new_parallelism != 2 else
             [v for i in range(2) for v in run_to_end(subtask(source, i, 2, snapshots[i]))])
    assert_exactly_once(before + after, expected)


@pytest.mark.parametrize("name", list(BOUNDED))
def test_rescaling_twice_2_to_3_to_1(tmp_path: pathlib.Path, name: str) -> None:
    source, expected = BOUNDED[name](tmp_path)
    before, snapshots = first_run(source, 2)
    middle = [subtask(source, i, 3, {"raw_all": snapshots}) for i in range(3)]
    read_middle = [v for h in middle for v in read(h, 2)]
    again = [h.operator.snapshot_state(2) for h in middle]
    for h in middle:
        read(h, 1)  # lost
    after = restore_and_finish(source, again, 1)
    assert_exactly_once(before + read_middle + after, expected)


def test_collection_source_moves_its_one_split_to_subtask_zero() -> None:
    source = CollectionSource(range(20))
    before, snapshots = first_run(source, 1)
    assert snapshots == [{"splits": [BATCH]}]
    for parallelism in (1, 3):
        after = restore_and_finish(source, snapshots, parallelism)
        assert_exactly_once(before + after, list(range(20)))


def test_a_source_read_to_its_end_stays_finished_after_rescaling() -> None:
    """Finished splits stay in the snapshot: a fully read source must not look stateless and start over."""
    source = NumberSequenceSource(0, 9)
    subtasks = [subtask(source, i, 2) for i in range(2)]
    for h in subtasks:
        run_to_end(h)
    snapshots = [h.operator.snapshot_state(1) for h in subtasks]
    assert snapshots == [{"splits": [(5, 5)]}, {"splits": [(10, 10)]}]
    assert restore_and_finish(source, snapshots, 3) == []


def test_a_new_subtask_without_splits_finishes_at_once() -> None:
    log, _ = memory_log(partitions=2)
    source = MemoryLogSource(log, bounded=True)
    _, snapshots = first_run(source, 2)
    extra = subtask(source, 2, 3, {"raw_all": snapshots})  # partitions are not cut: none is left for it
    assert run_to_end(extra) == []
    assert extra.operator.snapshot_state(2) == {"splits": []}


def test_scaling_up_cuts_the_unread_ranges_so_every_subtask_has_work() -> None:
    source = NumberSequenceSource(0, 99)
    before, snapshots = first_run(source, 2)
    new = [subtask(source, i, 4, {"raw_all": snapshots}) for i in range(4)]
    parts = [run_to_end(h) for h in new]
    assert all(parts)
    assert_exactly_once(before + [v for part in parts for v in part], list(range(100)))


def test_splits_are_dealt_round_robin_in_old_subtask_order() -> None:
    assert [owned_splits(["a", "b", "c", "d", "e"], i, 3) for i in range(3)] == [["a", "d"], ["b", "e"], ["c"]]


# ------------------------------------------------------------------ files
def test_a_half_read_file_is_continued_by_exactly_one_subtask(tmp_path: pathlib.Path) -> None:
    expected = text_files(tmp_path / "in", files=2, lines=10)
    source = file_source(tmp_path / "in")
    only = subtask(source, 0, 1)
    before = read(only, 5)  # 0.txt in batches of 3, 3, 3, 1 lines, then 3 lines of 1.txt
    snapshot = only.operator.snapshot_state(1)
    assert snapshot["splits"] == [(str(tmp_path / "in" / "0.txt"), None), (str(tmp_path / "in" / "1.txt"), 3)]
    after = restore_and_finish(source, [snapshot], 3)
    assert_exactly_once(before + after, expected)


def test_monitored_files_keep_their_owner_and_are_not_read_twice_after_rescaling(tmp_path: pathlib.Path) -> None:
    expected = text_files(tmp_path / "in", files=6, lines=4)
    source = file_source(tmp_path / "in", monitor_ms=1000)
    before, snapshots = first_run(source, 2)
    (tmp_path / "in" / "new.txt").write_text("n-0\nn-1\n")  # discovered after the restore
    new = [subtask(source, i, 3, {"raw_all": snapshots}) for i in range(3)]
    after: list = []
    for _ in range(5):  # unbounded: read what there is, let the discovery interval pass, again
        for h in new:
            after += read(h, 20)
            h.advance_time(1000)
    assert_exactly_once(before + after, expected + ["n-0", "n-1"])


# ------------------------------------------------------------------ unbounded sources
def test_unbounded_generator_strides_move_without_gaps_or_duplicates() -> None:
    source = DataGeneratorSource(lambda i: i)
    before, snapshots = first_run(source, 2)
    assert all(step == 2 for s in snapshots for _next, step in s["splits"])
    new = [subtask(source, i, 3, {"raw_all": snapshots}) for i in range(3)]
    after = [v for h in new for v in read(h, 4)]
    # the densest stride was cut in two: (n, 2) -> (n, 4) and (n + 2, 4), so all three have work
    assert sorted(step for h in new for _n, step in h.operator.snapshot_state(2)["splits"]) == [2, 4, 4]
    assert all(h.output.values for h in new) and not any(h.output.statuses for h in new)
    got = before + after
    assert len(got) == len(set(got))
    # every index below the lowest next index of a split was generated
    low = min(nxt for h in new for nxt, _ in h.operator.snapshot_state(2)["splits"])
    assert set(range(low)) <= set(got)


def test_unbounded_memory_log_partitions_move_with_their_offsets() -> None:
    log, expected = memory_log(partitions=4, per_partition=6)
    source = MemoryLogSource(log)
    before, snapshots = first_run(source, 2)
    new = [subtask(source, i, 3, {"raw_all": snapshots}) for i in range(3)]
    after = [v for h in new for v in read(h, 20)]
    assert_exactly_once(before + after, expected)
    # partition p is read by subtask p % 3, as on a fresh start at parallelism 3
    assert [sorted({p for p, _o, _s in h.operator.snapshot_state(2)["splits"]}) for h in new] == [[0, 3], [1], [2]]


# ------------------------------------------------------------------ refusing clearly
def test_a_reader_with_one_position_per_subtask_refuses_another_parallelism() -> None:
    source = ScriptedSource(list(range(10)))
    _, snapshots = first_run(source, 2)
    assert "position" in snapshots[0]
    with pytest.raises(InvalidProgramError, match="one position per subtask.*restore it at parallelism 2"):
        subtask(source, 0, 3, {"raw_all": snapshots})
    # the same parallelism is fine
    assert run_to_end(subtask(source, 0, 2, snapshots[0])) == [6, 8]


# ------------------------------------------------------------------ end to end
def test_savepoints_restored_at_parallelism_2_then_3_then_1_read_every_record_once(tmp_path: pathlib.Path) -> None:
    """A rate-limited generator job, stopped with a savepoint and restored at another parallelism
    twice; source splits and the (exactly-once) pandas sink's parts move with the parallelism.
    The first two jobs hold at a closed Gate after ``held`` records per subtask, so each is
    provably running (and its records committed) when its savepoint is taken."""
    count, held = 2400, 200
    sink = PandasSink("rescaled")

    def run(parallelism: int, savepoint: Optional[str], stop: bool) -> Optional[str]:
        conf = {"execution.checkpointing.dir": str(tmp_path / "checkpoints")}
        if savepoint is not None:
            conf["execution.state-recovery.path"] = savepoint
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
        env.enable_checkpointing(50)
        env.set_parallelism(parallelism)
        numbers = DataGeneratorSource(lambda i: i, count=count, rate_limiter_strategy=4000)
        (env.from_source(GatedSource(numbers, Gate(f"at {parallelism}"), held) if stop else numbers,
                         WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
            .map(lambda n: n * 10).uid("times ten")
            .sink_to(sink).uid("frame"))
        if not stop:
            env.execute(f"at {parallelism}")
            return None
        client = env.execute_async(f"at {parallelism}")
        # every subtask has more than `held` records left: each emits that many, then holds
        wanted = len(sink.records()) + parallelism * held
        wait_until(lambda: len(sink.records()) >= wanted, message=f"{wanted} records committed at {parallelism}")
        assert client.get_job_status().result(60).name == "RUNNING"
        return client.stop_with_savepoint(savepoint_directory=str(tmp_path / "savepoints")).result(60)

    with MiniCluster(1, 3):
        first = run(2, None, stop=True)
        second = run(3, first, stop=True)
        run(1, second, stop=False)
    assert_exactly_once(sink.records(), [n * 10 for n in range(count)])
