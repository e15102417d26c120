"""Restart strategies (Flink's RestartBackoffTimeStrategy semantics) and the JobMaster's use of them.

Everything here is pure: time is the ``now_ms`` passed with each failure, jitter comes from
a seeded ``random.Random``; no thread, no sleep.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from streamkernel.common.job_status import JobStatus
from streamkernel.graph.execution_graph import SlotId
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState
from streamkernel.runtime.jobmaster.job_actions import CancelTask, JobTerminated, ReleaseChannels, ScheduleRestart
from streamkernel.runtime.jobmaster.job_state_machine import JobStateMachine
from streamkernel.runtime.jobmaster.restart import (
    ExponentialDelayRestartStrategy,
    FailureRateRestartStrategy,
    FixedDelayRestartStrategy,
    NoRestartStrategy,
    RestartStrategy,
    checkpointing_enabled,
    create_restart_strategy,
)
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot

BOOM = RuntimeError("boom")
INT_MAX = 2**31 - 1


def _fail(strategy: RestartStrategy, now_ms: int) -> tuple[bool, int]:
    strategy.notify_failure(BOOM, now_ms)
    restart = strategy.can_restart()
    return restart, strategy.get_backoff_time_ms() if restart else -1


# ------------------------------------------------------------------------ fixed delay
def test_fixed_delay_allows_exactly_its_attempts_with_a_constant_delay() -> None:
    strategy = FixedDelayRestartStrategy(3, 250)
    assert [_fail(strategy, t) for t in (0, 10, 20)] == [(True, 250)] * 3
    assert _fail(strategy, 30) == (False, -1)  # the 4th failure: attempts exhausted
    assert _fail(strategy, 10**9) == (False, -1)  # however long after: fixed delay never resets


def test_fixed_delay_with_zero_attempts_fails_on_the_first_failure() -> None:
    assert _fail(FixedDelayRestartStrategy(0, 1000), 0) == (False, -1)


# ------------------------------------------------------------------------ failure rate
def test_failure_rate_allows_max_failures_within_the_interval() -> None:
    strategy = FailureRateRestartStrategy(2, 10_000, 100)
    assert _fail(strategy, 0) == (True, 100)
    assert _fail(strategy, 4_000) == (True, 100)
    assert _fail(strategy, 9_000) == (False, -1)  # 3 failures within 10 s


def test_failure_rate_window_slides_and_its_bound_is_strict() -> None:
    strategy = FailureRateRestartStrategy(2, 10_000, 0)
    assert _fail(strategy, 0)[0] and _fail(strategy, 5_000)[0]
    assert _fail(strategy, 10_001)[0]  # the failure at 0 left the window
    assert _fail(strategy, 15_001)[0]  # now 5 000 left it too
    exact = FailureRateRestartStrategy(1, 10_000, 0)
    assert _fail(exact, 0)[0]
    assert not _fail(exact, 10_000)[0]  # exactly one interval apart still counts as "within" (Flink: >)


# -------------------------------------------------------------------- exponential delay
def _exponential(jitter: float = 0.0, attempts: int = INT_MAX, seed: int = 7) -> ExponentialDelayRestartStrategy:
    return ExponentialDelayRestartStrategy(100, 1_000, 2.0, 60_000, jitter, attempts, random.Random(seed))


def _fail_after_restart(strategy: ExponentialDelayRestartStrategy, now: int) -> tuple[int, int]:
    """A failure just after the pending restart happened; returns (backoff, when it was)."""
    due = strategy.next_restart_timestamp
    now = max(now, due + 1) if due is not None else now
    restart, backoff = _fail(strategy, now)
    assert restart
    return backoff, now


def test_exponential_delay_grows_by_the_multiplier_up_to_the_cap() -> None:
    strategy = _exponential()
    backoffs, now = [], 0
    for _ in range(7):
        backoff, now = _fail_after_restart(strategy, now)
        backoffs.append(backoff)
    assert backoffs == [100, 200, 400, 800, 1_000, 1_000, 1_000]


def test_exponential_delay_merges_failures_while_a_restart_is_pending() -> None:
    strategy = _exponential()
    assert strategy.notify_failure(BOOM, 1_000) is True
    assert strategy.get_backoff_time_ms() == 100
    assert strategy.notify_failure(BOOM, 1_060) is False  # the restart at 1 100 is still pending
    assert strategy.can_restart() and strategy.get_backoff_time_ms() == 40  # what is left of it
    assert strategy.current_restart_attempt == 1


def test_exponential_delay_resets_after_a_quiet_period_since_the_last_restart() -> None:
    strategy = _exponential()
    now = 0
    for _ in range(4):
        _, now = _fail_after_restart(strategy, now)
    last_restart = strategy.next_restart_timestamp
    assert _fail(strategy, last_restart + 59_999) == (True, 1_000)  # not quiet long enough: grows (capped)
    last_restart = strategy.next_restart_timestamp
    assert _fail(strategy, last_restart + 60_000) == (True, 100)  # the threshold passed: starts over
    assert strategy.current_restart_attempt == 1


def test_exponential_delay_gives_up_after_attempts_before_reset_backoff() -> None:
    strategy = _exponential(attempts=2)
    now = 0
    for _ in range(2):
        _, now = _fail_after_restart(strategy, now)
    assert _fail(strategy, strategy.next_restart_timestamp + 1) == (False, -1)
    strategy = _exponential(attempts=2)
    _fail_after_restart(strategy, 0)
    _fail_after_restart(strategy, 0)
    # a quiet period resets the count: two more attempts are allowed
    assert _fail(strategy, strategy.next_restart_timestamp + 60_000)[0]
    assert _fail(strategy, strategy.next_restart_timestamp + 1)[0]


def test_exponential_delay_jitter_stays_within_its_bounds_and_varies() -> None:
    strategy = ExponentialDelayRestartStrategy(1_000, 100_000, 2.0, 10**9, 0.5, INT_MAX, random.Random(3))
    samples: dict[int, list[int]] = {0: [], 2: []}
    for _ in range(300):
        strategy.current_restart_attempt = 0
        samples[0].append(strategy._actual_backoff_ms())
        strategy.current_restart_attempt = 2
        samples[2].append(strategy._actual_backoff_ms())
    # attempt 0: 1 000 +- 500, never below the initial backoff
    assert min(samples[0]) == 1_000 and 1_000 < max(samples[0]) <= 1_500
    # attempt 2: 4 000 +- 2 000, on both sides
    assert 2_000 <= min(samples[2]) < 4_000 < max(samples[2]) <= 6_000
    capped = ExponentialDelayRestartStrategy(1_000, 5_000, 2.0, 10**9, 0.5, INT_MAX, random.Random(3))
    capped.current_restart_attempt = 2
    drawn = [capped._actual_backoff_ms() for _ in range(200)]
    assert 2_000 <= min(drawn) and max(drawn) == 5_000  # the jitter applies before the cap


def test_exponential_delay_survives_huge_exponents() -> None:
    strategy = ExponentialDelayRestartStrategy(1, 1_000, 10.0, 10**12, 0.1, INT_MAX, random.Random(1))
    now = 0
    for _ in range(500):
        backoff, now = _fail_after_restart(strategy, now)
    assert backoff == 1_000


def test_exponential_delay_needs_a_failure_before_its_backoff() -> None:
    with pytest.raises(RuntimeError, match="notify_failure"):
        _exponential().get_backoff_time_ms()


# ------------------------------------------------------------------ from configuration
def test_default_is_none_without_checkpointing_and_exponential_delay_with_it() -> None:
    assert isinstance(create_restart_strategy({}), NoRestartStrategy)
    strategy = create_restart_strategy({"execution.checkpointing.interval": "1 s"})
    assert isinstance(strategy, ExponentialDelayRestartStrategy)
    assert (strategy.initial_backoff_ms, strategy.max_backoff_ms, strategy.backoff_multiplier,
            strategy.reset_backoff_threshold_ms, strategy.jitter_factor,
            strategy.attempts_before_reset_backoff) == (1_000, 60_000, 1.5, 3_600_000, 0.1, INT_MAX)
    assert checkpointing_enabled({"execution.checkpointing.interval": "500"})
    assert not checkpointing_enabled({"execution.checkpointing.interval": "0"})


def test_a_configured_strategy_wins_over_the_checkpointing_default() -> None:
    conf = {"execution.checkpointing.interval": "1 s", "restart-strategy.type": "none"}
    assert isinstance(create_restart_strategy(conf), NoRestartStrategy)
    rate = create_restart_strategy({"restart-strategy.type": "failure-rate",
                                    "restart-strategy.failure-rate.max-failures-per-interval": "3",
                                    "restart-strategy.failure-rate.failure-rate-interval": "5 min",
                                    "restart-strategy.failure-rate.delay": "2 s"})
    assert isinstance(rate, FailureRateRestartStrategy)
    assert (rate.max_failures_per_interval, rate.failure_interval_ms, rate.delay_ms) == (3, 300_000, 2_000)
    fixed = create_restart_strategy({"restart-strategy.type": "fixed-delay"})
    assert (fixed.restart_attempts, fixed.delay_ms) == (1, 1_000)  # Flink's defaults
    assert "fixed delay" in fixed.describe()


# ---------------------------------------------- the JobMaster's state machine, restarting
JOB = "cd" * 16
S = ExecutionState
VERTICES = [SimpleNamespace(id=1, name="Source: S", parallelism=1), SimpleNamespace(id=2, name="Map", parallelism=1)]
KEYS = [(1, 0), (2, 0)]


def _slot(tm: str = "tm-1", index: int = 0) -> AllocatedSlot:
    return AllocatedSlot(SlotId(0, index), tm, JOB, "alloc")


def _running(strategy: RestartStrategy, tm: str = "tm-1") -> JobStateMachine:
    m = JobStateMachine(JOB, "job", VERTICES, 1, strategy, now_ms=1_000)
    m.start(1_000)
    m.slots_allocated({k: _slot(tm) for k in KEYS}, 1_001)
    _all(m, S.INITIALIZING, 1_002)
    _all(m, S.RUNNING, 1_003)
    return m


def _all(m: JobStateMachine, state: ExecutionState, now: int, keys=KEYS) -> list:
    actions: list = []
    for key in keys:
        attempt = ExecutionAttemptId(JOB, key[0], key[1], m.executions[key].attempt_number)
        actions += m.task_state_changed(attempt, state, None, now_ms=now)
    return actions


def _task_fails(m: JobStateMachine, now: int, error: BaseException = BOOM) -> list:
    return m.task_state_changed(m.attempt_id((2, 0)), S.FAILED, error, now_ms=now)


def test_the_strategy_decides_at_the_failure_and_the_job_is_restarting_while_it_cancels() -> None:
    m = _running(FixedDelayRestartStrategy(2, 500))
    actions = _task_fails(m, 5_000)
    assert m.status is JobStatus.RESTARTING  # never FAILING: FAILING means the job will fail
    assert [type(a) for a in actions] == [CancelTask, ReleaseChannels]
    # the backoff counts from the failure: cancelling took 200 ms, 300 ms are left
    assert _all(m, S.CANCELED, 5_200, keys=[(1, 0)]) == [ScheduleRestart(300)]
    assert m.details(5_200).status is JobStatus.RESTARTING


def test_a_cancellation_longer_than_the_backoff_restarts_at_once() -> None:
    m = _running(FixedDelayRestartStrategy(2, 100))
    _task_fails(m, 5_000)
    assert _all(m, S.CANCELED, 5_900, keys=[(1, 0)]) == [ScheduleRestart(0)]


def test_restarts_count_attempts_and_history_until_the_strategy_gives_up() -> None:
    m = _running(FixedDelayRestartStrategy(2, 10))
    for attempt in range(2):
        _task_fails(m, 10_000 * (attempt + 1), RuntimeError(f"failure {attempt}"))
        _all(m, S.CANCELED, 10_000 * (attempt + 1) + 5, keys=[(1, 0)])
        m.restart_due(10_000 * (attempt + 1) + 15)
        assert m.status is JobStatus.RUNNING and m.attempt == attempt + 1
        _all(m, S.INITIALIZING, 10_000 * (attempt + 1) + 20)
        _all(m, S.RUNNING, 10_000 * (attempt + 1) + 30)
    _task_fails(m, 40_000, RuntimeError("the last straw"))
    assert m.status is JobStatus.FAILING
    actions = _all(m, S.CANCELED, 40_005, keys=[(1, 0)])
    [terminated] = [a for a in actions if isinstance(a, JobTerminated)]
    result = terminated.result
    assert result.status is JobStatus.FAILED and str(result.failure_cause) == "the last straw"
    assert result.num_restarts == 2
    assert [(e.message, e.attempt, e.restarted) for e in result.exception_history] == [
        ("failure 0", 0, True), ("failure 1", 1, True), ("the last straw", 2, False)]
    entry = result.exception_history[0]
    assert entry.task_name == "Map (1/1)" and entry.taskmanager_id == "tm-1" and entry.timestamp == 10_000
    assert entry.exception == "RuntimeError: failure 0"
    details = m.details(40_010)
    assert details.num_restarts == 2 and details.to_dict()["exception_history"][2]["restarted"] is False
    assert details.restart_strategy == "Restart with fixed delay (10 ms). #2 restart attempts."


def test_failures_during_a_failover_are_not_shown_to_the_strategy() -> None:
    strategy = FixedDelayRestartStrategy(1, 0)
    m = _running(strategy)
    _task_fails(m, 5_000)
    m.task_state_changed(m.attempt_id((1, 0)), S.FAILED, RuntimeError("while cancelling"), now_ms=5_001)
    assert strategy.current_restart_attempt == 1 and len(m.exception_history) == 1
    assert m.status is JobStatus.RESTARTING


def test_a_lost_taskmanager_restarts_into_new_slots_and_is_in_the_history() -> None:
    m = _running(FixedDelayRestartStrategy(1, 0), tm="tm-2")
    m.taskmanager_lost("tm-2", ConnectionError("heartbeat timed out"), now_ms=7_000)
    assert m.status is JobStatus.RESTARTING  # every subtask was on tm-2: nothing left to cancel
    [entry] = m.exception_history
    assert (entry.taskmanager_id, entry.exception_name, entry.restarted) == ("tm-2", "ConnectionError", True)


def test_a_cancel_during_the_backoff_cancels_the_job_and_the_restart_never_comes() -> None:
    m = _running(FixedDelayRestartStrategy(1, 10_000))
    _task_fails(m, 5_000)
    _all(m, S.CANCELED, 5_010, keys=[(1, 0)])
    [terminated] = [a for a in m.cancel(5_020) if isinstance(a, JobTerminated)]
    assert terminated.result.status is JobStatus.CANCELED and terminated.result.num_restarts == 0
    assert m.restart_due(15_000) == []


def test_the_exception_history_keeps_the_latest_failures_only() -> None:
    m = JobStateMachine(JOB, "job", VERTICES, 1, FixedDelayRestartStrategy(5, 0), now_ms=0, exception_history_size=2)
    m.start(0)
    m.slots_allocated({k: _slot() for k in KEYS}, 1)
    for attempt in range(3):
        _all(m, S.RUNNING, 10 * attempt + 2)
        _task_fails(m, 10 * attempt + 3, RuntimeError(f"failure {attempt}"))
        _all(m, S.CANCELED, 10 * attempt + 4, keys=[(1, 0)])
        m.restart_due(10 * attempt + 5)
    assert [e.message for e in m.details(100).exception_history] == ["failure 1", "failure 2"]
    assert m.details(100).num_restarts == 3
