"""The values behind Flink's metric ids, end to end: a job of the issue's shape (generator ->
rebalance -> map -> key_by -> KeyedProcessFunction with timers -> sink, checkpoints every 500 ms)
on a cluster serving REST, its task and operator metrics read back as Flink's clients read them
(strings, by id). test_flink_rest_fidelity.py checks the ids and shapes against Flink's; this
checks that the figures are the job's (counted, not zeros standing in)."""

from __future__ import annotations

from typing import Iterator

import pytest
from rest_client import RestClient  # tests/runtime/ is on sys.path
from rest_shaped_job import shaped_job
from rest_walk import topological

from streamkernel.common.watermark_strategy import MIN_WATERMARK
from streamkernel.testing.waiting import wait_until


@pytest.fixture(scope="module")
def job() -> Iterator[tuple[RestClient, str, dict[str, str]]]:
    """The REST client, the job's id and its vertices' ids by role."""
    with shaped_job() as (cluster, job_id):
        assert cluster.rest_url is not None
        client = RestClient(cluster.rest_url)
        nodes = client.ok(f"/jobs/{job_id}/plan")["plan"]["nodes"]
        yield client, job_id, dict(zip(("source", "map", "keyed"), topological(nodes)))


def _values(client: RestClient, job_id: str, vertex: str, *names: str) -> dict[str, str]:
    path = f"/jobs/{job_id}/vertices/{vertex}/subtasks/0/metrics?get={','.join(names)}"
    return {m["id"]: m["value"] for m in client.ok(path)}


def test_the_keyed_tasks_timers_mailbox_checkpoints_and_watermarks(job: tuple[RestClient, str, dict[str, str]]) -> None:
    client, job_id, vertices = job
    names = ("numFiredTimers", "numFiredTimersPerSecond", "mailboxMailsPerSecond", "mailboxLatencyMs_max",
             "mailboxLatencyMs_min", "checkpointAlignmentTime", "checkpointStartDelayNanos", "initializationTime",
             "numBuffersInLocal", "numBuffersInRemote", "isBackPressured", "currentInputWatermark",
             "count_per_key.currentInputWatermark", "count_per_key.currentOutputWatermark",
             "Sink__discard.currentInputWatermark", "Sink__discard.numRecordsSend", "count_per_key.numRecordsOutPerSecond")

    def ready() -> dict[str, str]:
        values = _values(client, job_id, vertices["keyed"], *names)
        return values if len(values) == len(names) and int(values["numFiredTimers"]) > 0 \
            and float(values["numFiredTimersPerSecond"]) > 0 and float(values["mailboxMailsPerSecond"]) > 0 else {}

    values = wait_until(ready, timeout=60, message="the keyed task's timers firing and its mailbox running")
    assert float(values["mailboxLatencyMs_max"]) >= float(values["mailboxLatencyMs_min"]) >= 0
    assert int(values["checkpointStartDelayNanos"]) > 0 and int(values["checkpointAlignmentTime"]) >= 0
    assert int(values["initializationTime"]) >= 0 and values["isBackPressured"] in ("true", "false")
    assert int(values["numBuffersInLocal"]) > 0 and int(values["numBuffersInRemote"]) == 0  # one process
    task_input = int(values["currentInputWatermark"])
    assert task_input > MIN_WATERMARK and int(values["count_per_key.currentInputWatermark"]) == task_input
    # the chain's link records what passes: the process function's output is the sink's input
    assert int(values["Sink__discard.currentInputWatermark"]) <= int(values["count_per_key.currentOutputWatermark"])
    assert int(values["Sink__discard.numRecordsSend"]) > 0 and float(values["count_per_key.numRecordsOutPerSecond"]) >= 0


def test_the_sources_flip_33_metrics_and_buffers(job: tuple[RestClient, str, dict[str, str]]) -> None:
    client, job_id, vertices = job
    names = ("Source__numbers.currentEmitEventTimeLag", "Source__numbers.watermarkLag",
             "Source__numbers.sourceIdleTime", "Source__numbers.currentOutputWatermark", "numBuffersOut",
             "numBuffersOutPerSecond", "numRecordsOutPerSecond", "Shuffle.Netty.Output.Buffers.outPoolUsage")
    values = wait_until(lambda: (v := _values(client, job_id, vertices["source"], *names)) and len(v) == len(names)
                        and float(v["numRecordsOutPerSecond"]) > 0 and v, timeout=60,
                        message="the source's metrics with a recent rate")
    watermark = int(values["Source__numbers.currentOutputWatermark"])
    assert watermark > MIN_WATERMARK  # event time = the generated value: tiny epoch milliseconds, far behind now
    assert int(values["Source__numbers.watermarkLag"]) > 0 and int(values["Source__numbers.currentEmitEventTimeLag"]) > 0
    assert 0 <= int(values["Source__numbers.sourceIdleTime"]) < 30_000  # it emits 200 records a second
    assert int(values["numBuffersOut"]) > 0 and 0.0 <= float(values["Shuffle.Netty.Output.Buffers.outPoolUsage"]) <= 1.0
    ids = {m["id"] for m in client.ok(f"/jobs/{job_id}/vertices/{vertices['source']}/subtasks/0/metrics")}
    assert "currentInputWatermark" not in ids and "checkpointAlignmentTime" not in ids  # a source task has no input


def test_pool_usage_and_the_taskmanagers_requested_memory(job: tuple[RestClient, str, dict[str, str]]) -> None:
    client, job_id, vertices = job
    usage = _values(client, job_id, vertices["map"], "Shuffle.Netty.Input.Buffers.inPoolUsage",
                    "Shuffle.Netty.Input.Buffers.inputExclusiveBuffersUsage")
    assert all(0.0 <= float(v) <= 1.0 for v in usage.values()) and len(usage) == 2
    netty = "Status.Shuffle.Netty."
    required = 0
    for tm in ("taskmanager-1", "taskmanager-2"):
        path = f"/taskmanagers/{tm}/metrics?get={netty}RequestedMemoryUsage,{netty}RequiredMemorySegments," \
               f"{netty}TotalMemorySegments"
        values = {m["id"].removeprefix(netty): int(m["value"]) for m in client.ok(path)}
        # the buffers the deployed tasks reserved, in percent of the TaskManager's (truncated, as Flink's int)
        assert values["RequestedMemoryUsage"] == values["RequiredMemorySegments"] * 100 // values["TotalMemorySegments"]
        required += values["RequiredMemorySegments"]
    assert required > 0
