"""The CheckpointCoordinator's decisions: pure events in, actions out, time passed in."""

from __future__ import annotations

import pytest

from streamkernel.common import Configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.checkpoint_config import CheckpointConfig
from streamkernel.errors import IllegalConfigurationError
from streamkernel.graph.job_graph import build_job_graph
from streamkernel.runtime.checkpoint.coordinator import (
    AbortCheckpoint,
    CheckpointCoordinator,
    CheckpointCoordinatorConfiguration,
    CheckpointPlan,
    CompleteCheckpoint,
    DiscardState,
    FailJob,
    NotifyCheckpointComplete,
    TriggerCheckpoint,
    TriggerRejected,
)
from streamkernel.runtime.checkpoint.history import CheckpointStatus
from streamkernel.runtime.checkpoint.storage import StateHandle

SOURCE = (1, 0)
SINK = (2, 0)
PLAN = CheckpointPlan(tasks_to_trigger=(SOURCE,), tasks_to_wait_for=(SOURCE, SINK))


def _coordinator(**settings) -> CheckpointCoordinator:
    settings.setdefault("interval_ms", 1000)
    coordinator = CheckpointCoordinator(CheckpointCoordinatorConfiguration(**settings))
    assert coordinator.start(0, PLAN) == []
    return coordinator


def _of(actions, kind):
    return [a for a in actions if isinstance(a, kind)]


def _complete(coordinator: CheckpointCoordinator, checkpoint_id: int, now: int) -> list:
    coordinator.acknowledge(checkpoint_id, SOURCE, StateHandle("s", 10, "x"), now)
    actions = coordinator.acknowledge(checkpoint_id, SINK, StateHandle("k", 5, "y"), now)
    assert _of(actions, CompleteCheckpoint)
    return coordinator.finalized(checkpoint_id, now, external_path=f"/chk-{checkpoint_id}")


# ------------------------------------------------------------------ periodic triggering
def test_periodic_checkpoints_trigger_every_interval_at_the_sources() -> None:
    coordinator = _coordinator()
    assert coordinator.tick(999) == []
    assert coordinator.next_wakeup_ms() == 1000
    [trigger] = coordinator.tick(1000)
    assert trigger == TriggerCheckpoint(1, 1000, False, (SOURCE,))
    _complete(coordinator, 1, 1100)
    assert coordinator.tick(1999) == []
    assert [a.checkpoint_id for a in coordinator.tick(2000)] == [2]


def test_no_periodic_checkpoints_without_an_interval_or_before_start() -> None:
    idle = CheckpointCoordinator(CheckpointCoordinatorConfiguration(interval_ms=-1))
    assert idle.tick(10**9) == []
    assert isinstance(idle.trigger(5)[0], TriggerRejected)  # the job is not running yet
    idle.start(0, PLAN)
    assert idle.tick(10**9) == [] and idle.next_wakeup_ms() is None
    assert isinstance(idle.trigger(5)[0], TriggerCheckpoint)  # manual checkpoints still work


def test_min_pause_counts_from_the_last_completion() -> None:
    coordinator = _coordinator(min_pause_ms=800)
    coordinator.tick(1000)
    _complete(coordinator, 1, 1900)
    assert coordinator.tick(2000) == []  # interval elapsed, but only 100 ms since completion
    assert coordinator.next_wakeup_ms() == 2700
    assert coordinator.tick(2699) == []
    assert [a.checkpoint_id for a in _of(coordinator.tick(2700), TriggerCheckpoint)] == [2]


def test_max_concurrent_delays_a_due_checkpoint_until_one_finishes() -> None:
    coordinator = _coordinator(max_concurrent=2)
    assert _of(coordinator.tick(1000), TriggerCheckpoint)
    assert _of(coordinator.tick(2000), TriggerCheckpoint)
    assert coordinator.tick(3000) == []  # two in flight: the third waits
    assert sorted(coordinator.pending) == [1, 2]
    _complete(coordinator, 2, 3100)  # completing 2 subsumes 1
    assert sorted(coordinator.pending) == []
    assert [a.checkpoint_id for a in _of(coordinator.tick(3100), TriggerCheckpoint)] == [3]


def test_completing_a_checkpoint_subsumes_older_pending_ones_without_failing() -> None:
    coordinator = _coordinator(max_concurrent=3)
    coordinator.tick(1000)
    coordinator.tick(2000)
    actions = _complete(coordinator, 2, 2500)
    [abort] = _of(actions, AbortCheckpoint)
    assert abort.checkpoint_id == 1 and "subsumed" in abort.reason
    assert not _of(actions, FailJob) and coordinator.consecutive_failures == 0


