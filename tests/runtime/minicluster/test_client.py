"""The client: env.execute() / execute_async() / execute_and_collect() on a current or transient cluster."""

from __future__ import annotations

import _thread
import threading

import pytest

from streamkernel.common.configuration import Configuration
from streamkernel.common.job_execution_result import JobExecutionResult
from streamkernel.common.job_status import JobStatus
from streamkernel.common.watermark_strategy import WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.errors import CheckpointFailedError, JobExecutionError, NotEnoughSlotsError, UserFunctionError
from streamkernel.runtime.minicluster.client import transient_cluster_for
from streamkernel.runtime.minicluster.minicluster import MiniCluster, current_cluster
from streamkernel.testing import wait_until



def _env(parallelism: int = 2) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def _endless(env: StreamExecutionEnvironment):
    return env.from_source(DataGeneratorSource(lambda i: i, None, 2000), WatermarkStrategy.no_watermarks(),
                           "endless")


@pytest.mark.py_matrix
def test_execute_without_a_cluster_uses_a_transient_one_and_stops_it() -> None:
    before = set(threading.enumerate())
    env = _env()
    seen: list[int] = []
    env.from_collection(list(range(20))).map(lambda x: x * 2).add_sink(seen.append)
    result = env.execute("transient")
    assert isinstance(result, JobExecutionResult)
    assert result.get_net_runtime() >= 0 and result.get_all_accumulator_results() == {}
    assert sorted(seen) == [x * 2 for x in range(20)]
    assert current_cluster() is None
    assert set(threading.enumerate()) - before == set()


def test_transient_cluster_is_sized_for_the_job() -> None:
    env = _env(3)
    env.from_collection([1]).map(lambda x: x).print()
    graph = env.get_stream_graph("sized")
    cluster = transient_cluster_for(graph)
    assert (cluster.number_of_taskmanagers, cluster.slots_per_taskmanager) == (1, 3)
    small = StreamExecutionEnvironment.get_execution_environment(
        Configuration.from_dict({"taskmanager.numberOfTaskSlots": "2"}))
    small.set_parallelism(3)
    small.from_collection([1]).map(lambda x: x).print()
    with pytest.raises(NotEnoughSlotsError, match="needs 3 task slots"):
        small.execute("does not fit")  # fails at once: nothing frees slots on a per-job cluster


def test_execute_submits_to_the_started_cluster() -> None:
    with MiniCluster(1, 2) as cluster:
        env = _env()
        env.from_collection([1, 2, 3]).map(lambda x: x).add_sink(lambda x: None)
        result = env.execute("on the session cluster")
        [job] = cluster.jobs()
        assert job.name == "on the session cluster" and job.status is JobStatus.FINISHED
        assert job.job_id == result.get_job_id()


@pytest.mark.py_matrix
def test_a_failing_user_function_raises_job_execution_error_naming_operator_subtask_and_record() -> None:
    before = set(threading.enumerate())
    env = _env(1)

    def explode(x: int) -> int:
        if x == 3:
            raise ZeroDivisionError("no threes")
        return x

    env.from_collection([1, 2, 3, 4]).map(explode).name("Exploder").print()
    with pytest.raises(JobExecutionError) as caught:
        env.execute("failing")
    message = str(caught.value)
    assert "Job 'failing'" in message and "Exploder" in message and "(1/1)" in message and "record 3" in message
    assert "ZeroDivisionError: no threes" in message
    assert isinstance(caught.value.__cause__, UserFunctionError)
    assert caught.value.job_status is JobStatus.FAILED
    assert set(threading.enumerate()) - before == set()


def test_execute_async_returns_a_job_client_and_the_transient_cluster_stops_after_the_job() -> None:
    before = set(threading.enumerate())
    env = _env()
    env.from_collection(list(range(100))).map(lambda x: x).add_sink(lambda x: None)
    client = env.execute_async("async")
    job_id = client.get_job_id()
    assert client.get_job_status().result() in set(JobStatus)
    result = client.get_job_execution_result().result(10)
    assert result.get_job_id() == job_id
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert client.get_accumulators().result() == {}
    wait_until(lambda: set(threading.enumerate()) - before == set())


@pytest.mark.py_matrix
def test_cancel_through_the_job_client() -> None:
    with MiniCluster(1, 2):
        env = _env()
        _endless(env).map(lambda x: x).add_sink(lambda x: None)
        client = env.execute_async("endless")
        wait_until(lambda: client.get_job_status().result() is JobStatus.RUNNING)
        client.cancel().result(30)
        assert client.get_job_status().result() is JobStatus.CANCELED
        with pytest.raises(JobExecutionError, match="was cancelled"):
            client.get_job_execution_result().result(1)


def test_savepoints_of_a_job_that_ended_fail_clearly() -> None:
    with MiniCluster(1, 2):
        env = _env()
        env.from_collection([1]).add_sink(lambda x: None)
        client = env.execute_async()
        client.get_job_execution_result().result(30)
        with pytest.raises(CheckpointFailedError, match="cannot take a savepoint .* the job is FINISHED"):
            client.trigger_savepoint().result(30)
        with pytest.raises(CheckpointFailedError, match="the job is FINISHED"):
            client.stop_with_savepoint().result(30)
        with pytest.raises(CheckpointFailedError, match="the job is FINISHED"):
            client.stop_with_savepoint(advance_to_end_of_event_time=True).result(30)


def test_keyboard_interrupt_while_waiting_cancels_the_job() -> None:
    with MiniCluster(1, 2) as cluster:
        env = _env()
        _endless(env).add_sink(lambda x: None)

        def interrupt_when_running() -> None:
            wait_until(lambda: bool(cluster.jobs()) and cluster.jobs()[0].status is JobStatus.RUNNING)
            _thread.interrupt_main()

        threading.Thread(target=interrupt_when_running, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            env.execute("interrupted")
        [job] = cluster.jobs()
        assert job.status is JobStatus.CANCELED


@pytest.mark.py_matrix
def test_execute_and_collect_iterates_over_the_results() -> None:
    env = _env(1)
    with env.from_collection(list(range(10))).map(lambda x: x + 1).execute_and_collect() as results:
        assert list(results) == list(range(1, 11))


def test_execute_and_collect_with_limit_returns_a_list_and_cancels_the_rest() -> None:
    with MiniCluster(1, 2) as cluster:
        env = _env(1)
        first = _endless(env).map(lambda x: x * 10).execute_and_collect("limited", limit=5)
        assert first == [0, 10, 20, 30, 40]
        [job] = cluster.jobs()
        assert job.status is JobStatus.CANCELED


def test_closing_the_iterator_cancels_the_running_job() -> None:
    with MiniCluster(1, 2) as cluster:
        env = _env(1)
        results = _endless(env).execute_and_collect("closed early")
        assert next(results) == 0
        results.close()
        assert cluster.jobs()[0].status is JobStatus.CANCELED
        with pytest.raises(StopIteration):
            next(results)


def test_execute_and_collect_raises_when_the_job_fails() -> None:
    env = _env(1)

    def fail_late(x: int) -> int:
        if x == 50:
            raise RuntimeError("fifty")
        return x

    results = env.from_collection(list(range(100))).map(fail_late).execute_and_collect()
    with pytest.raises(JobExecutionError, match="fifty") as caught:
        list(results)
    assert isinstance(caught.value.__cause__, UserFunctionError)
