"""Network memory -> network buffers (issue 19): a TaskManager's buffers from its memory spec,
the buffers each gate and partition needs (Flink's formulas), the deployment failure with
Flink's message on every backend with a network stack, the deprecated credits key, and the
buffer metrics on a TaskManager's heartbeat."""

from __future__ import annotations

import re
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from streamkernel.common import Configuration
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import IllegalConfigurationError, JobExecutionError
from streamkernel.runtime.memory import task_executor_process_spec_from_config
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.network.buffer_pool import (
    InsufficientNetworkBuffersError,
    NetworkBufferPool,
    number_of_network_buffers,
)
from streamkernel.runtime.network.buffer_requirements import (
    NetworkBufferSettings,
    credits_per_channel,
    gate_buffers_spec,
    required_buffers,
    result_partition_buffers,
)
from streamkernel.testing import wait_until
from rest_client import RestClient  # tests/runtime/ is on sys.path

TEN_BUFFERS = {"taskmanager.memory.network.min": "320kb", "taskmanager.memory.network.max": "320kb"}
NETTY = "Status.Shuffle.Netty."


def _flink_message(required: int, available: int, total: int, size: int = 32768) -> str:
    """Flink's NetworkBufferPool text, written out here from its source (not from streamkernel's)."""
    return (f"Insufficient number of network buffers: required {required}, but only {available} available. "
            f"The total number of network buffers is currently set to {total} of {size} bytes each. You can "
            f"increase this number by setting the configuration keys 'taskmanager.memory.network.fraction', "
            f"'taskmanager.memory.network.min', and 'taskmanager.memory.network.max'.")


