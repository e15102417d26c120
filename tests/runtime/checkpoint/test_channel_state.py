"""An unaligned checkpoint's in-flight data in a task snapshot, and what the statistics say about it."""

from __future__ import annotations

from streamkernel.runtime.checkpoint.channel_state import (
    channel_state_stats,
    has_channel_state,
    make_channel_state,
)
from streamkernel.runtime.checkpoint.history import CheckpointStatsHistory
from streamkernel.runtime.checkpoint.storage import StateHandle
from streamkernel.runtime.core.records import DataBuffer


def test_channel_state_keeps_records_by_input_and_counts_its_bytes() -> None:
    state = make_channel_state([(0, DataBuffer([1, 2], None)), (1, DataBuffer([], None)),
                                (1, DataBuffer(["x"], [7]))])
    assert state["buffers"] == [(0, [1, 2], None), (1, ["x"], [7])]  # empty buffers are dropped
    assert state["unaligned"] and state["persisted_data"] > 0
    assert has_channel_state({"channel_state": state}) and not has_channel_state({"keyed": None})
    assert not has_channel_state({"channel_state": make_channel_state([])})
    snapshot = {"count": {"keyed": None, "channel_state": state}, "sink": {"keyed": None}}
    assert channel_state_stats(snapshot) == (True, state["persisted_data"])  # kept in memory
    assert channel_state_stats(StateHandle("/f", 10, "h", True, 99)) == (True, 99)  # written to a file
    assert channel_state_stats(StateHandle("/f", 10, "h")) == (False, 0)


def test_the_statistics_say_whether_a_checkpoint_was_unaligned_and_what_it_persisted() -> None:
    history = CheckpointStatsHistory()
    history.report_pending(1, 1000, False, 3)
    history.report_acknowledged(1, (1, 0), 1010, 100)
    history.report_acknowledged(1, (2, 0), 1020, 300, unaligned=True, persisted_data=120)
    history.report_acknowledged(1, (2, 1), 1030, 200, unaligned=True, persisted_data=30)
    history.report_completed(1, 1040)
    stats = history.get(1)
    assert stats.unaligned and stats.persisted_data == 150
    row = stats.row()
    assert (row["unaligned"], row["persisted_data"], row["state_size"]) == (True, 150, 600)
    assert [(s["unaligned"], s["persisted_data"]) for s in stats.subtask_rows()] == [
        (False, 0), (True, 120), (True, 30)]
    history.report_pending(2, 2000, True, 1)
    history.report_acknowledged(2, (1, 0), 2010, 100)
    assert not history.get(2).unaligned and history.get(2).row()["persisted_data"] == 0
