"""The cluster: MiniCluster, ResourceManager, Dispatcher + JobMasters, TaskExecutors.

Most tests run scripted fake tasks (their behaviour chosen per subtask) so they test the
cluster's machinery alone; the last ones run real jobs end to end.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

import pytest

from streamkernel.common.configuration import Configuration
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import JobExecutionError, NotEnoughSlotsError
from streamkernel.graph.execution_graph import SlotId
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.runtime.core.deployment import ExecutionState, TaskDeploymentDescriptor
from streamkernel.runtime.resourcemanager.resource_manager import (
    ResourceManager,
    ResourceManagerStoppedError,
    SlotRequestCancelledError,
    TaskManagerLostError,
)
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.minicluster.minicluster import MiniCluster, current_cluster
from streamkernel.runtime.taskmanager.gateway import (
    AllocatedSlot,
    TaskExecutionState,
    TaskExecutorGateway,
    TaskExecutorStoppedError,
)
from streamkernel.runtime.dispatcher.gateway import DispatcherGateway
from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway
from streamkernel.runtime.jobmaster.gateway import JobMasterGateway
from streamkernel.runtime.taskmanager.task_executor import TaskExecutor
from streamkernel.testing import wait_until

S = ExecutionState


# ------------------------------------------------------------------------------- fakes
class ScriptedTask:
    """A stand-in for the runtime's Task: reports INITIALIZING, RUNNING, then per behaviour

    ``finish`` (FINISHED), ``fail`` (FAILED with ValueError), ``run`` (until cancelled:
    CANCELED) or ``hold`` (until ``release`` is set: FINISHED; or cancelled).
    """

    def __init__(self, tdd: TaskDeploymentDescriptor, services: Any,
                 on_state_change: Callable[..., None], behaviour: str, release: threading.Event) -> None:
        self.tdd = tdd
        self.state = S.DEPLOYING
        self.metrics = TaskMetrics(tdd.job_vertex.name, tdd.subtask_index)
        self._report_to = on_state_change
        self._behaviour = behaviour
        self._release = release
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, name=tdd.name_with_subtask, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        self._cancelled.set()

    def join(self, timeout: Optional[float] = None) -> None:
        self._thread.join(timeout)

    @property
    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _report(self, state: ExecutionState, error: Optional[BaseException] = None) -> None:
        self.state = state
        self._report_to(self.tdd.attempt_id, state, error)

    def _run(self) -> None:
        self._report(S.INITIALIZING)
        self._report(S.RUNNING)
        self.metrics.records_out = 10
        if self._behaviour == "finish":
            self._report(S.FINISHED)
        elif self._behaviour == "fail":
            self._report(S.FAILED, ValueError(f"boom at subtask {self.tdd.subtask_index}"))
        else:
            while not self._cancelled.wait(0.01):
                if self._behaviour == "hold" and self._release.is_set():
                    self._report(S.FINISHED)
                    return
            self._report(S.CANCELED)


class Scripts:
    """A task factory whose tasks behave as ``choose(tdd)`` says (default: run until cancelled)."""

    def __init__(self, choose: Callable[[TaskDeploymentDescriptor], str] = lambda tdd: "run") -> None:
        self.choose = choose
        self.release = threading.Event()
        self.tasks: list[ScriptedTask] = []

    def __call__(self, tdd: TaskDeploymentDescriptor, services: Any, on_state_change: Callable[..., None]) -> Any:
        task = ScriptedTask(tdd, services, on_state_change, self.choose(tdd), self.release)
        self.tasks.append(task)
        return task


class RecordingShuffle:
    """Remembers which jobs' channels were released."""

    def __init__(self) -> None:
        self.released: list[str] = []

    def release(self, job_id: str) -> None:
        self.released.append(job_id)


def _ended(task: ScriptedTask) -> bool:
    """The task reported its last state; its thread ends right after."""
    task.join(1.0)
    return not task.is_alive


