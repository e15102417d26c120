"""Records never wait behind a batch (issue 31): a task hands its chain as many records as take
about its time budget, so behind a slow operator a record reaches the next task after a few
records' time, not after a whole batch (``taskmanager.network.batch-size``, 1,024 records), and a
cancel stops the task between two records. ``execution.buffer-timeout`` 0 flushes after every
batch, -1 only full buffers. The figures (latency, cancel time, checkpoints) are in
``bench/bench_latency.py``; these tests count records, not time."""

from __future__ import annotations

import threading
import time
from typing import Any

from streamkernel.common import Configuration
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.runtime.tasks.batch_budget import BatchBudget, budget_ns
from streamkernel.testing import wait_until

SLOW_S = 0.01


class Probe:
    """How many records the slow map processed, and how many it had when the first record reached
    the sink (a thread of the same local cluster)."""

    def __init__(self) -> None:
        self.slow_calls = 0
        self.at_first_arrival: Any = None
        self.arrived = 0
        self.lock = threading.Lock()

    def slow(self, value: int) -> int:
        time.sleep(SLOW_S)
        with self.lock:
            self.slow_calls += 1
        return value

    def sink(self, value: int) -> None:
        with self.lock:
            if self.at_first_arrival is None:
                self.at_first_arrival = self.slow_calls
            self.arrived += 1


def _env(**conf: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.set_parallelism(1)
    return env


def _run_until_first_arrival(env: StreamExecutionEnvironment, probe: Probe, slow_after_shuffle: bool) -> Any:
    stream = env.from_collection(list(range(3000)))
    if slow_after_shuffle:  # the slow operator heads a task with an input: it gets whole buffers
        stream = stream.rebalance()
    stream.map(probe.slow).rebalance().map(lambda v: v).add_sink(probe.sink)
    client = env.execute_async("slow map")
    try:
        wait_until(lambda: probe.at_first_arrival is not None, timeout=120, message="the first record at the sink")
    finally:
        client.cancel().result()
    return probe.at_first_arrival


def test_behind_a_slow_source_chain_a_record_reaches_the_next_task_after_a_few_records_not_a_batch() -> None:
    probe = Probe()
    at_first = _run_until_first_arrival(_env(**{"execution.buffer-timeout.interval": "0 ms"}), probe, False)
    # a batch of 1,024 records went through the slow map before anything left the task, before
    assert at_first < 16, f"the first record left the task after the slow map processed {at_first} records"


def test_behind_a_slow_head_of_a_task_with_input_a_buffer_is_handed_on_in_slices() -> None:
    probe = Probe()
    at_first = _run_until_first_arrival(_env(**{"execution.buffer-timeout.interval": "0 ms"}), probe, True)
    assert at_first < 16, f"the first record left the task after the slow map processed {at_first} records"


def test_buffer_timeout_minus_one_flushes_only_full_buffers() -> None:
    probe = Probe()
    env = _env(**{"execution.buffer-timeout.enabled": "false", "taskmanager.network.batch-size": "8"})
    at_first = _run_until_first_arrival(env, probe, False)
    assert at_first >= 8, f"a partly filled buffer was flushed after {at_first} records with buffer timeout -1"


def test_a_cancel_stops_the_task_between_two_records_of_a_slow_map() -> None:
    probe = Probe()
    env = _env()
    env.from_collection(list(range(3000))).map(probe.slow).add_sink(lambda v: None)
    client = env.execute_async("cancel a slow map")
    wait_until(lambda: probe.slow_calls >= 3, timeout=120, message="the slow map's first records")
    calls_at_cancel = probe.slow_calls
    client.cancel().result()
    wait_until(lambda: client.get_job_status().result() is JobStatus.CANCELED, timeout=120, message="CANCELED")
    wait_until(lambda: not [t for t in threading.enumerate() if t.name.startswith("Source: Collection Source")],
               timeout=120, message="the task's thread gone")
    # a whole batch (1,024 records, 10 s) went on after the cancel, before
    assert probe.slow_calls - calls_at_cancel <= 3, (calls_at_cancel, probe.slow_calls)


def test_the_budget_follows_the_cost_of_a_record() -> None:
    budget = BatchBudget(1024, budget_ns(100))
    assert budget.size == 1  # the first batch of a task: one record, its cost unknown
    budget.measured(1, 25_000_000)
    assert budget.size == 1
    budget.measured(1, 2_000)
    assert budget.size == 1024  # a fast chain gets whole batches
    budget.measured(1024, 40_960_000)  # 40 us a record: 250 fit in 10 ms
    assert budget.size == 250
    budget.measured(0, 0)
    assert budget.size == 250  # nothing read: nothing learnt
    assert budget_ns(0) == 1_000_000 and budget_ns(20) == 2_000_000 and budget_ns(5_000) == 10_000_000