# ------------------------------------------------------------------ buffers from the spec
@pytest.mark.parametrize("conf, expected", [
    ({}, 128 * 1024 * 1024 // 32768),  # Flink's shipped 1728m: 1280m Flink memory, network 0.1 of it = 128m
    ({"taskmanager.memory.process.size": "1728m", "taskmanager.memory.segment-size": "64kb"}, 2048),
    (TEN_BUFFERS, 10),
    ({"taskmanager.memory.network.min": "1m", "taskmanager.memory.network.max": "1m",
      "taskmanager.memory.segment-size": "4kb"}, 256),
])
def test_a_taskmanagers_buffers_are_its_network_memory_divided_by_the_segment_size(conf: dict, expected: int) -> None:
    buffers, size = number_of_network_buffers(conf)
    assert (buffers, size) == (expected, int(conf.get("taskmanager.memory.segment-size", "32kb")[:-2]) * 1024)


def test_the_buffers_follow_the_memory_spec_of_a_big_taskmanager() -> None:
    conf = {"taskmanager.memory.process.size": "8g", "taskmanager.numberOfTaskSlots": "4"}
    network = task_executor_process_spec_from_config(conf).flink_memory.network.get_bytes()
    assert network == 746250577  # 0.1 (as a Java float) of the 8g TaskManager's Flink memory (docs/memory.md)
    assert number_of_network_buffers(conf) == (network // 32768, 32768) == (22773, 32768)


@pytest.mark.parametrize("size, reason", [("1kb", "Minimum memory segment size is 4096"),
                                          ("48kb", "Memory segment size must be a power of 2.")])
def test_a_bad_segment_size_names_the_key(size: str, reason: str) -> None:
    with pytest.raises(IllegalConfigurationError, match=f"taskmanager.memory.segment-size : .* - {reason}"):
        number_of_network_buffers({"taskmanager.memory.segment-size": size})


def test_a_bad_memory_key_fails_at_cluster_start_naming_it() -> None:
    cluster = MiniCluster(1, 1, configuration={"taskmanager.memory.segment-size": "3000"})
    with pytest.raises(IllegalConfigurationError, match="taskmanager.memory.segment-size"):
        cluster.start()
    cluster.stop()


# ------------------------------------------------------------------ requirements per gate
def test_gate_and_partition_requirements_are_flinks() -> None:
    # Flink's InputGateSpecUtils for a pipelined gate: n x buffers-per-channel + 1 at least,
    # n x buffers-per-channel + floating at most; a partition: s + 1 .. s x buffers-per-channel + floating
    for n in (1, 3, 16):
        spec = gate_buffers_spec(n)
        assert (spec.effective_exclusive_buffers_per_channel, spec.min_buffers_per_gate,
                spec.max_buffers_per_gate) == (2, 2 * n + 1, 2 * n + 8)
        assert result_partition_buffers(n) == (n + 1, 2 * n + 8)
    settings = NetworkBufferSettings(buffers_per_channel=0, floating_buffers_per_gate=3)
    assert gate_buffers_spec(4, settings).min_buffers_per_gate == 1  # all floating: one buffer at least
    assert result_partition_buffers(4, settings) == (5, 5)


def _tdd(input_edges: dict[int, int], subpartitions: tuple[int, ...]) -> Any:
    inputs = [SimpleNamespace(channel_id=SimpleNamespace(edge_index=edge)) for edge, n in input_edges.items()
              for _ in range(n)]
    outputs = [SimpleNamespace(channel_ids=tuple(range(s))) for s in subpartitions]
    return SimpleNamespace(inputs=inputs, outputs=outputs)


def test_a_task_needs_one_gate_per_input_edge_plus_its_partitions() -> None:
    settings = NetworkBufferSettings()
    # a two-input task: gates of 4 and 2 channels, one partition of 3 subpartitions
    assert required_buffers(_tdd({0: 4, 1: 2}, (3,)), settings) == (4 * 2 + 1) + (2 * 2 + 1) + (3 + 1)
    assert required_buffers(_tdd({}, (2, 2)), settings) == 3 + 3  # a source with two out edges
    # credits: exclusive buffers + an even share of the floating ones (8 per gate)
    assert credits_per_channel(_tdd({0: 1}, ()), settings) == 2 + 8
    assert credits_per_channel(_tdd({0: 4, 1: 4}, ()), settings) == 2 + 16 // 8
    assert credits_per_channel(_tdd({0: 32}, ()), settings) == 2
    assert credits_per_channel(_tdd({0: 32}, ()), NetworkBufferSettings(0, 8)) == 1


def test_credits_per_channel_is_a_deprecated_alias_of_buffers_per_channel() -> None:
    old = NetworkBufferSettings.from_configuration({"taskmanager.network.credits-per-channel": "5"})
    assert old == NetworkBufferSettings(buffers_per_channel=5, floating_buffers_per_gate=8)
    both = {"taskmanager.network.credits-per-channel": "5", "taskmanager.network.memory.buffers-per-channel": "3"}
    assert NetworkBufferSettings.from_configuration(both).buffers_per_channel == 3  # Flink's key wins
    assert NetworkBufferSettings.from_configuration({}) == NetworkBufferSettings(2, 8)
    with pytest.raises(IllegalConfigurationError, match="'taskmanager.network.credits-per-channel'"):
        NetworkBufferSettings.from_configuration({"taskmanager.network.credits-per-channel": "-1"})


def test_the_pool_refuses_with_flinks_message_and_takes_back_what_ends() -> None:
    pool = NetworkBufferPool(10, 32768)
    pool.reserve("a", 7)
    with pytest.raises(InsufficientNetworkBuffersError) as caught:
        pool.reserve("b", 5)
    assert str(caught.value) == _flink_message(5, 3, 10)
    assert pool.required == 7  # the refused task holds nothing
    pool.release("a")
    pool.reserve("b", 10)
    assert pool.available == 0


# --------------------------------------------------------------- failure at deployment
def _keyed_job(conf: dict, parallelism: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.set_parallelism(parallelism)
    env.from_collection(list(range(50))).key_by(lambda x: x % 5).map(lambda x: x * 2).print()
    return env


@pytest.mark.parametrize("backend", ["local", "process"])
def test_too_few_buffers_fail_the_job_at_deployment_with_flinks_message(backend: str) -> None:
    # one TaskManager of 4 slots and 10 buffers: the source's partition needs 4 + 1, each of the
    # 4 keyed subtasks 1 x 2 + 1 for its gate: 17 > 10
    conf = dict(TEN_BUFFERS, **{"restart-strategy.type": "none"})
    with MiniCluster(1, 4, backend=backend, configuration=conf) as cluster:
        client = _keyed_job({}, 4).execute_async("too few buffers")
        with pytest.raises(JobExecutionError, match="Insufficient number of network buffers"):
            client.get_job_execution_result().result(60)
        details = client.get_job_details()
        status, rest = RestClient(cluster.rest_url or "").get(f"/jobs/{client.get_job_id()}/exceptions")
    assert status == 200 and "Insufficient number of network buffers: required" in rest["root-exception"]
    [entry] = details.exception_history
    assert entry.exception_name == "InsufficientNetworkBuffersError"
    match = re.fullmatch(r"Insufficient number of network buffers: required (\d+), but only (\d+) available\. .*",
                         entry.message)
    assert match, entry.message
    required, available = int(match[1]), int(match[2])
    assert required in (5, 3) and available < required and entry.message == _flink_message(required, available, 10)


def test_the_restart_strategy_decides_after_a_buffer_failure() -> None:
    conf = dict(TEN_BUFFERS, **{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "2",
                                "restart-strategy.fixed-delay.delay": "1 ms"})
    with MiniCluster(1, 4, configuration=conf):
        client = _keyed_job({}, 4).execute_async("restarted, never enough")
        with pytest.raises(JobExecutionError, match="after 2 restarts: InsufficientNetworkBuffersError"):
            client.get_job_execution_result().result(60)
        assert client.get_job_details().num_restarts == 2


def test_enough_buffers_run_the_same_job() -> None:
    conf = {"taskmanager.memory.network.min": "544kb", "taskmanager.memory.network.max": "544kb"}  # 17 buffers
    with MiniCluster(1, 4, configuration=conf) as cluster:
        _keyed_job({}, 4).execute("exactly enough buffers")
        assert [job.status for job in cluster.jobs()] == [JobStatus.FINISHED]


# ------------------------------------------------------------------------------ metrics
def test_the_heartbeat_carries_the_buffers_reserved_and_holding_data() -> None:
    release = threading.Event()

    def held(x: int) -> int:
        release.wait(30)
        return x

    conf = {"taskmanager.network.batch-size": "1"}  # a buffer per record
    with MiniCluster(1, 2, configuration=TEN_BUFFERS) as cluster:
        [taskmanager] = cluster.taskmanager_backend.taskmanagers
        assert taskmanager.heartbeat().metrics[NETTY + "RequiredMemorySegments"] == 0
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
        env.set_parallelism(1)
        env.from_collection(list(range(100))).rebalance().map(held).print()
        client = env.execute_async("held")
        try:
            # the source's partition (1 subpartition: 2) + the map's gate (1 channel: 1 x 2 + 1);
            # the map's channel holds its credits (2 exclusive + 8 floating) of data while the map waits
            metrics = wait_until(lambda: (m := taskmanager.heartbeat().metrics)[NETTY + "UsedMemorySegments"] == 10
                                 and m, 30, "the held map's channel full")
            assert metrics[NETTY + "RequiredMemorySegments"] == 2 + 3
            assert metrics[NETTY + "TotalMemorySegments"] == 10 and metrics[NETTY + "AvailableMemorySegments"] == 0
            assert metrics[NETTY + "TotalMemory"] == 10 * 32768
        finally:
            release.set()
        client.get_job_execution_result().result(30)
        wait_until(lambda: taskmanager.heartbeat().metrics[NETTY + "RequiredMemorySegments"] == 0, 10,
                   "the ended tasks' buffers back")


def test_a_taskmanager_process_computes_its_buffers_and_reports_them_to_rest() -> None:
    conf = {"taskmanager.memory.network.min": "2m", "taskmanager.memory.network.max": "2m",
            "taskmanager.memory.segment-size": "64kb"}
    with MiniCluster(1, 1, backend="process", configuration=conf) as cluster:
        [taskmanager_id] = cluster.resource_manager.taskmanager_ids
        metrics = cluster.resource_manager.task_executor_gateway(taskmanager_id).heartbeat().metrics
        rest = RestClient(cluster.rest_url or "")
        shown = wait_until(lambda: (b := rest.get(f"/taskmanagers/{taskmanager_id}")[1]["metrics"])
                           ["nettyShuffleMemorySegmentsTotal"] and b, 30, "REST showing the buffers (next heartbeat)")
    assert metrics[NETTY + "TotalMemorySegments"] == 32 and metrics[NETTY + "TotalMemory"] == 2 * 1024 * 1024
    assert metrics[NETTY + "RequiredMemorySegments"] == metrics[NETTY + "UsedMemorySegments"] == 0
    assert (shown["nettyShuffleMemorySegmentsTotal"], shown["nettyShuffleMemorySegmentsAvailable"],
            shown["nettyShuffleMemorySegmentsUsed"], shown["nettyShuffleMemoryTotal"]) == (32, 32, 0, 2 * 1024 * 1024)
