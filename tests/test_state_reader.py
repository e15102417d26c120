"""streamkernel.state: reading a checkpoint or savepoint into pandas DataFrames."""

from __future__ import annotations

import os

import pytest

from streamkernel.common.time import Time
from streamkernel.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from streamkernel.errors import CheckpointCorruptedError
from streamkernel.runtime.checkpoint.metadata import JobCheckpointInfo, OperatorMetadata, VertexMetadata
from streamkernel.runtime.checkpoint.storage import CheckpointStorage
from streamkernel.runtime.core.clock import ManualClock
from streamkernel.runtime.operators.processing_time import ProcessingTimeService
from streamkernel.runtime.state.heap import HeapKeyedStateBackend
from streamkernel.runtime.state.operator_state import DefaultOperatorStateBackend
from streamkernel.runtime.operators.timers import InternalTimerService
from streamkernel.state import KEYED_STATE_COLUMNS, read_checkpoint

INFO = JobCheckpointInfo(
    "reader test",
    {"src": OperatorMetadata("src", "Source: log", 1, 1, 1, "src"),
     "node-7": OperatorMetadata("node-7", "Windowed Sum", 2, 2, 128, None)},
    {1: VertexMetadata(1, "Source: log", 1, 1, ("src",)), 2: VertexMetadata(2, "Windowed Sum", 2, 128, ("node-7",))},
)


def _keyed_subtask(index: int) -> dict:
    clock = ManualClock(0)
    backend = HeapKeyedStateBackend(128, range(64 * index, 64 * (index + 1)), ttl_clock=clock)
    total = backend.get_state(ValueStateDescriptor("total"))
    ttl = ValueStateDescriptor("last-seen")
    ttl.enable_time_to_live(StateTtlConfig.new_builder(Time.hours(1)).build())
    last_seen = backend.get_state(ttl)
    windows = backend.get_state(ListStateDescriptor("window-contents"))
    timers = InternalTimerService("window-timers", backend, None, ProcessingTimeService(clock))
    for key in ("alice", "bob", "carol", "dave"):
        if (key in ("alice", "carol")) != (index == 0):
            continue
        backend.current_key = key
        total.update(len(key))
        last_seen.update(f"{key}-ts")
        backend.current_namespace = ("window", 0, 10)
        windows.add(key.upper())
        backend.current_namespace = None
        timers.register_event_time_timer(("window", 0, 10), 9)
    operator = DefaultOperatorStateBackend()
    operator.get_broadcast_state(MapStateDescriptor("rules")).put("limit", 10)
    return {"node-7": {"keyed": backend.snapshot(), "timers": [timers.snapshot()], "operator": operator.snapshot(),
                       "raw": None}}


@pytest.fixture
def checkpoint(tmp_path):
    storage = CheckpointStorage(tmp_path, "job-42")
    handles = {(1, 0): storage.write_task_state(3, 1, 0, {"src": {"keyed": None, "timers": [], "operator": None,
                                                                  "raw": {"position": 1234}}})}
    for index in range(2):
        handles[(2, index)] = storage.write_task_state(3, 2, index, _keyed_subtask(index))
    return storage.finalize(3, handles, INFO, timestamp=77)


def test_keyed_state_as_a_dataframe(checkpoint) -> None:
    view = read_checkpoint(checkpoint.path)
    assert view.checkpoint_id == 3 and not view.is_savepoint and view.metadata.job_name == "reader test"
    assert view.operators == ["src", "node-7"]
    frame = view.keyed_state("node-7", "total")
    assert list(frame.columns) == KEYED_STATE_COLUMNS
    assert sorted(zip(frame["key"], frame["value"])) == [("alice", 5), ("bob", 3), ("carol", 5), ("dave", 4)]
    assert set(frame["operator"]) == {"node-7"} and set(frame["state"]) == {"total"}
    assert frame["namespace"].isna().all()
    assert all(0 <= group < 128 for group in frame["key_group"])


def test_every_state_namespaces_and_ttl_values(checkpoint) -> None:
    view = read_checkpoint(checkpoint.path)
    assert set(view.state_names("node-7")) == {"total", "last-seen", "window-contents"}
    everything = view.keyed_state("node-7")
    assert len(everything) == 12
    windows = everything[everything["state"] == "window-contents"]
    assert set(windows["namespace"]) == {("window", 0, 10)}
    assert sorted(map(tuple, windows["value"])) == [("ALICE",), ("BOB",), ("CAROL",), ("DAVE",)]
    ttl = everything[everything["state"] == "last-seen"].set_index("key")["value"]
    assert ttl["bob"] == "bob-ts"  # unwrapped from its TTL timestamp


def test_operators_by_name_and_clear_errors(checkpoint) -> None:
    view = read_checkpoint(checkpoint.path)
    assert len(view.keyed_state("Windowed Sum", "total")) == 4
    with pytest.raises(KeyError, match="no operator 'nope'.*node-7 \\(Windowed Sum\\)"):
        view.keyed_state("nope")
    with pytest.raises(KeyError, match="no keyed state named 'missing'"):
        view.keyed_state("node-7", "missing")


def test_operator_state_timers_raw_state_and_summary(checkpoint) -> None:
    view = read_checkpoint(checkpoint.path)
    rules = view.operator_state("node-7")
    assert list(rules.columns) == ["operator", "state", "mode", "subtask", "key", "value"]
    assert sorted(zip(rules["subtask"], rules["key"], rules["value"])) == [(0, "limit", 10), (1, "limit", 10)]
    timers = view.timers("node-7")
    assert sorted(timers["key"]) == ["alice", "bob", "carol", "dave"]
    assert set(timers["timestamp"]) == {9} and set(timers["domain"]) == {"event_time"}
    assert set(timers["service"]) == {"window-timers"}
    assert view.raw_state("src") == {0: {"position": 1234}}
    assert view.keyed_state("src").empty
    summary = view.summary().set_index("operator")
    assert summary.loc["node-7", "keyed_entries"] == 12 and summary.loc["node-7", "timers"] == 4
    assert bool(summary.loc["src", "raw"]) and summary.loc["src", "parallelism"] == 1


def test_the_reader_validates_checksums_like_restore(checkpoint) -> None:
    path = os.path.join(checkpoint.path, "2-1.state")
    data = bytearray(open(path, "rb").read())
    data[-5] ^= 0x01
    open(path, "wb").write(bytes(data))
    with pytest.raises(CheckpointCorruptedError, match="2-1.state.*checksum"):
        read_checkpoint(checkpoint.path)


def test_importing_the_reader_does_not_import_pandas() -> None:
    import subprocess
    import sys

    code = "import sys, streamkernel.state; print('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