def graph(name: str, parallelism: int = 2, configuration: Optional[dict] = None) -> StreamGraph:
    """Source (1) -> Map (parallelism) -> print: two job vertices, ``parallelism`` slots."""
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration.from_dict(configuration) if configuration else None)
    env.set_parallelism(parallelism)
    env.from_collection([1, 2, 3]).map(lambda x: x).name("Map").print()
    return env.get_stream_graph(name)



def cluster(taskmanagers: int = 1, slots: int = 2, scripts: Optional[Scripts] = None,
            configuration: Optional[dict] = None) -> MiniCluster:
    return MiniCluster(taskmanagers, slots, configuration=configuration, task_factory=scripts or Scripts(),
                       shuffle=RecordingShuffle())


# ----------------------------------------------------------------------- the cluster
def test_start_registers_every_slot_and_stop_leaves_no_thread() -> None:
    before = set(threading.enumerate())
    c = cluster(2, 3).start()
    assert current_cluster() is c
    slots = c.resource_manager.slots()
    assert [str(s.slot_id) for s in slots] == ["TM1/slot1", "TM1/slot2", "TM1/slot3",
                                                "TM2/slot1", "TM2/slot2", "TM2/slot3"]
    assert all(s.is_free for s in slots)
    assert [(t.taskmanager_id, t.number_of_slots) for t in c.inspection.taskmanagers] == [("taskmanager-1", 3),
                                                                              ("taskmanager-2", 3)]
    client = c.submit(graph("runs forever", 3))
    wait_until(lambda: client.get_job_status().result() is JobStatus.RUNNING)
    assert len(set(threading.enumerate()) - before) > 0
    c.stop()
    assert set(threading.enumerate()) - before == set()
    assert current_cluster() is None
    assert client.get_job_status().result() is JobStatus.CANCELED
    c.stop()  # stopping twice is harmless


def test_context_manager_and_start_without_becoming_current() -> None:
    with cluster() as c:
        assert c.is_running and current_cluster() is c
    assert not c.is_running and current_cluster() is None
    other = cluster().start(make_current=False)
    try:
        assert current_cluster() is None
    finally:
        other.stop()


def test_session_mode_runs_two_jobs_at_once_while_slots_last() -> None:
    with cluster(2, 2) as c:
        first = c.submit(graph("first", 2))
        second = c.submit(graph("second", 2))
        for client in (first, second):
            wait_until(lambda client=client: client.get_job_status().result() is JobStatus.RUNNING)
        holders = [s.job_name for s in c.resource_manager.slots()]
        assert sorted(holders) == ["first", "first", "second", "second"]
        occupied = [s for tm in c.inspection.taskmanagers for s in tm.slots]
        # slot sharing: each slot holds a Map subtask, the first also the source
        assert sum(len(s.tasks) for s in occupied) == 2 * 3
        assert [j.status for j in c.jobs()] == [JobStatus.RUNNING, JobStatus.RUNNING]
        snapshot = c.inspection.snapshot()
        assert snapshot["slots"] == {"total": 4, "free": 0}
        assert {j["name"] for j in snapshot["jobs"]} == {"first", "second"}
        first.cancel().result(30)
        second.cancel().result(30)
        assert all(s.is_free for s in c.resource_manager.slots())
        assert [j.status for j in c.jobs()] == [JobStatus.CANCELED, JobStatus.CANCELED]


def test_a_job_waits_for_slots_and_runs_when_another_job_frees_them() -> None:
    scripts = Scripts(lambda tdd: "hold" if tdd.job_name == "first" else "finish")
    with cluster(1, 2, scripts) as c:
        first = c.submit(graph("first", 2))
        wait_until(lambda: first.get_job_status().result() is JobStatus.RUNNING)
        second = c.submit(graph("second", 2))
        wait_until(lambda: c.resource_manager.pending_requests() == {str(second.get_job_id()): 2})
        assert second.get_job_status().result() is JobStatus.CREATED
        scripts.release.set()
        assert second.get_job_execution_result().result(30).get_job_id() == second.get_job_id()
        assert first.get_job_status().result() is JobStatus.FINISHED