def test_a_pending_savepoint_holds_a_concurrency_slot() -> None:
    coordinator = _coordinator(timeout_ms=60_000)
    coordinator.trigger(500, is_savepoint=True)
    assert coordinator.tick(1000) == []
    assert coordinator.next_wakeup_ms() == 60_500  # only the savepoint's timeout: the due checkpoint waits
    coordinator.acknowledge(1, SOURCE, None, 1001)
    coordinator.acknowledge(1, SINK, None, 1002)
    coordinator.finalized(1, 1003)
    assert [a.checkpoint_id for a in coordinator.tick(1003)] == [2]


def test_min_pause_implies_one_concurrent_checkpoint() -> None:
    coordinator = _coordinator(max_concurrent=5, min_pause_ms=1)
    coordinator.tick(1000)
    assert coordinator.tick(2000) == []


# ------------------------------------------------------------------ acknowledgements
def test_a_checkpoint_completes_when_every_subtask_acknowledged() -> None:
    coordinator = _coordinator()
    coordinator.tick(1000)
    handle_source, handle_sink = StateHandle("a", 100, "x"), StateHandle("b", 20, "y")
    assert coordinator.acknowledge(1, SOURCE, handle_source, 1010) == []
    assert coordinator.acknowledge(1, SOURCE, handle_source, 1011) == []  # duplicate: ignored
    [complete] = coordinator.acknowledge(1, SINK, handle_sink, 1050)
    assert complete == CompleteCheckpoint(1, 1000, False, {SOURCE: handle_source, SINK: handle_sink})
    actions = coordinator.finalized(1, 1060, "/ck/chk-1")
    assert actions == [NotifyCheckpointComplete(1, (SOURCE, SINK))]
    stats = coordinator.history.snapshot().get(1)
    assert stats.status is CheckpointStatus.COMPLETED
    assert stats.state_size == 120 and stats.duration_ms == 60 and stats.external_path == "/ck/chk-1"
    assert stats.acknowledged[SINK].duration_ms == 50
    assert coordinator.latest_completed_id == 1


def test_acknowledgements_from_unknown_subtasks_are_ignored() -> None:
    coordinator = _coordinator()
    coordinator.tick(1000)
    assert coordinator.acknowledge(1, (9, 9), None, 1001) == []
    assert coordinator.pending[1].not_yet_acknowledged == {SOURCE, SINK}


def test_late_acknowledgements_of_aborted_checkpoints_are_ignored_and_discarded() -> None:
    coordinator = _coordinator(timeout_ms=500, tolerable_failures=5)
    coordinator.tick(1000)
    [abort] = coordinator.tick(1500)
    assert isinstance(abort, AbortCheckpoint) and "expired" in abort.reason
    late = StateHandle("late", 1, "z")
    assert coordinator.acknowledge(1, SOURCE, late, 1600) == [DiscardState(1, SOURCE, late)]
    assert coordinator.decline(1, SINK, "too late", 1600) == []
    assert coordinator.pending == {}
    assert coordinator.acknowledge(77, SOURCE, late, 1600) == []  # never triggered: nothing to discard


# ------------------------------------------------------------------ failures
def test_timeout_aborts_and_counts_as_a_failure() -> None:
    coordinator = _coordinator(timeout_ms=300, tolerable_failures=1)
    coordinator.tick(1000)
    assert coordinator.next_wakeup_ms() == 1300
    actions = coordinator.tick(1300)
    assert [type(a) for a in actions] == [AbortCheckpoint]
    assert coordinator.consecutive_failures == 1
    assert coordinator.history.snapshot().get(1).status is CheckpointStatus.FAILED


def test_consecutive_failures_beyond_the_tolerable_number_fail_the_job() -> None:
    coordinator = _coordinator(tolerable_failures=2)
    for n, now in enumerate((1000, 2000, 3000), start=1):
        coordinator.tick(now)
        actions = coordinator.decline(n, SINK, "snapshot failed", now + 10)
        assert _of(actions, AbortCheckpoint)[0].checkpoint_id == n
        assert bool(_of(actions, FailJob)) == (n == 3)
    [fail] = _of(actions, FailJob)
    assert "tolerable failure threshold" in fail.reason and "snapshot failed" in fail.reason
    assert coordinator.consecutive_failures == 0  # reset once the job is failed


def test_zero_tolerable_failures_fails_on_the_first_failure_and_success_resets_the_count() -> None:
    strict = _coordinator()
    strict.tick(1000)
    assert _of(strict.decline(1, SOURCE, "boom", 1001), FailJob)

    lenient = _coordinator(tolerable_failures=1)
    lenient.tick(1000)
    lenient.decline(1, SOURCE, "boom", 1001)
    lenient.tick(2000)
    _complete(lenient, 2, 2100)
    assert lenient.consecutive_failures == 0
    lenient.tick(3100)
    assert not _of(lenient.decline(3, SOURCE, "boom", 3101), FailJob)


