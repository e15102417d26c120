"""A cluster serving the REST API with one running, checkpointing job, for the REST tests."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

from rest_client import RestClient

from streamkernel.common.job_status import JobStatus
from streamkernel.common.watermark_strategy import WatermarkStrategy
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
from streamkernel.testing.waiting import wait_until


@dataclass
class RunningJob:
    """The cluster, its REST client and the running job's id."""

    cluster: MiniCluster
    client: RestClient
    job_id: str


@contextlib.contextmanager
def running_job(backend: str = "local") -> Iterator[RunningJob]:
    """A 2 x 2 slot cluster on any free port running "rest job": generator (parallelism 2) ->
    map -> rebalance -> sink, checkpointing every 150 ms; yields once a checkpoint completed."""
    cluster = MiniCluster(2, 2, backend=backend, configuration={"rest.port": "0"}).start(make_current=False)
    try:
        set_current_cluster(cluster)
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.enable_checkpointing(150)
        env.from_source(DataGeneratorSource(lambda i: i, None, 2000), WatermarkStrategy.for_monotonous_timestamps()
                        .with_timestamp_assigner(lambda value, ts: value), "numbers") \
            .map(lambda x: x + 1).name("plus one").rebalance().add_sink(lambda x: None).name("discard")
        job = env.execute_async("rest job")
        set_current_cluster(None)
        job_id = str(job.get_job_id())

        def checkpointed() -> bool:
            details = cluster.dispatcher.request_job_details(job_id)
            return (details.status is JobStatus.RUNNING and details.checkpoints is not None
                    and details.checkpoints.num_completed > 0)

        wait_until(checkpointed, message="a completed checkpoint of the running job")
        assert cluster.rest_url is not None
        yield RunningJob(cluster, RestClient(cluster.rest_url), job_id)
    finally:
        set_current_cluster(None)
        cluster.stop()