def test_a_job_needing_more_slots_than_exist_waits_then_fails_with_a_clear_error() -> None:
    with cluster(1, 2, configuration={"slot.request.timeout": "200 ms"}) as c:
        client = c.submit(graph("too big", 3))
        assert client.get_job_status().result() is JobStatus.CREATED
        with pytest.raises(JobExecutionError) as caught:
            client.get_job_execution_result().result(30)
        cause = caught.value.__cause__
        assert isinstance(cause, NotEnoughSlotsError)
        message = str(cause)
        assert "'too big'" in message and "needs 3" in message and "2 free of 2 total" in message
        assert "200 ms (slot.request.timeout)" in message
        assert client.get_job_status().result() is JobStatus.FAILED
        assert "needs 3" in str(caught.value)


def test_the_slot_error_names_the_jobs_holding_the_slots_and_job_configuration_wins() -> None:
    with cluster(1, 2) as c:
        holder = c.submit(graph("holder", 2))
        wait_until(lambda: holder.get_job_status().result() is JobStatus.RUNNING)
        late = c.submit(graph("late", 1, {"slot.request.timeout": "100 ms"}))
        with pytest.raises(JobExecutionError, match="job 'holder' holds 2") as caught:
            late.get_job_execution_result().result(30)
        assert "0 free of 2 total" in str(caught.value.__cause__)
        assert holder.get_job_status().result() is JobStatus.RUNNING


def test_one_failing_task_cancels_the_others_and_fails_the_job_with_its_cause() -> None:
    scripts = Scripts(lambda tdd: "fail" if tdd.name_with_subtask.startswith("Map") and tdd.subtask_index == 1
                      else "run")
    with cluster(1, 3, scripts) as c:
        client = c.submit(graph("failing", 3))
        result = c.dispatcher.request_job_result(client.get_job_id(), timeout=30)
        assert result.status is JobStatus.FAILED
        assert isinstance(result.failure_cause, ValueError)
        assert result.failing_task == "Map -> Sink: Print to Std. Out (2/3)"
        details = client.get_job_details()
        states = {s.name: s.state for s in details.subtasks}
        assert states.pop("Map -> Sink: Print to Std. Out (2/3)") is S.FAILED
        assert set(states.values()) == {S.CANCELED}
        assert all(_ended(t) for t in scripts.tasks)
        assert all(s.is_free for s in c.resource_manager.slots())
        assert str(client.get_job_id()) in c.shuffle.released
        with pytest.raises(JobExecutionError, match=r"failed in Map -> Sink: Print to Std. Out \(2/3\): "
                                                     r"ValueError: boom") as caught:
            client.get_job_execution_result().result(1)
        assert caught.value.__cause__ is result.failure_cause


def test_cancel_stops_every_task_within_a_second() -> None:
    scripts = Scripts()
    with cluster(2, 2, scripts) as c:
        client = c.submit(graph("endless", 4))
        wait_until(lambda: client.get_job_status().result() is JobStatus.RUNNING)
        client.cancel().result(timeout=1.0)
        assert client.get_job_status().result() is JobStatus.CANCELED
        assert {s.state for s in client.get_job_details().subtasks} == {S.CANCELED}
        assert len(scripts.tasks) == 5 and all(_ended(t) for t in scripts.tasks)
        with pytest.raises(JobExecutionError, match="was cancelled"):
            client.get_job_execution_result().result(1)


def test_a_deployment_that_fails_fails_the_job_and_cancels_what_was_deployed() -> None:
    class Refusing(Scripts):
        def __call__(self, tdd, services, on_state_change):
            if tdd.name_with_subtask.startswith("Source"):
                raise MemoryError("no room for the source")
            return super().__call__(tdd, services, on_state_change)

    scripts = Refusing()
    with cluster(1, 2, scripts) as c:
        client = c.submit(graph("undeployable", 2))
        result = c.dispatcher.request_job_result(client.get_job_id(), timeout=30)
        assert result.status is JobStatus.FAILED and isinstance(result.failure_cause, MemoryError)
        assert result.failing_task.startswith("Source")
        assert len(scripts.tasks) == 2 and all(_ended(t) for t in scripts.tasks)