def test_a_decline_caused_by_a_newer_barrier_is_not_a_failure() -> None:
    coordinator = _coordinator(max_concurrent=2)
    coordinator.tick(1000)
    coordinator.tick(2000)
    actions = coordinator.decline(1, SINK, "a newer checkpoint's barrier overtook it", 2001)
    assert _of(actions, AbortCheckpoint) and not _of(actions, FailJob)
    assert coordinator.consecutive_failures == 0


def test_failed_metadata_write_fails_the_checkpoint() -> None:
    coordinator = _coordinator()
    coordinator.tick(1000)
    coordinator.acknowledge(1, SOURCE, None, 1001)
    coordinator.acknowledge(1, SINK, None, 1002)
    assert coordinator.tick(10**9) == []  # finalizing: never expires, and holds the one concurrent slot
    assert 1 in coordinator.pending and coordinator.pending[1].finalizing
    actions = coordinator.finalize_failed(1, "disk full", 1003)
    assert _of(actions, AbortCheckpoint)[0].reason.endswith("disk full")
    assert _of(actions, FailJob)


# ------------------------------------------------------------------ savepoints and manual triggers
def test_savepoints_ignore_min_pause_and_max_concurrent() -> None:
    coordinator = _coordinator(min_pause_ms=10_000)
    coordinator.tick(1000)  # checkpoint 1 in flight, max concurrent 1
    [savepoint] = coordinator.trigger(1001, is_savepoint=True, target_dir="/sp")
    assert savepoint == TriggerCheckpoint(2, 1001, True, (SOURCE,), "/sp")
    coordinator.acknowledge(2, SOURCE, None, 1002)
    [complete] = coordinator.acknowledge(2, SINK, None, 1003)
    assert complete.is_savepoint and complete.target_dir == "/sp"
    coordinator.finalized(2, 1004, "/sp/savepoint-x")
    assert 1 in coordinator.pending  # a savepoint subsumes no checkpoint
    assert coordinator.history.snapshot().latest_savepoint.checkpoint_id == 2


def test_savepoint_failures_do_not_count() -> None:
    coordinator = _coordinator()
    coordinator.trigger(500, is_savepoint=True)
    actions = coordinator.decline(1, SINK, "boom", 501)
    assert _of(actions, AbortCheckpoint)[0].is_savepoint and not _of(actions, FailJob)


def test_a_completing_checkpoint_does_not_subsume_a_pending_savepoint() -> None:
    coordinator = _coordinator(max_concurrent=2)
    coordinator.trigger(500, is_savepoint=True)
    coordinator.tick(1000)
    actions = _complete(coordinator, 2, 1100)
    assert not _of(actions, AbortCheckpoint) and 1 in coordinator.pending


# ------------------------------------------------------------------ lifecycle
def test_stop_aborts_pending_checkpoints_without_counting_and_start_resumes() -> None:
    coordinator = _coordinator()
    coordinator.tick(1000)
    actions = coordinator.stop(1100, "failover")
    assert [type(a) for a in actions] == [AbortCheckpoint] and "failover" in actions[0].reason
    assert coordinator.consecutive_failures == 0
    assert coordinator.tick(5000) == []
    assert isinstance(coordinator.trigger(5000)[0], TriggerRejected)
    coordinator.start(6000, PLAN)
    assert [a.checkpoint_id for a in coordinator.tick(7000)] == [2]  # ids continue


def test_a_checkpoint_finishing_after_a_restart_is_not_notified_to_the_new_attempt() -> None:
    coordinator = _coordinator()
    coordinator.tick(1000)
    coordinator.acknowledge(1, SOURCE, None, 1001)
    coordinator.acknowledge(1, SINK, None, 1002)
    coordinator.stop(1003, "failover")  # finalizing: left to finish
    coordinator.start(1004, PLAN)
    assert coordinator.finalized(1, 1005) == []
    assert coordinator.latest_completed_id == 1


def test_finished_tasks_abort_what_waits_for_them_and_stop_checkpoints() -> None:
    coordinator = _coordinator()
    coordinator.tick(1000)
    coordinator.acknowledge(1, SINK, None, 1001)
    [abort] = coordinator.tasks_finished([SOURCE], 1002)
    assert isinstance(abort, AbortCheckpoint) and "finished" in abort.reason
    assert coordinator.consecutive_failures == 0
    assert coordinator.tick(5000) == []
    [rejected] = coordinator.trigger(5000, is_savepoint=True)
    assert isinstance(rejected, TriggerRejected) and "finished" in rejected.reason


