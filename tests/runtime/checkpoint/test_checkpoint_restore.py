"""Assigning checkpointed state to the subtasks of a rescaled job: key groups, timers,
operator list state, raw state, unclaimed state and max parallelism."""

from __future__ import annotations

from typing import Optional

import pytest

from streamkernel.common import Configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.state import ListStateDescriptor, ValueStateDescriptor
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.job_graph import JobGraph, build_job_graph
from streamkernel.graph.keygroups import assign_key_to_operator, key_group_range_for_operator
from streamkernel.runtime.checkpoint.metadata import JobCheckpointInfo
from streamkernel.runtime.checkpoint.restore import (
    assign_restored_state,
    ignore_unclaimed_state,
    operator_has_state,
    recovery_path,
)
from streamkernel.runtime.checkpoint.storage import CheckpointStorage
from streamkernel.runtime.core.clock import ManualClock
from streamkernel.runtime.operators.processing_time import ProcessingTimeService
from streamkernel.runtime.state.heap import HeapKeyedStateBackend
from streamkernel.runtime.state.operator_state import DefaultOperatorStateBackend
from streamkernel.runtime.operators.timers import InternalTimerService

KEYS = [f"user-{n}" for n in range(500)]
COUNT = ValueStateDescriptor("count")
BUFFER = ListStateDescriptor("buffer")


def _job(parallelism: int, max_parallelism: Optional[int] = None, uid: str = "counts",
         conf: Optional[dict] = None, sink_uid: str = "sink") -> JobGraph:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf or {}))
    env.set_parallelism(parallelism)
    counts = env.from_collection([1]).uid("src").key_by(lambda x: x).map(lambda x: x).uid(uid)
    if max_parallelism is not None:
        counts.set_max_parallelism(max_parallelism)
    counts.add_sink(lambda v: None).uid(sink_uid)
    return build_job_graph(env.get_stream_graph())


def _keyed_vertex(job_graph: JobGraph):
    return next(v for v in job_graph.vertices if any(n.uid == "counts" for n in job_graph.operators(v.id)))


class _Subtask:
    """The state of one subtask of the 'counts' operator, as a Task would hold it."""

    def __init__(self, max_parallelism: int, parallelism: int, index: int) -> None:
        self.backend = HeapKeyedStateBackend(max_parallelism, key_group_range_for_operator(
            max_parallelism, parallelism, index))
        self.timers = InternalTimerService("user-timers", self.backend, None, ProcessingTimeService(ManualClock(0)))
        self.operator = DefaultOperatorStateBackend()

    def restore(self, state: Optional[dict]) -> None:
        if not state:
            return
        self.backend.restore(state["keyed"] or [])
        self.operator.restore(state["operator"])
        self.timers.restore(state["timers"], self.backend.key_group_range, self.backend.max_parallelism)

    def snapshot(self, raw: object = None) -> dict:
        return {"keyed": self.backend.snapshot(), "timers": [self.timers.snapshot()],
                "operator": self.operator.snapshot(), "raw": raw}

    def counts(self) -> dict:
        state = self.backend.get_state(COUNT)
        result = {}
        for key in self.backend.keys("count"):
            self.backend.current_key = key
            result[key] = state.value()
        return result


def _take_checkpoint(storage: CheckpointStorage, checkpoint_id: int, job_graph: JobGraph,
                     subtasks: list[_Subtask], extra: Optional[dict] = None):
    vertex = _keyed_vertex(job_graph)
    handles = {}
    for index, subtask in enumerate(subtasks):
        snapshot = {"counts": subtask.snapshot(raw={"seen": index}), "sink": {"keyed": None, "timers": [],
                                                                              "operator": None, "raw": {"writer": None}}}
        snapshot.update((extra or {}).get(index, {}))
        handles[(vertex.id, index)] = storage.write_task_state(checkpoint_id, vertex.id, index, snapshot)
    return storage.finalize(checkpoint_id, handles, JobCheckpointInfo.from_job_graph(job_graph))


def _restore(completed, job_graph: JobGraph) -> list[_Subtask]:
    vertex = _keyed_vertex(job_graph)
    assigned = assign_restored_state(completed, job_graph)
    assert {key[0] for key in assigned} <= {vertex.id}
    subtasks = []
    for index in range(vertex.parallelism):
        subtask = _Subtask(128, vertex.parallelism, index)
        subtask.restore((assigned.get((vertex.id, index)) or {}).get("counts"))
        subtasks.append(subtask)
    return subtasks


def _check_every_key_exactly_once(subtasks: list[_Subtask], expected: dict) -> None:
    seen: dict = {}
    for index, subtask in enumerate(subtasks):
        for key, value in subtask.counts().items():
            assert key not in seen, f"key {key!r} restored twice"
            assert assign_key_to_operator(key, 128, len(subtasks)) == index, f"key {key!r} on the wrong subtask"
            seen[key] = value
    assert seen == expected


