"""The JobMaster's state machine: events in, actions out, no threads (plus the restart interface)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Optional


from streamkernel.common.job_status import JobStatus
from streamkernel.errors import NotEnoughSlotsError
from streamkernel.graph.execution_graph import SlotId
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState
from streamkernel.runtime.jobmaster.job_actions import (
    CancelTask,
    DeployTask,
    JobTerminated,
    ReleaseChannels,
    ReleaseResources,
    ReleaseSlots,
    RequestSlots,
    ScheduleRestart,
)
from streamkernel.runtime.jobmaster.job_state_machine import JobStateMachine, TaskCanceledUnexpectedlyError
from streamkernel.runtime.jobmaster.restart import NoRestartStrategy, RestartStrategy, create_restart_strategy
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot

JOB = "ab" * 16
S = ExecutionState
# Source (vertex 1, parallelism 1) -> Map (vertex 2, parallelism 2)
VERTICES = [SimpleNamespace(id=1, name="Source: S", parallelism=1), SimpleNamespace(id=2, name="Map", parallelism=2)]
KEYS = [(1, 0), (2, 0), (2, 1)]


def _slot(index: int, tm: str = "tm-1") -> AllocatedSlot:
    return AllocatedSlot(SlotId(0 if tm == "tm-1" else 1, index), tm, JOB, "alloc")


def _placement(tm_of_second: str = "tm-1") -> dict:
    # slot sharing: subtask i of every vertex shares slot i
    return {(1, 0): _slot(0), (2, 0): _slot(0), (2, 1): _slot(1, tm_of_second)}


def _attempt(key: tuple[int, int], attempt: int = 0) -> ExecutionAttemptId:
    return ExecutionAttemptId(JOB, key[0], key[1], attempt)


def _machine(strategy: Optional[RestartStrategy] = None) -> JobStateMachine:
    return JobStateMachine(JOB, "job", VERTICES, 2, strategy or NoRestartStrategy(), now_ms=1000)


def _deployed(strategy: Optional[RestartStrategy] = None, tm_of_second: str = "tm-1") -> JobStateMachine:
    m = _machine(strategy)
    m.start(1000)
    m.slots_allocated(_placement(tm_of_second), 1001)
    return m


def _report(m: JobStateMachine, state: ExecutionState, keys=KEYS, attempt: int = 0,
            error: Optional[BaseException] = None) -> list:
    actions: list = []
    for key in keys:
        actions += m.task_state_changed(_attempt(key, attempt), state, error, now_ms=2000)
    return actions


def _run_all(m: JobStateMachine, attempt: int = 0) -> None:
    _report(m, S.INITIALIZING, attempt=attempt)
    _report(m, S.RUNNING, attempt=attempt)


def _terminated(actions: list) -> JobTerminated:
    [terminated] = [a for a in actions if isinstance(a, JobTerminated)]
    return terminated


def test_start_requests_the_slots_and_the_job_waits_in_created() -> None:
    m = _machine()
    assert m.start(1000) == [RequestSlots(2)]
    assert m.status is JobStatus.CREATED
    assert m.start(1000) == []  # a second start asks nothing


def test_slots_allocated_deploys_every_subtask_consumers_first() -> None:
    m = _machine()
    m.start(1000)
    actions = m.slots_allocated(_placement(), 1001)
    assert [a.key for a in actions] == [(2, 0), (2, 1), (1, 0)]
    assert all(isinstance(a, DeployTask) and a.attempt_number == 0 for a in actions)
    assert actions[1].slot == _slot(1)
    assert {e.state for e in m.executions.values()} == {S.DEPLOYING}
    assert m.status is JobStatus.CREATED


def test_job_is_running_when_every_subtask_runs_and_finished_when_all_finished() -> None:
    m = _deployed()
    _report(m, S.INITIALIZING)
    _report(m, S.RUNNING, keys=KEYS[:2])
    assert m.status is JobStatus.CREATED
    _report(m, S.RUNNING, keys=KEYS[2:])
    assert m.status is JobStatus.RUNNING
    assert _report(m, S.FINISHED, keys=KEYS[:2]) == []
    actions = _report(m, S.FINISHED, keys=KEYS[2:])
    assert isinstance(actions[0], ReleaseResources)
    result = _terminated(actions).result
    assert result.status is JobStatus.FINISHED and result.failure_cause is None
    assert result.net_runtime_ms == 1000  # from creation (1000) to the end (2000)
    assert m.is_terminal and m.end_time == 2000


def test_subtasks_that_finish_before_others_run_still_give_a_finished_job() -> None:
    m = _deployed()
    _report(m, S.RUNNING, keys=KEYS[:1])
    _report(m, S.FINISHED, keys=KEYS[:1])  # the source is done before the maps run
    _report(m, S.RUNNING, keys=KEYS[1:])
    assert m.status is JobStatus.RUNNING
    _report(m, S.FINISHED, keys=KEYS[1:])
    assert m.status is JobStatus.FINISHED
    assert "RUNNING" in m.status_timestamps


def test_a_failed_subtask_cancels_the_others_then_fails_the_job_with_its_cause() -> None:
    m = _deployed()
    _run_all(m)
    boom = ValueError("boom on record 7")
    actions = m.task_state_changed(_attempt((2, 1)), S.FAILED, boom, now_ms=3000)
    assert m.status is JobStatus.FAILING
    cancels = [a for a in actions if isinstance(a, CancelTask)]
    assert {a.attempt_id for a in cancels} == {_attempt((1, 0)), _attempt((2, 0))}
    assert isinstance(actions[-1], ReleaseChannels)  # after the cancels: wakes blocked senders
    assert m.executions[(1, 0)].state is S.CANCELING
    # a late RUNNING from a subtask being cancelled does not bring it back
    assert m.task_state_changed(_attempt((2, 0)), S.RUNNING, now_ms=3001) == []
    assert m.executions[(2, 0)].state is S.CANCELING
    assert m.task_state_changed(_attempt((1, 0)), S.CANCELED, now_ms=3002) == []
    actions = m.task_state_changed(_attempt((2, 0)), S.CANCELED, now_ms=3003)
    result = _terminated(actions).result
    assert result.status is JobStatus.FAILED
    assert result.failure_cause is boom
    assert result.failing_task == "Map (2/2)"
    details = m.details(4000)
    assert details.failure_cause is boom and details.end_time == 3003
    assert details.vertices[1].subtasks[1].failure == "ValueError: boom on record 7"


def test_a_second_failure_while_failing_keeps_the_first_cause() -> None:
    m = _deployed()
    _run_all(m)
    first = RuntimeError("first")
    m.task_state_changed(_attempt((2, 0)), S.FAILED, first, now_ms=3000)
    m.task_state_changed(_attempt((2, 1)), S.FAILED, RuntimeError("second"), now_ms=3001)
    actions = m.task_state_changed(_attempt((1, 0)), S.CANCELED, now_ms=3002)
    assert _terminated(actions).result.failure_cause is first


def test_cancel_cancels_every_deployed_subtask_then_the_job_is_canceled() -> None:
    m = _deployed()
    _run_all(m)
    actions = m.cancel(5000)
    assert m.status is JobStatus.CANCELLING
    assert len([a for a in actions if isinstance(a, CancelTask)]) == 3
    assert m.cancel(5001) == []  # cancelling twice asks nothing more
    _report(m, S.CANCELED, keys=KEYS[:2])
    actions = _report(m, S.CANCELED, keys=KEYS[2:])
    assert _terminated(actions).result.status is JobStatus.CANCELED
    assert m.status is JobStatus.CANCELED


def test_cancel_while_waiting_for_slots_ends_at_once_and_gives_late_slots_back() -> None:
    m = _machine()
    m.start(1000)
    actions = m.cancel(1500)
    assert m.status is JobStatus.CANCELED
    assert [type(a) for a in actions] == [ReleaseResources, JobTerminated]
    assert m.slots_allocated(_placement(), 1600) == [ReleaseSlots()]
    assert all(e.state is S.CANCELED for e in m.executions.values())


def test_failed_slot_request_fails_the_job() -> None:
    m = _machine()
    m.start(1000)
    error = NotEnoughSlotsError("needs 2, has 1")
    actions = m.slot_request_failed(error, 31000)
    result = _terminated(actions).result
    assert result.status is JobStatus.FAILED and result.failure_cause is error and result.failing_task is None


def test_deployment_failure_counts_as_a_subtask_failure() -> None:
    m = _deployed()
    actions = m.task_state_changed(_attempt((1, 0)), S.FAILED, ConnectionError("TaskManager gone"), now_ms=1100)
    assert m.status is JobStatus.FAILING
    assert {a.attempt_id for a in actions if isinstance(a, CancelTask)} == {_attempt((2, 0)), _attempt((2, 1))}


def test_stale_repeated_and_unknown_updates_are_ignored() -> None:
    m = _deployed()
    _run_all(m)
    assert m.task_state_changed(_attempt((2, 0), attempt=5), S.FAILED, RuntimeError(), now_ms=1) == []
    assert m.task_state_changed(ExecutionAttemptId(JOB, 99, 0, 0), S.FAILED, RuntimeError(), now_ms=1) == []
    assert m.task_state_changed(_attempt((2, 0)), S.RUNNING, now_ms=1) == []
    assert m.status is JobStatus.RUNNING


def test_a_subtask_canceled_without_request_fails_the_job() -> None:
    m = _deployed()
    _run_all(m)
    m.task_state_changed(_attempt((2, 0)), S.CANCELED, now_ms=3000)
    assert m.status is JobStatus.FAILING
    assert isinstance(m.failure_cause, TaskCanceledUnexpectedlyError)
    assert "Map (1/2)" in str(m.failure_cause)


def test_a_lost_taskmanager_fails_its_subtasks_and_the_job() -> None:
    m = _deployed(tm_of_second="tm-2")
    _run_all(m)
    lost = ConnectionError("tm-2 missed its heartbeats")
    actions = m.taskmanager_lost("tm-2", lost, now_ms=3000)
    assert m.executions[(2, 1)].state is S.FAILED
    assert {a.attempt_id for a in actions if isinstance(a, CancelTask)} == {_attempt((1, 0)), _attempt((2, 0))}
    actions = _report(m, S.CANCELED, keys=KEYS[:2])
    result = _terminated(actions).result
    assert result.status is JobStatus.FAILED and result.failure_cause is lost and result.failing_task == "Map (2/2)"
    assert m.placement == {}  # its slots are gone


def test_terminal_metrics_are_kept_in_the_details() -> None:
    m = _deployed()
    _run_all(m)
    m.task_state_changed(_attempt((1, 0)), S.FINISHED, now_ms=3000, metrics={"records_out": 42})
    details = m.details(3001)
    assert details.vertices[0].subtasks[0].metrics == {"records_out": 42}
    assert details.vertices[1].subtasks[0].slot == SlotId(0, 0)
    assert details.vertices[1].state_counts == {"RUNNING": 2}
    assert details.to_dict()["vertices"][0]["subtasks"][0]["state"] == "FINISHED"
    assert details.duration_ms == 2001 and details.end_time is None


class _RestartOnce(RestartStrategy):
    """Restarts after the first failure (500 ms backoff), gives up after the second."""

    def __init__(self) -> None:
        self.failures: list[BaseException] = []

    def notify_failure(self, cause: BaseException, now_ms: int) -> None:
        self.failures.append(cause)

    def can_restart(self) -> bool:
        return len(self.failures) <= 1

    def get_backoff_time_ms(self) -> int:
        return 500


def test_a_restart_strategy_decides_restart_after_delay_with_a_new_attempt() -> None:
    strategy = _RestartOnce()
    m = _deployed(strategy)
    _run_all(m)
    m.task_state_changed(_attempt((2, 0)), S.FAILED, RuntimeError("once"), now_ms=3000)
    actions = _report(m, S.CANCELED, keys=[(1, 0), (2, 1)])
    assert actions == [ScheduleRestart(500)]
    assert m.status is JobStatus.RESTARTING
    assert m.restart_due(3500)[0] == ReleaseChannels()
    assert m.status is JobStatus.RUNNING and m.attempt == 1
    assert {e.attempt_number for e in m.executions.values()} == {1}
    assert {e.state for e in m.executions.values()} == {S.DEPLOYING}
    # the old attempt's late reports are ignored; the new attempt finishes the job
    assert _report(m, S.FAILED, attempt=0, error=RuntimeError("stale")) == []
    _run_all(m, attempt=1)
    actions = _report(m, S.FINISHED, attempt=1)
    assert _terminated(actions).result.status is JobStatus.FINISHED


def test_restart_after_a_lost_taskmanager_asks_for_new_slots() -> None:
    strategy = _RestartOnce()
    m = _deployed(strategy, tm_of_second="tm-2")
    _run_all(m)
    m.taskmanager_lost("tm-2", ConnectionError("gone"), now_ms=3000)
    _report(m, S.CANCELED, keys=KEYS[:2])
    assert m.status is JobStatus.RESTARTING
    actions = m.restart_due(3500)
    assert actions == [ReleaseChannels(), ReleaseSlots(), RequestSlots(2)]
    deploy = m.slots_allocated(_placement(), 3600)
    assert {a.attempt_number for a in deploy} == {1}


def test_cancel_during_restart_backoff_cancels_at_once() -> None:
    m = _deployed(_RestartOnce())
    _run_all(m)
    m.task_state_changed(_attempt((2, 0)), S.FAILED, RuntimeError("once"), now_ms=3000)
    _report(m, S.CANCELED, keys=[(1, 0), (2, 1)])
    actions = m.cancel(3100)
    assert _terminated(actions).result.status is JobStatus.CANCELED
    assert m.restart_due(3500) == []


def test_no_restart_strategy_never_restarts() -> None:
    strategy = NoRestartStrategy()
    strategy.notify_failure(RuntimeError(), 0)
    assert not strategy.can_restart()
    assert strategy.describe() == "Restart deactivated."


def test_create_restart_strategy_reads_the_configuration() -> None:
    assert isinstance(create_restart_strategy({}), NoRestartStrategy)
    assert isinstance(create_restart_strategy({"restart-strategy.type": "none"}), NoRestartStrategy)
    strategy = create_restart_strategy({"restart-strategy.type": "fixed-delay",
                                        "restart-strategy.fixed-delay.attempts": "3"})
    assert strategy.describe() == "Restart with fixed delay (1 s). #3 restart attempts."
