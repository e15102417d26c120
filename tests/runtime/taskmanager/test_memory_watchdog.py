"""The process size, enforced: a TaskManager's RSS watchdog (streamkernel/runtime/taskmanager/memory_watchdog.py).

A process TaskManager whose RSS grows above ``taskmanager.memory.process.size`` fails with an
error naming the size, the RSS and the key to raise, exits 137, and the job recovers on a
replacement; local TaskManagers only measure; heartbeats carry the measurement.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import pytest

from streamkernel.common import Configuration
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.collect import CollectSink
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.taskmanager.memory_watchdog import (
    OOM_EXIT_CODE,
    ProcessMemoryWatchdog,
    TaskManagerProcessSizeExceededError,
    read_rss_bytes,
    taskmanager_process_spec,
)
from streamkernel.testing import wait_until

MB = 1 << 20
#: A small TaskManager the calculation accepts: the fixed parts shrunk to fit 300m.
SMALL = {"taskmanager.memory.process.size": "300m", "taskmanager.memory.framework.heap.size": "16m",
         "taskmanager.memory.framework.off-heap.size": "16m", "taskmanager.memory.jvm-metaspace.size": "16m",
         "taskmanager.memory.jvm-overhead.min": "16m", "taskmanager.memory.network.min": "8m"}


#: The RSS of the process before any task ran (its baseline, in the tests with a given RSS).
BASELINE = 40 * MB


def _watchdog(conf: dict, rss: int, **kwargs: Any) -> ProcessMemoryWatchdog:
    return ProcessMemoryWatchdog("taskmanager-7", taskmanager_process_spec(conf), conf,
                                 read_rss=lambda: rss, baseline_rss=BASELINE, **kwargs)


# ------------------------------------------------------------------------------ the measure
def test_read_rss_is_this_process_resident_size() -> None:
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("no /proc on this platform")
    before = read_rss_bytes()
    hog = bytearray(b"\x01") * (64 * MB)  # written, hence resident
    after = read_rss_bytes()
    assert before is not None and after is not None and after - before >= 48 * MB
    del hog


def test_below_the_process_size_nothing_happens_and_the_usage_is_reported() -> None:
    usage = _watchdog(SMALL, 100 * MB, enforce=True).usage()
    assert usage is not None and not usage.exceeded
    assert usage.process_size == 300 * MB and usage.rss == 100 * MB and usage.enforced
    assert usage.task_heap == taskmanager_process_spec(SMALL).flink_memory.task_heap.get_bytes()
    assert usage.task_heap_used_estimate == 100 * MB - BASELINE  # what grew since the TaskManager started
    assert _watchdog(SMALL, 100 * MB, enforce=True).check() is None


def test_above_the_process_size_the_error_names_size_rss_and_keys() -> None:
    watchdog = _watchdog(SMALL, 310 * MB, enforce=True)
    usage = watchdog.usage()
    assert usage is not None and usage.exceeded
    # the task heap in use: what grew since the TaskManager started, here above the task heap
    assert usage.task_heap_used_estimate == 310 * MB - BASELINE > usage.task_heap
    error = watchdog.check()
    assert isinstance(error, TaskManagerProcessSizeExceededError)
    text = str(error)
    assert "'taskmanager-7'" in text and "310.000mb (325058560 bytes)" in text and "300.000mb (314572800 bytes)" in text
    assert "raise 'taskmanager.memory.process.size'" in text
    assert "'taskmanager.memory.task.heap.size'" in text  # the component too small


def test_a_flink_size_configuration_is_told_to_raise_the_flink_size() -> None:
    conf = {"taskmanager.memory.flink.size": "1g"}
    watchdog = _watchdog(conf, 4096 * MB, enforce=True)
    assert "raise 'taskmanager.memory.flink.size'" in str(watchdog.check())
    default = _watchdog({}, 4096 * MB, enforce=True)
    assert default.usage().process_size == 1728 * MB  # type: ignore[union-attr]
    assert "Flink's default 1728m" in str(default.check())


def test_an_enforcing_watchdog_calls_back_once_above_the_size() -> None:
    rss = [100 * MB]
    called: list = []
    fired = threading.Event()

    def exceeded(error: BaseException) -> None:
        called.append(error)
        fired.set()

    conf = {**SMALL, "streamkernel.taskmanager.memory.watchdog.interval": "10 ms"}
    watchdog = ProcessMemoryWatchdog("tm", taskmanager_process_spec(conf), conf, enforce=True, on_exceeded=exceeded,
                                     read_rss=lambda: rss[0])
    watchdog.start()
    try:
        rss[0] = 400 * MB
        assert fired.wait(30), "the watchdog did not fire"
        wait_until(lambda: not watchdog._thread.is_alive(), message="the watchdog thread to end")  # type: ignore[union-attr]
    finally:
        watchdog.stop()
    assert len(called) == 1 and "400.000mb" in str(called[0])


def test_measuring_only_and_switched_off_watchdogs_start_no_thread() -> None:
    for enforce, conf in ((False, SMALL), (True, {**SMALL, "streamkernel.taskmanager.memory.watchdog.enabled": "false"})):
        watchdog = _watchdog(conf, 400 * MB, enforce=enforce)
        watchdog.start()
        assert watchdog._thread is None and not watchdog.enforce
        assert watchdog.usage().exceeded  # type: ignore[union-attr]  # still measured


# --------------------------------------------------------------------------- configuration
@pytest.mark.parametrize("conf, key", [
    ({"taskmanager.memory.process.size": "300m"}, "taskmanager.memory.jvm-metaspace.size"),
    ({"taskmanager.memory.process.size": "8 gigs"}, "taskmanager.memory.process.size"),
    ({"streamkernel.taskmanager.memory.watchdog.interval": "0 ms"}, "streamkernel.taskmanager.memory.watchdog.interval"),
])
def test_a_bad_memory_key_fails_at_cluster_start_naming_it(conf: dict, key: str) -> None:
    with pytest.raises((IllegalConfigurationError, ValueError), match=key.replace(".", r"\.")):
        MiniCluster(1, 1, backend="local", configuration=conf, rest=False).start(make_current=False)


def test_local_taskmanagers_report_the_process_memory_in_heartbeats_without_enforcing() -> None:
    with MiniCluster(1, 1, backend="local", configuration=SMALL, rest=False) as cluster:
        [taskmanager] = cluster.taskmanager_backend.taskmanagers
        beat = taskmanager.heartbeat()
    assert beat.memory is not None and beat.memory["process_size"] == 300 * MB and not beat.memory["enforced"]
    assert beat.memory["rss"] > 0  # the kernel's process: measured, never killed (a test process is far above 300m)


# ------------------------------------------------------------------------ process backend
def hog_on_first_attempt(marker: str) -> Any:
    """A map that, in the job's first attempt only, grows a list until its TaskManager dies."""
    def run(value: int) -> int:
        if not os.path.exists(marker):
            open(marker, "w").close()
            hog = [bytearray(b"\x01") * (8 * MB) for _ in range(64)]  # 512 MB, written: far above the 300m
            threading.Event().wait(120)  # the watchdog's process exit ends this wait
            raise AssertionError(f"the memory watchdog did not stop this TaskManager ({len(hog)} chunks held)")
        return value * 10
    return run


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="measures RSS through /proc")
def test_a_process_taskmanager_above_its_size_fails_explained_and_the_job_recovers(tmp_path) -> None:
    marker = str(tmp_path / "first-attempt")
    sink = CollectSink()
    conf = {**SMALL, "streamkernel.taskmanager.memory.watchdog.interval": "100 ms"}
    with MiniCluster(1, 1, backend="process", configuration=conf) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
            "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3",
            "restart-strategy.fixed-delay.delay": "50 ms"}))
        env.set_parallelism(1)
        env.from_collection(list(range(20))).map(hog_on_first_attempt(marker)).sink_to(sink)
        client = env.execute_async("grows beyond its process size")
        result = client.get_job_execution_result().result(120)
        history = client.get_job_details().exception_history
        assert client.get_job_status().result() is JobStatus.FINISHED
        failure = cluster.taskmanager_backend.launcher.failure("taskmanager-1")
        replaced = "taskmanager-2" in cluster.taskmanager_backend.launcher.pids()
    assert sorted(sink.buffer) == [v * 10 for v in range(20)]
    assert result.get_num_restarts() == 1 and replaced
    [entry] = history
    assert entry.exception_name == "TaskManagerProcessSizeExceededError" and entry.restarted
    assert "'taskmanager-1' exceeded its total process memory: resident set size" in entry.message
    assert "300.000mb (314572800 bytes) ('taskmanager.memory.process.size')" in entry.message
    assert "raise 'taskmanager.memory.process.size'" in entry.message
    assert failure is not None and f"exited with code {OOM_EXIT_CODE}" in failure
    assert "exceeded its total process memory" in failure  # and the process's own stderr says why


def test_a_spark_task_enforces_and_a_worker_in_a_thread_only_measures() -> None:
    """(The process backend's worker command enforces: the end-to-end test above.)"""
    from streamkernel.runtime.taskmanager import spark_host, worker

    entry = spark_host._default_entry()  # what a Spark task runs: its Python worker is the TaskManager's
    assert entry.func is worker.run_taskmanager and entry.keywords["enforce_process_size"] is True  # type: ignore[attr-defined]
    import inspect

    assert inspect.signature(worker.run_taskmanager).parameters["enforce_process_size"].default is False
