"""Task-side checkpoints: triggered at sources, barriers aligned downstream, consistent snapshots."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.graph.job_graph import build_job_graph
from streamkernel.runtime.core.deployment import ExecutionState
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.tasks.task import Task
from streamkernel.testing import wait_until


class _Responder:
    def __init__(self) -> None:
        self.acks: dict[int, dict] = {}
        self.declines: list = []
        self.lock = threading.Lock()

    def acknowledge(self, attempt_id, checkpoint_id, handle, metrics=None) -> None:
        with self.lock:
            self.acks.setdefault(checkpoint_id, {})[(attempt_id.vertex_id, attempt_id.subtask_index)] = handle

    def decline(self, attempt_id, checkpoint_id, reason) -> None:
        with self.lock:
            self.declines.append((checkpoint_id, reason))


def _run_with_checkpoints(mode: str, parallelism: int) -> tuple[_Responder, list[Task]]:
    responder = _Responder()
    tasks: list[Task] = []

    def factory(tdd, services, on_state_change):
        # No storage: the snapshots come back in memory, so the test can look inside them.
        task = Task(tdd, dataclasses.replace(services, checkpoint_responder=responder, checkpoint_storage=None),
                    on_state_change)
        tasks.append(task)
        return task

    with MiniCluster(taskmanagers=1, slots_per_taskmanager=parallelism, task_factory=factory):
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration.from_dict({"execution.checkpointing.mode": mode}))
        env.set_parallelism(parallelism)
        (env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=20000.0),
                         WatermarkStrategy.no_watermarks(), "gen").uid("gen")
            .key_by(lambda x: x % 5).map(lambda x: (x % 5, 1)).uid("pairs")
            .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("counts")
            .add_sink(lambda v: None).uid("sink"))
        subtasks = sum(vertex.parallelism for vertex in build_job_graph(env.get_stream_graph()).vertices)
        client = env.execute_async("checkpointed")
        # The source is unbounded: every task reaches RUNNING and stays there until the cancel.
        wait_until(lambda: len(tasks) == subtasks and all(t.state == ExecutionState.RUNNING for t in tasks),
                   message=f"all {subtasks} tasks of the job to be RUNNING (have {tasks})")
        sources = [task for task in tasks if not task.tdd.inputs]
        for checkpoint_id in (1, 2):
            emitted = sum(task.metrics.records_out for task in sources)
            # records flow between two checkpoints: the second covers more than the first
            wait_until(lambda emitted=emitted: sum(task.metrics.records_out for task in sources) > emitted,
                       message=f"the sources to emit records before checkpoint {checkpoint_id}")
            now = int(time.time() * 1000)
            for task in sources:
                task.trigger_checkpoint(checkpoint_id, now)
            wait_until(lambda checkpoint_id=checkpoint_id: len(responder.acks.get(checkpoint_id, {})) == subtasks,
                       message=f"checkpoint {checkpoint_id} acknowledged by all {subtasks} tasks")
        client.cancel().result(timeout=60)
    return responder, tasks


@pytest.mark.parametrize("parallelism", [1, 2])
def test_exactly_once_snapshots_are_consistent_across_the_job(parallelism: int) -> None:
    responder, tasks = _run_with_checkpoints("EXACTLY_ONCE", parallelism)
    assert responder.declines == []
    for checkpoint_id in (1, 2):
        acks = responder.acks[checkpoint_id]
        assert len(acks) == len(tasks)  # every subtask acknowledged
        # The generator's subtask i emits indexes i, i + p, i + 2p ...; its split is (next index, p).
        emitted = sum((s["gen"]["raw"]["splits"][0][0] - i) // parallelism for (v, i), s in _sources(acks))
        counted = 0
        for snapshot in acks.values():
            keyed = (snapshot.get("counts") or {}).get("keyed")
            if keyed:
                for entries in keyed["states"]["_reduce_state"]["key_groups"].values():
                    counted += sum(value[1] for _key, _ns, value in entries)
        # Every record the sources emitted before their barrier was counted before the
        # reduce's barrier, and none after: the snapshot is one consistent cut.
        assert counted == emitted


def _sources(acks: dict) -> list:
    return [(k, s) for k, s in acks.items() if "gen" in s]


def test_at_least_once_snapshots_never_miss_a_record() -> None:
    responder, tasks = _run_with_checkpoints("AT_LEAST_ONCE", 2)
    for checkpoint_id in (1, 2):
        acks = responder.acks[checkpoint_id]
        assert len(acks) == len(tasks)
        emitted = sum((s["gen"]["raw"]["splits"][0][0] - i) // 2 for (v, i), s in _sources(acks))
        counted = sum(value[1] for snapshot in acks.values()
                      for entries in (((snapshot.get("counts") or {}).get("keyed") or {"states": {"_reduce_state": {"key_groups": {}}}})
                                      ["states"]["_reduce_state"]["key_groups"].values())
                      for _k, _n, value in entries)
        # Without alignment, records after a barrier may already be counted: duplicates after
        # a restore are allowed in this mode (at-least-once), losses are not.
        assert counted >= emitted