def test_restored_continues_ids_and_is_recorded() -> None:
    coordinator = CheckpointCoordinator(CheckpointCoordinatorConfiguration(interval_ms=100))
    coordinator.restored(41, 0, is_savepoint=True, external_path="/sp")
    coordinator.start(0, PLAN)
    assert coordinator.tick(100)[0].checkpoint_id == 42
    assert coordinator.history.snapshot().latest_restored.external_path == "/sp"


def test_history_is_bounded_and_newest_first() -> None:
    coordinator = _coordinator(interval_ms=10, history_size=3)
    for n in range(1, 6):
        coordinator.tick(n * 10)
        _complete(coordinator, n, n * 10 + 1)
    snapshot = coordinator.history.snapshot()
    assert [row["id"] for row in snapshot.rows()] == [5, 4, 3]
    assert snapshot.num_completed == 5 and snapshot.num_in_progress == 0
    assert snapshot.rows()[0]["acknowledged"] == "2/2"


# ------------------------------------------------------------------ settings
def test_configuration_from_checkpoint_config_and_keys() -> None:
    config = (CheckpointConfig().set_checkpoint_interval(2000).set_checkpoint_timeout(5000)
              .set_min_pause_between_checkpoints(100).set_max_concurrent_checkpoints(3)
              .set_tolerable_checkpoint_failure_number(4))
    from_config = CheckpointCoordinatorConfiguration.from_checkpoint_config(config)
    assert (from_config.interval_ms, from_config.timeout_ms, from_config.min_pause_ms,
            from_config.max_concurrent, from_config.tolerable_failures) == (2000, 5000, 100, 3, 4)
    from_keys = CheckpointCoordinatorConfiguration.from_configuration(
        {**config.to_configuration(), "web.checkpoints.history": "7"})
    assert from_keys == CheckpointCoordinatorConfiguration.from_checkpoint_config(config, history_size=7)
    with pytest.raises(IllegalConfigurationError, match="web.checkpoints.history"):
        CheckpointCoordinatorConfiguration.from_configuration({"web.checkpoints.history": "many"})


def test_plan_from_a_job_graph_triggers_sources_and_waits_for_every_subtask() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(2)
    env.from_collection([1, 2, 3]).key_by(lambda x: x).map(lambda x: x).add_sink(lambda x: None)
    job_graph = build_job_graph(env.get_stream_graph())
    plan = CheckpointPlan.from_job_graph(job_graph)
    source_vertex = job_graph.vertices[0]
    assert plan.tasks_to_trigger == ((source_vertex.id, 0),)  # from_collection is non-parallel
    assert len(plan.tasks_to_wait_for) == 1 + 2


# ------------------------------------------------------------------ stop-with-savepoint
def test_a_stop_with_savepoint_is_synchronous_and_nothing_else_triggers_while_or_after_it() -> None:
    coordinator = _coordinator()
    [trigger] = coordinator.trigger(500, is_savepoint=True, target_dir="/sp", synchronous=True, drain=True)
    assert trigger == TriggerCheckpoint(1, 500, True, (SOURCE,), "/sp", synchronous=True, drain=True)
    assert coordinator.tick(5000) == [] and coordinator.next_wakeup_ms() == 500 + coordinator.config.timeout_ms
    [rejected] = coordinator.trigger(600, is_savepoint=True)
    assert isinstance(rejected, TriggerRejected) and "stopping with savepoint 1" in rejected.reason
    assert _of(_complete(coordinator, 1, 700), NotifyCheckpointComplete)  # the tasks finish on this
    assert coordinator.tick(9000) == []  # the job is about to finish: no periodic checkpoint
    assert isinstance(coordinator.trigger(9000)[0], TriggerRejected)


def test_a_failed_stop_with_savepoint_tells_its_tasks_and_checkpoints_go_on() -> None:
    coordinator = _coordinator()
    coordinator.trigger(500, is_savepoint=True, synchronous=True)
    [abort] = coordinator.decline(1, SINK, "no space left", 600)
    assert abort == AbortCheckpoint(1, "declined by subtask 0 of vertex 2: no space left", True, (SOURCE, SINK),
                                    synchronous=True)
    assert [a.checkpoint_id for a in coordinator.tick(1000)] == [2]  # the job goes on, and so do checkpoints


def test_only_a_savepoint_can_be_synchronous() -> None:
    coordinator = _coordinator()
    [trigger] = coordinator.trigger(500, is_savepoint=False, synchronous=True, drain=True)
    assert not trigger.synchronous and not trigger.drain
    assert [a.checkpoint_id for a in coordinator.trigger(600)] == [2]
