"""The public test kit: scripted sources with pause / fail / end markers."""

from __future__ import annotations

import pytest

from streamkernel.common import WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import JobExecutionError
from streamkernel.testing import End, Fail, InjectedFailure, Pause, ScriptedSource


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