@pytest.mark.py_matrix
def test_rescaling_1_to_3_to_2_keeps_every_key_exactly_once(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, "job", num_retained=5)
    job1 = _job(1)
    [only] = [_Subtask(128, 1, 0)]
    count = only.backend.get_state(COUNT)
    for n, key in enumerate(KEYS):
        only.backend.current_key = key
        count.update(n)
        if n % 10 == 0:
            only.timers.register_event_time_timer(None, 1000 + n)
    only.operator.get_list_state(BUFFER).update(list(range(7)))
    expected = {key: n for n, key in enumerate(KEYS)}
    first = _take_checkpoint(storage, 1, job1, [only])

    job3 = _job(3)
    three = _restore(first, job3)
    _check_every_key_exactly_once(three, expected)
    # timers followed their keys
    timers = {(t.key, t.timestamp) for s in three for t in s.timers.event_time_timers()}
    assert timers == {(KEYS[n], 1000 + n) for n in range(0, len(KEYS), 10)}
    for index, subtask in enumerate(three):
        assert all(assign_key_to_operator(t.key, 128, 3) == index for t in subtask.timers.event_time_timers())
    # split list state divided evenly, nothing lost
    parts = [s.operator.get_list_state(BUFFER).get() for s in three]
    assert [len(p) for p in parts] == [3, 2, 2] and sorted(sum(parts, [])) == list(range(7))

    for subtask in three:  # the job goes on at parallelism 3
        state = subtask.backend.get_state(COUNT)
        for key in list(subtask.backend.keys("count")):
            subtask.backend.current_key = key
            state.update(state.value() * 10)
    second = _take_checkpoint(storage, 2, job3, three)

    job2 = _job(2)
    two = _restore(second, job2)
    _check_every_key_exactly_once(two, {key: n * 10 for key, n in expected.items()})
    assert sorted(t.timestamp for s in two for t in s.timers.event_time_timers()) == list(range(1000, 1500, 10))
    assert sorted(sum((s.operator.get_list_state(BUFFER).get() for s in two), [])) == list(range(7))


def test_raw_state_same_subtask_or_every_old_one_when_rescaled(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, "job")
    job2 = _job(2)
    completed = _take_checkpoint(storage, 1, job2, [_Subtask(128, 2, i) for i in range(2)])
    vertex = _keyed_vertex(job2).id
    same = assign_restored_state(completed, job2)
    assert [same[(vertex, i)]["counts"]["raw"] for i in range(2)] == [{"seen": 0}, {"seen": 1}]
    assert "raw_all" not in same[(vertex, 0)]["counts"]

    job3 = _job(3)
    vertex3 = _keyed_vertex(job3).id
    rescaled = assign_restored_state(completed, job3)
    for index in range(3):
        state = rescaled[(vertex3, index)]["counts"]
        assert state["raw"] is None and state["raw_all"] == [{"seen": 0}, {"seen": 1}]


def test_parallelism_overrides_by_vertex(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, "job")
    job1 = _job(1)
    subtask = _Subtask(128, 1, 0)
    subtask.backend.current_key = "k"
    subtask.backend.get_state(COUNT).update(1)
    completed = _take_checkpoint(storage, 1, job1, [subtask])
    vertex = _keyed_vertex(job1).id
    assigned = assign_restored_state(completed, job1, {vertex: 4})
    owner = assign_key_to_operator("k", 128, 4)
    holders = [index for (_, index), ops in assigned.items()
               if any(entries for keyed in ops["counts"]["keyed"] for entries in
                      keyed["states"]["count"]["key_groups"].values())]
    assert holders == [owner]


def test_state_without_a_matching_uid_is_an_error_unless_allowed(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, "job")
    job = _job(1)
    subtask = _Subtask(128, 1, 0)
    subtask.backend.current_key = "k"
    subtask.backend.get_state(COUNT).update(1)
    completed = _take_checkpoint(storage, 1, job, [subtask])
    renamed = _job(1, uid="totals")
    with pytest.raises(InvalidProgramError, match=r"operator state of 'counts' \(Map\) has no matching uid in the "
                                                  r"job; set uid\(\) on the operator or allow non-restored state"):
        assign_restored_state(completed, renamed)
    assert assign_restored_state(completed, renamed, allow_non_restored_state=True) == {}
    configured = _job(1, uid="totals", conf={"execution.savepoint.ignore-unclaimed-state": "true"})
    assert assign_restored_state(completed, configured) == {}
    # the stateless sink ({"writer": None}) never counts as unclaimed state
    other_sink = _job(1, sink_uid="another-sink")
    assert {key for ops in assign_restored_state(completed, other_sink).values() for key in ops} == {"counts"}


def test_stateless_operators_do_not_need_a_match() -> None:
    assert not operator_has_state({"keyed": None, "timers": [], "operator": {"kind": "operator", "states": {}},
                                   "raw": {"writer": None}})
    assert not operator_has_state({"keyed": {"kind": "keyed", "max_parallelism": 128,
                                             "states": {"s": {"type": "value", "key_groups": {}}}}})
    assert operator_has_state({"raw": {"position": 0}})
    assert operator_has_state({"operator": {"states": {"l": {"mode": "split", "entries": [1]}}}})


def test_max_parallelism_cannot_change_or_be_exceeded(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, "job")
    job = _job(2)
    completed = _take_checkpoint(storage, 1, job, [_Subtask(128, 2, i) for i in range(2)])
    with pytest.raises(InvalidProgramError, match=r"'counts' \(Map\).*max parallelism 128.*now has max "
                                                  r"parallelism 256"):
        assign_restored_state(completed, _job(2, max_parallelism=256))
    with pytest.raises(InvalidProgramError, match=r"cannot restore 'counts' \(Map\) at parallelism 129: it "
                                                  r"exceeds the operator's max parallelism 128"):
        assign_restored_state(completed, job, {_keyed_vertex(job).id: 129})


def test_recovery_settings_read_2x_and_1x_keys() -> None:
    assert recovery_path({"execution.state-recovery.path": "/a", "execution.savepoint.path": "/b"}) == "/a"
    assert recovery_path({"execution.savepoint.path": "/b"}) == "/b"
    assert recovery_path({}) is None
    assert ignore_unclaimed_state({"execution.state-recovery.ignore-unclaimed-state": "true"})
    assert not ignore_unclaimed_state({})