def test_the_components_implement_their_gateways() -> None:
    with cluster() as c:
        client = c.submit(graph("gateways", 1))
        assert isinstance(c.resource_manager, ResourceManagerGateway)
        assert isinstance(c.dispatcher, DispatcherGateway)
        assert isinstance(c.dispatcher.job_master(client.get_job_id()), JobMasterGateway)
        tm_id = c.resource_manager.taskmanager_ids[0]
        assert isinstance(c.resource_manager.task_executor_gateway(tm_id), TaskExecutorGateway)


def test_snapshot_is_plain_data_with_placement_and_metrics() -> None:
    with cluster(1, 2) as c:
        client = c.submit(graph("watched", 2))
        wait_until(lambda: client.get_job_status().result() is JobStatus.RUNNING)
        snap = c.inspection.snapshot()
        assert snap["running"] and snap["backend"] == "local"
        [tm] = snap["taskmanagers"]
        assert [s["slot"] for s in tm["slots"]] == ["TM1/slot1", "TM1/slot2"]
        assert tm["slots"][0]["job_name"] == "watched" and len(tm["slots"][0]["tasks"]) == 2
        [job] = snap["jobs"]
        assert job["status"] == "RUNNING" and job["slots_needed"] == 2
        subtasks = [s for v in job["vertices"] for s in v["subtasks"]]
        assert {s["slot"] for s in subtasks} == {"TM1/slot1", "TM1/slot2"}
        assert all(s["metrics"]["records_out"] == 10 for s in subtasks)  # live, from the TaskManager
        [info] = c.jobs()
        assert info.name == "watched" and info.status is JobStatus.RUNNING and info.duration_ms >= 0
        assert c.get_job(info.job_id).get_job_id() == info.job_id
        with pytest.raises(KeyError):
            c.get_job("00" * 16)


def test_unknown_backend_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown backend 'yarn'"):
        MiniCluster(backend="yarn")
    with pytest.raises(ValueError, match="slots_per_taskmanager must be an int >= 1"):
        MiniCluster(1, 0)


def test_cluster_size_defaults_come_from_the_configuration() -> None:
    c = MiniCluster(configuration={"taskmanager.numberOfTaskSlots": "3", "minicluster.number-of-taskmanagers": "2"})
    assert (c.number_of_taskmanagers, c.slots_per_taskmanager, c.total_slots) == (2, 3, 6)


# -------------------------------------------------------------------- the components
class _FakeJobMaster:
    def __init__(self) -> None:
        self.updates: list[TaskExecutionState] = []
        self.lost: list[tuple[str, BaseException]] = []
        self.job_id = "job"

    def update_task_execution_state(self, update: TaskExecutionState) -> None:
        self.updates.append(update)

    def disconnect_taskmanager(self, taskmanager_id: str, cause: BaseException) -> None:
        self.lost.append((taskmanager_id, cause))


def test_resource_manager_fills_the_first_taskmanager_first_and_releases_by_job() -> None:
    rm = ResourceManager()
    for name in ("a", "b"):
        TaskExecutor(name, 2, None, Scripts()).register_at(rm)
    slots = rm.request_slots("j1", 3, 100, job_name="one")
    assert [str(s) for s in slots] == ["TM1/slot1", "TM1/slot2", "TM2/slot1"]
    assert [s.taskmanager_id for s in slots] == ["a", "a", "b"]
    rm.release_slots("j1")
    rm.release_slots("j1")  # idempotent
    assert all(s.is_free for s in rm.slots())


