"""The public test kit: scripted sources with pause / fail / end markers."""

from __future__ import annotations

import collections
import doctest
import pathlib
import threading
import time

import pytest

from streamkernel.common import WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import JobExecutionError
from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.datastream.connectors import DataGeneratorSource, NumberSequenceSource
from streamkernel.testing import End, Fail, Gate, GatedSource, InjectedFailure, Pause, ScriptedSource, wait_until


def _read_all(reader) -> list:
    out = []
    while (batch := reader.read_batch(100)) is not None:
        out.extend(batch[0])
    return out


def test_records_are_split_round_robin_and_end_stops_the_script() -> None:
    source = ScriptedSource([1, 2, 3, 4, 5, End(), 6])
    parts = [_read_all(source.create_reader(i, 2)) for i in range(2)]
    assert parts == [[1, 3, 5], [2, 4]]
    assert source.records() == [1, 2, 3, 4, 5]


def test_a_fail_marker_raises_the_given_number_of_times_then_passes() -> None:
    source = ScriptedSource([1, Fail("boom", times=2), 2])
    for _ in range(2):
        reader = source.create_reader(0, 1)
        assert reader.read_batch(10) == ([1], None)
        with pytest.raises(InjectedFailure, match="boom"):
            reader.read_batch(10)
    assert _read_all(source.create_reader(0, 1)) == [1, 2]


def test_positions_restore_exactly_after_the_last_record() -> None:
    source = ScriptedSource(list(range(10)))
    reader = source.create_reader(0, 1)
    first = reader.read_batch(4)[0]
    position = reader.snapshot_position()
    again = source.create_reader(0, 1)
    again.restore_position(position)
    assert first + _read_all(again) == list(range(10))


def test_a_pause_has_nothing_for_a_while() -> None:
    now = [1000]
    reader = ScriptedSource([1, Pause(500), 2]).create_reader(0, 1)
    reader.now_ms = lambda: now[0]
    assert reader.read_batch(10) == ([1], None)
    assert reader.read_batch(10) == ([], None) and reader.poll_delay_seconds() == 0.5
    now[0] += 500
    assert reader.read_batch(10) == ([2], None)


def test_a_job_over_a_scripted_source_fails_with_the_injected_failure() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_source(ScriptedSource([1, 2, Fail("scripted crash"), 3]), WatermarkStrategy.no_watermarks(), "script") \
        .add_sink(lambda v: None)
    with pytest.raises(JobExecutionError, match="scripted crash"):
        env.execute("scripted")


def test_a_gate_holds_every_subtask_after_the_records_before_it_until_opened() -> None:
    gate = Gate("middle")
    source = ScriptedSource([1, 2, 3, gate, 4, 5])
    readers = [source.create_reader(i, 2) for i in range(2)]
    assert [r.read_batch(10) for r in readers] == [([1, 3], None), ([2], None)]  # what came before
    assert not gate.reached
    for _ in range(3):  # held: nothing, however often the task asks
        assert [r.read_batch(10) for r in readers] == [([], None), ([], None)]
    assert gate.reached and gate.wait_reached(0) and not gate.is_open
    assert readers[0].poll_delay_seconds() > 0  # the task waits between polls, it does not spin
    gate.open()
    assert [_read_all(r) for r in readers] == [[5], [4]]  # the round-robin split goes on
    assert source.records() == [1, 2, 3, 4, 5]


def test_a_position_snapshotted_at_a_closed_gate_restores_to_the_gate() -> None:
    gate = Gate()
    source = ScriptedSource(["a", "b", gate, "c"])
    reader = source.create_reader(0, 1)
    assert reader.read_batch(10) == (["a", "b"], None)
    assert reader.read_batch(10) == ([], None)
    position = reader.snapshot_position()  # a checkpoint while held
    restored = source.create_reader(0, 1)
    restored.restore_position(position)
    assert restored.read_batch(10) == ([], None)  # still closed: the restored reader holds too
    gate.open()
    assert _read_all(restored) == ["c"]


