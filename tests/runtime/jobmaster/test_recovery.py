"""Recovery of real jobs: task failures, injected failures and killed TaskManagers, restarted
by the job's restart strategy on a MiniCluster.

Without checkpoints a restarted job reads its sources from the beginning (Flink does the
same), so these jobs end in an *overwriting* sink: the final per-key running counts of the
last attempt must equal those of a failure-free run. A failure injected from the test
(fail_operator, kill_taskmanager) happens once every subtask runs and while the sources
hold at a closed :class:`~streamkernel.testing.Gate`, opened only after the injection: the
job cannot end before it, however slow or loaded the machine. Time bounds are generous on
purpose.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from streamkernel.common import RestartStrategies, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import IllegalConfigurationError, JobExecutionError
from streamkernel.runtime.jobmaster.failure_injection import FailureInjectionError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import Fail, Gate, InjectedFailure, Pause, ScriptedSource, wait_until

WORDS = [f"w{i % 7}" for i in range(700)]
EXPECTED = {w: WORDS.count(w) for w in set(WORDS)}



def _paced(words: list, chunk: int = 35, pause_ms: int = 25) -> list:
    """The words with a short pause after every chunk: the job runs for a while."""
    script: list = []
    for i in range(0, len(words), chunk):
        script += words[i:i + chunk] + [Pause(pause_ms)]
    return script


def _gated(words: list, gate: Gate, at: int = 210) -> list:
    """The paced words, the sources holding at ``gate`` after the first ``at`` of them."""
    return _paced(words[:at]) + [gate] + _paced(words[at:])


def _counting_job(env: StreamExecutionEnvironment, script: list, latest: dict, restart: Any = None) -> None:
    """Keyed running counts of the words into an overwriting sink (``latest[word] = count``)."""
    env.set_parallelism(2)
    if restart is not None:
        env.set_restart_strategy(restart)
    (env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), "words")
        .map(lambda w: (w, 1)).name("Ones").uid("ones")
        .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name("Counts").uid("counts")
        .add_sink(lambda t: latest.__setitem__(t[0], t[1])))


def _all_running(client: Any) -> bool:
    return all(s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


# ------------------------------------------------------------------------ task failures
def test_fixed_delay_restarts_a_failed_job_which_ends_with_the_failure_free_counts() -> None:
    latest: dict = {}
    with MiniCluster(1, 2):
        env = StreamExecutionEnvironment.get_execution_environment()
        _counting_job(env, WORDS[:300] + [Fail("scripted crash")] + WORDS[300:], latest,
                      RestartStrategies.fixed_delay_restart(3, 20))
        client = env.execute_async("restarted once")
        result = client.get_job_execution_result().result(30)
        details = client.get_job_details()
    assert latest == EXPECTED
    assert result.get_num_restarts() == 1 and details.num_restarts == 1
    [entry] = details.exception_history
    assert entry.exception_name == "InjectedFailure" and "scripted crash" in entry.message
    assert entry.task_name.startswith("Source: words") and entry.restarted and entry.attempt == 0
    assert {s.attempt_number for s in details.subtasks} == {1}


def test_a_job_exceeding_its_attempts_fails_with_the_cause() -> None:
    latest: dict = {}
    env = StreamExecutionEnvironment.get_execution_environment()
    _counting_job(env, WORDS[:100] + [Fail("always broken", times=10)] + WORDS[100:], latest,
                  RestartStrategies.fixed_delay_restart(2, 10))
    with pytest.raises(JobExecutionError, match="after 2 restarts: InjectedFailure: always broken") as caught:
        env.execute("hopeless")
    assert isinstance(caught.value.__cause__, InjectedFailure)


def test_without_a_restart_strategy_and_checkpointing_the_first_failure_fails_the_job() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    _counting_job(env, WORDS[:10] + [Fail("once")] + WORDS[10:], {})
    with pytest.raises(JobExecutionError, match="once") as caught:
        env.execute("plain job")
    assert "restart" not in str(caught.value)


# ---------------------------------------------------------------- injected failures
def test_fail_operator_fails_the_running_subtasks_and_the_job_recovers() -> None:
    latest: dict = {}
    statuses: list = []
    gate = Gate()
    with MiniCluster(1, 2) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment()
        _counting_job(env, _gated(WORDS, gate), latest, RestartStrategies.fixed_delay_restart(1, 1000))
        client = env.execute_async("fail an operator")
        cluster.dispatcher.add_job_status_listener(client.get_job_id(), lambda d: statuses.append(d.status))
        wait_until(lambda: latest and _all_running(client), message="the first counts")
        failed = cluster.failures.fail_operator(client.get_job_id(), "counts", subtask=1)
        assert failed == ["Counts -> Sink: Unnamed (2/2)"]
        wait_until(lambda: client.get_job_status().result() is JobStatus.RESTARTING, message="RESTARTING")
        assert client.get_job_details().num_restarts == 0  # still waiting out the 1 s backoff
        gate.open()  # the failure is in (delivered asynchronously): the restarted attempt reads all
        result = client.get_job_execution_result().result(30)
        details = client.get_job_details()
    assert latest == EXPECTED and result.get_num_restarts() == 1
    assert statuses[-4:] == [JobStatus.RUNNING, JobStatus.RESTARTING, JobStatus.RUNNING, JobStatus.FINISHED]
    [entry] = details.exception_history
    assert entry.exception_name == "InjectedFailure" and entry.task_name == "Counts -> Sink: Unnamed (2/2)"
    assert "failure injected into operator 'counts'" in entry.message and "fail_operator" in entry.message


def test_fail_operator_says_what_it_cannot_do() -> None:
    gate = Gate()
    with MiniCluster(1, 2) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment()
        _counting_job(env, _paced(WORDS[:70]) + [gate], {})
        client = env.execute_async("short")
        with pytest.raises(FailureInjectionError, match=r"no operator named 'Nope'.*'counts'"):
            cluster.failures.fail_operator(client.get_job_id(), "Nope")
        with pytest.raises(FailureInjectionError, match="there is no subtask index 5"):
            cluster.failures.fail_operator(client.get_job_id(), "Counts", subtask=5)
        gate.open()
        client.get_job_execution_result().result(30)
        with pytest.raises(FailureInjectionError, match="FINISHED"):
            cluster.failures.fail_operator(client.get_job_id(), "Counts")


# ----------------------------------------------------------------- dead TaskManagers
def _fast_restarts() -> dict:
    return {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3",
            "restart-strategy.fixed-delay.delay": "50 ms"}


def test_a_killed_taskmanager_is_detected_and_the_job_restarts_on_a_replacement() -> None:
    latest: dict = {}
    gate = Gate()
    before = set(threading.enumerate())
    with MiniCluster(2, 1, configuration=_fast_restarts()) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment()
        _counting_job(env, _gated(WORDS, gate), latest)
        client = env.execute_async("lose a TaskManager")
        job_id = str(client.get_job_id())
        # every subtask must be deployed before the kill: a deployment to the dead TaskManager
        # would fail at once and restart onto it again until heartbeat.timeout notices it
        wait_until(lambda: latest and _all_running(client), message="the first counts")
        killed_at = time.monotonic()
        assert cluster.failures.kill_taskmanager("TM2") == "taskmanager-2"
        gate.open()  # only now may the job end: the restarted attempt reads everything
        # the ResourceManager notices the missed heartbeats, the job restarts and asks for
        # 2 slots; only taskmanager-1's is left, so it waits for slots
        wait_until(lambda: job_id in cluster.resource_manager.pending_requests(), message="the slot request")
        detected = time.monotonic() - killed_at
        assert cluster.resource_manager.taskmanager_ids == ("taskmanager-1",)
        assert cluster.failures.add_taskmanager() == "taskmanager-3"
        wait_until(lambda: client.get_job_details().num_restarts == 1 and (
            _all_running(client) or client.get_job_status().result() is JobStatus.FINISHED), message="the restarted job")
        recovered = time.monotonic() - killed_at
        result = client.get_job_execution_result().result(30)
        details = client.get_job_details()
        assert {s.taskmanager_id for s in details.subtasks} == {"taskmanager-1", "taskmanager-3"}
        assert cluster.total_slots == 2
    assert set(threading.enumerate()) - before == set()
    assert latest == EXPECTED and result.get_num_restarts() == 1
    # heartbeat.timeout here is 500 ms: detected by it (the message below), not by a hang; the
    # bounds are tens of timeouts, so a loaded machine (many times slower) still meets them
    assert detected < 20 and recovered < 40
    [entry] = details.exception_history
    assert entry.exception_name == "TaskManagerLostError" and entry.taskmanager_id == "taskmanager-2"
    assert "Heartbeat of TaskManager 'taskmanager-2' timed out" in entry.message


def test_a_killed_taskmanager_with_spare_slots_restarts_on_the_remaining_ones() -> None:
    latest: dict = {}
    gate = Gate()
    with MiniCluster(3, 1, configuration=_fast_restarts()) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment()
        _counting_job(env, _gated(WORDS, gate), latest)
        client = env.execute_async("spare slots")
        wait_until(lambda: latest and _all_running(client), message="the first counts")  # every subtask deployed
        cluster.failures.kill_taskmanager(0)
        gate.open()
        result = client.get_job_execution_result().result(30)
        details = client.get_job_details()
        with pytest.raises(KeyError, match="no live TaskManager 'taskmanager-1'"):
            cluster.failures.kill_taskmanager("taskmanager-1")  # already dead
    assert latest == EXPECTED and result.get_num_restarts() == 1
    assert {s.taskmanager_id for s in details.subtasks} == {"taskmanager-2", "taskmanager-3"}


def test_heartbeat_settings_use_flinks_keys_and_are_checked() -> None:
    with MiniCluster(1, 1, configuration={"heartbeat.interval": "50 ms", "heartbeat.timeout": "2 s"}) as cluster:
        rm = cluster.resource_manager
        assert (rm.heartbeat_interval_ms, rm.heartbeat_timeout_ms) == (50, 2_000)
    with MiniCluster(1, 1) as cluster:
        rm = cluster.resource_manager
        assert (rm.heartbeat_interval_ms, rm.heartbeat_timeout_ms) == (100, 500)  # the local defaults
    with pytest.raises(IllegalConfigurationError, match="heartbeat.timeout"):
        MiniCluster(1, 1, configuration={"heartbeat.interval": "1 s", "heartbeat.timeout": "500 ms"}).start(
            make_current=False)