def test_taskmanagers_are_numbered_by_their_ids_whatever_order_they_register_in() -> None:
    rm = ResourceManager()
    for name in ("taskmanager-2", "taskmanager-1", "taskmanager-1.1", "taskmanager-2", "other"):
        if name in rm.taskmanager_ids:
            rm.unregister_task_executor(name)  # lost, then a new one with the same id registers
        TaskExecutor(name, 1, None, Scripts()).register_at(rm)
    indexes = {s.taskmanager_id: s.slot_id.taskmanager_index for s in rm.slots()}
    # an index is never given twice: the second taskmanager-2 and the unnamed ones take the next ones
    assert indexes == {"taskmanager-1": 0, "taskmanager-1.1": 2, "taskmanager-2": 3, "other": 4}
    assert [str(s) for s in rm.request_slots("j", 2, 100)] == ["TM1/slot1", "TM3/slot1"]


def test_a_waiting_slot_request_is_woken_by_release_cancel_and_stop() -> None:
    rm = ResourceManager()
    TaskExecutor("a", 1, None, Scripts()).register_at(rm)
    rm.request_slots("holder", 1, 100)
    outcome: dict[str, Any] = {}

    def request(job: str) -> None:
        try:
            outcome[job] = rm.request_slots(job, 1, 10_000)
        except Exception as error:  # noqa: BLE001
            outcome[job] = error

    waiter = threading.Thread(target=request, args=("waiter",))
    waiter.start()
    wait_until(lambda: "waiter" in rm.pending_requests())
    rm.release_slots("holder")
    waiter.join(30)
    assert outcome["waiter"][0].slot_id == SlotId(0, 0)

    cancelled = threading.Thread(target=request, args=("cancelled",))
    cancelled.start()
    wait_until(lambda: "cancelled" in rm.pending_requests())
    rm.cancel_slot_request("cancelled")
    cancelled.join(30)
    assert isinstance(outcome["cancelled"], SlotRequestCancelledError)

    stopped = threading.Thread(target=request, args=("stopped",))
    stopped.start()
    wait_until(lambda: "stopped" in rm.pending_requests())
    rm.stop()
    stopped.join(30)
    assert isinstance(outcome["stopped"], ResourceManagerStoppedError)


def test_a_lost_taskmanager_is_unregistered_and_its_jobs_are_told() -> None:
    rm = ResourceManager()
    a, b = TaskExecutor("a", 1, None, Scripts()), TaskExecutor("b", 1, None, Scripts())
    a.register_at(rm)
    b.register_at(rm)
    master = _FakeJobMaster()
    rm.request_slots("job", 2, 100, job_name="two", job_master=master)
    b.shutdown()
    rm.heartbeat_round()
    assert rm.taskmanager_ids == ("a",)
    [(lost, cause)] = master.lost
    assert lost == "b" and isinstance(cause, TaskManagerLostError)
    assert [s.job_id for s in rm.slots()] == ["job"]


def test_task_executor_runs_tasks_reports_states_and_heartbeats() -> None:
    scripts = Scripts()
    tm = TaskExecutor("tm", 2, None, scripts)
    master = _FakeJobMaster()
    tdd = graph_tdd()
    tm.submit_task(tdd, AllocatedSlot(SlotId(0, 1), "tm", tdd.job_id, "x"), master)
    wait_until(lambda: [u.state for u in master.updates] == [S.INITIALIZING, S.RUNNING])
    beat = tm.heartbeat()
    assert beat.slot_report.slots[1].tasks == (tdd.name_with_subtask,)
    assert beat.slot_report.slots[0].tasks == ()
    assert beat.tasks[0].metrics["records_out"] == 10
    with pytest.raises(ValueError, match="already deployed"):
        tm.submit_task(tdd, AllocatedSlot(SlotId(0, 1), "tm", tdd.job_id, "x"), master)
    with pytest.raises(ValueError, match="belongs to TaskManager 'other'"):
        tm.submit_task(tdd, AllocatedSlot(SlotId(0, 0), "other", tdd.job_id, "x"), master)
    with pytest.raises(ValueError, match="no slot 3"):
        tm.submit_task(tdd, AllocatedSlot(SlotId(0, 2), "tm", tdd.job_id, "x"), master)
    tm.cancel_task(tdd.attempt_id)
    wait_until(lambda: master.updates[-1].state is S.CANCELED)
    assert master.updates[-1].metrics["records_out"] == 10  # final metrics ride on the last update
    tm.shutdown()
    with pytest.raises(TaskExecutorStoppedError):
        tm.heartbeat()
    with pytest.raises(TaskExecutorStoppedError):
        tm.submit_task(tdd, AllocatedSlot(SlotId(0, 0), "tm", tdd.job_id, "x"), master)


