"""Bytes read and written per vertex (Flink's read-bytes / write-bytes, numBytesIn / numBytesOut):
the frames that crossed a process boundary, counted by the producer and by the consumer alike."""

from __future__ import annotations

from rest_client import RestClient  # tests/runtime/ is on sys.path

from streamkernel.common.watermark_strategy import WatermarkStrategy
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
from streamkernel.testing.waiting import wait_until


def _run(cluster: MiniCluster) -> dict:
    set_current_cluster(cluster)
    try:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.from_source(DataGeneratorSource(lambda i: ("key", i), 3000), WatermarkStrategy.no_watermarks(), "pairs") \
            .rebalance().map(lambda pair: pair[1]).name("values").add_sink(lambda x: None).name("discard")
        job_id = str(env.execute_async("bytes").get_job_id())
    finally:
        set_current_cluster(None)
    client = RestClient(cluster.rest_url or "")
    wait_until(lambda: client.ok(f"/jobs/{job_id}/execution-result")["status"]["id"] == "COMPLETED",
               message="the job to finish")
    def finished() -> dict | None:
        details = client.ok(f"/jobs/{job_id}")
        return details if details["state"] == "FINISHED" else None

    details = wait_until(finished, message="the job's details to show FINISHED")
    return {vertex["name"]: vertex["metrics"] for vertex in details["vertices"]}


def test_bytes_between_taskmanager_processes_are_counted_on_both_sides() -> None:
    with MiniCluster(2, 1, backend="process", configuration={"rest.port": "0"}) as cluster:
        metrics = _run(cluster)
    set_current_cluster(None)
    source, consumer = metrics["Source: pairs"], metrics["values -> Sink: discard"]
    assert source["write-bytes-complete"] and consumer["read-bytes-complete"]
    assert source["write-records"] == consumer["read-records"] == 3000
    # half of a rebalance's records go to the other process: marshalled, at least a byte each
    assert source["write-bytes"] > 1500
    assert consumer["read-bytes"] == source["write-bytes"]


def test_an_exchange_inside_one_process_moves_objects_and_counts_no_bytes() -> None:
    with MiniCluster(1, 2, backend="local", configuration={"rest.port": "0"}) as cluster:
        metrics = _run(cluster)
    set_current_cluster(None)
    source, consumer = metrics["Source: pairs"], metrics["values -> Sink: discard"]
    assert source["write-records"] == consumer["read-records"] == 3000
    assert source["write-bytes"] == consumer["read-bytes"] == 0