def test_a_job_cannot_finish_before_its_gate_is_opened() -> None:
    gate = Gate()
    words = [f"w{i % 5}" for i in range(60)]
    seen: list = []
    with MiniCluster(1, 2):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.from_source(ScriptedSource(words[:40] + [gate] + words[40:]), WatermarkStrategy.no_watermarks(),
                        "gated").add_sink(seen.append)
        client = env.execute_async("gated")
        assert gate.wait_reached(60)
        wait_until(lambda: len(seen) == 40 and client.get_job_status().result() is JobStatus.RUNNING,
                   message="the records before the gate, the job running")
        # everything before the gate went through, nothing after it, and the job goes on: the sources hold
        assert len(seen) == 40 and not client.get_job_status().result().is_globally_terminal_state()
        gate.open()
        client.get_job_execution_result().result(30)
    assert collections.Counter(seen) == collections.Counter(words)


# ------------------------------------------------------------------------ wait_until
def test_wait_until_returns_the_first_truthy_value_and_names_what_it_waited_for() -> None:
    values = iter([0, [], "ready"])
    assert wait_until(lambda: next(values), message="a value") == "ready"
    started = time.monotonic()
    results: list = []
    with pytest.raises(AssertionError, match=r"timed out after 0.2 s waiting for 3 results \(last seen: \[\]\)"):
        wait_until(lambda: results[2:], timeout=0.2, message="3 results")
    assert time.monotonic() - started >= 0.2


def test_wait_until_sees_a_condition_another_thread_makes_true() -> None:
    done = threading.Event()
    threading.Timer(0.05, done.set).start()
    assert wait_until(done.is_set, message="the timer") is True


# ----------------------------------------------------------------------- GatedSource
def test_a_gated_source_holds_every_subtask_after_its_share_and_keeps_the_wrapped_splits() -> None:
    gate = Gate()
    source = GatedSource(DataGeneratorSource(lambda i: i, count=100), gate, after=7)
    readers = [source.create_reader(i, 2) for i in range(2)]
    assert [_read_all_held(r) for r in readers] == [list(range(7)), list(range(50, 57))]
    assert gate.reached and readers[0].supports_splits
    splits = [r.snapshot_splits() for r in readers]
    assert splits == [[(7, 50)], [(57, 100)]]
    # restored at parallelism 3 (while still closed): the wrapped reader's rule deals the splits
    restored = source.create_reader(2, 3)
    every = restored.rebalance_splits([s for part in splits for s in part])
    restored.restore_splits([s for i, s in enumerate(every) if restored.owns_split(i, s)])
    assert len(_read_all_held(restored)) == 7
    gate.open()
    rest = [value for r in readers for value in _read_all(r)]
    assert rest == list(range(7, 50)) + list(range(57, 100))


def test_a_gated_source_rejects_a_bad_count() -> None:
    with pytest.raises(ValueError, match="after must be an int >= 0"):
        GatedSource(NumberSequenceSource(0, 9), Gate(), after=-1)


def _read_all_held(reader) -> list:
    """What a reader emits until it holds (returns no records) or ends."""
    out: list = []
    while (batch := reader.read_batch(3)) is not None and batch[0]:
        out.extend(batch[0])
    return out


def test_a_file_gate_is_one_gate_across_pickled_copies(tmp_path: pathlib.Path) -> None:
    import pickle

    from streamkernel.testing import FileGate

    gate = FileGate(tmp_path, "mid-job")
    copy = pickle.loads(pickle.dumps(gate))  # what a TaskManager process gets
    assert not gate.reached and not gate.wait_reached(0.05)
    assert copy._hold() and gate.reached and gate.wait_reached(0) and not gate.is_open
    gate.open()
    assert copy.is_open and not copy._hold()
    assert repr(gate) == f"FileGate('mid-job' in {str(tmp_path)!r}, open)"


@pytest.mark.parametrize("module", ["streamkernel.testing", "streamkernel.testing.markers",
                                    "streamkernel.testing.scripted_source", "streamkernel.testing.waiting"])
def test_the_kits_examples_hold(module: str) -> None:
    import importlib

    failed, attempted = doctest.testmod(importlib.import_module(module))
    assert attempted > 0 and failed == 0