def graph_tdd() -> TaskDeploymentDescriptor:
    from streamkernel.graph.job_graph import build_job_graph
    from streamkernel.runtime.jobmaster.scheduler import build_deployment_descriptors

    tdds = build_deployment_descriptors("ab" * 16, build_job_graph(graph("unit", 1)))
    return next(iter(tdds.values()))


# ------------------------------------------------------------------ real jobs, end to end
def test_real_job_runs_across_two_taskmanagers_with_metrics() -> None:
    with MiniCluster(2, 2) as c:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(4)
        words = ["a", "b", "c", "a", "b", "a"] * 50
        counts = (env.from_collection(words).map(lambda w: (w, 1))
                  .key_by(lambda t: t[0]).reduce(lambda x, y: (x[0], x[1] + y[1])))
        results = list(counts.execute_and_collect("word count"))
        final = {}
        for word, n in results:
            final[word] = max(final.get(word, 0), n)
        assert final == {"a": 150, "b": 100, "c": 50}
        [job] = c.inspection.snapshot()["jobs"]
        assert job["status"] == "FINISHED"
        taskmanagers = {s["taskmanager"] for v in job["vertices"] for s in v["subtasks"]}
        assert taskmanagers == {"taskmanager-1", "taskmanager-2"}
        source = job["vertices"][0]["subtasks"][0]
        assert source["metrics"]["records_out"] == len(words)


def test_stopping_the_cluster_cancels_a_real_unbounded_job_and_leaves_no_thread() -> None:
    from streamkernel.common.watermark_strategy import WatermarkStrategy
    from streamkernel.datastream.connectors import DataGeneratorSource

    before = set(threading.enumerate())
    c = MiniCluster(1, 2).start()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_source(DataGeneratorSource(lambda i: i, None, 1000), WatermarkStrategy.no_watermarks(), "gen") \
        .map(lambda x: x + 1).add_sink(lambda x: None)
    client = env.execute_async("endless")
    wait_until(lambda: client.get_job_status().result() is JobStatus.RUNNING)
    c.stop()
    assert client.get_job_status().result() is JobStatus.CANCELED
    assert set(threading.enumerate()) - before == set()


def test_a_snapshot_counts_the_batch_and_the_wait_for_credit_in_progress() -> None:
    from streamkernel.runtime.core.metrics import TaskMetrics

    metrics = TaskMetrics("Enrich", 0)
    metrics.busy_ns, metrics.backpressured_ns = 1_000, 500
    start = time.perf_counter_ns()
    metrics.backpressured_at_busy_start = 500
    metrics.busy_since = start - 2_000_000_000  # a batch running for 2 s ...
    metrics.backpressured_since = start - 500_000_000  # ... of which the last 0.5 s waiting for credit
    snap = metrics.snapshot()
    assert 1.5e9 <= snap["busy_ns"] - 1_000 < 1.6e9  # busy without the wait
    assert 0.5e9 <= snap["backpressured_ns"] - 500 < 0.6e9
    metrics.busy_since = metrics.backpressured_since = 0  # nothing in progress: the counters alone
    assert (metrics.snapshot()["busy_ns"], metrics.snapshot()["backpressured_ns"]) == (1_000, 500)
