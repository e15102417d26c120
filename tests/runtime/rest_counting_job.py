"""A running count for the REST action tests: its output shows whether a job resumed from a savepoint.

The job reads 0, 1, 2 ... (200 a second, forever unless ``count`` is given) and emits
``(value, number of values seen so far)`` into ``out`` (the local backend runs it in this
process). A job started from scratch emits ``(0, 1)`` first; one restored from a savepoint
emits ``(n, n + 1)`` with n > 0: the source's position and the count were both restored.
"""

from __future__ import annotations

from typing import Optional

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
from streamkernel.testing.waiting import wait_until


def start_counting_job(cluster: MiniCluster, out: list, name: str = "running count",
                       configuration: Optional[dict] = None, count: Optional[int] = None,
                       rate: Optional[float] = 200.0) -> str:
    """Submit the running count to ``cluster`` and return its job id once it is RUNNING."""
    set_current_cluster(cluster)
    try:
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(configuration or {}))
        env.set_parallelism(1)
        env.from_source(DataGeneratorSource(lambda i: i, count, rate), WatermarkStrategy.no_watermarks(),
                        "numbers").uid("numbers") \
            .map(lambda i: (i, 1)).uid("ones") \
            .key_by(lambda t: 0).reduce(lambda a, b: (b[0], a[1] + b[1])).uid("count").name("count") \
            .add_sink(out.append).uid("sink").name("collect")
        job_id = str(env.execute_async(name).get_job_id())
    finally:
        set_current_cluster(None)
    if count is None:
        wait_until(lambda: cluster.dispatcher.request_job_status(job_id) is JobStatus.RUNNING and len(out) > 0,
                   message=f"job {name!r} to run and emit")
    return job_id


def wait_for_status(cluster: MiniCluster, job_id: str, status: JobStatus) -> None:
    """Wait until the job reached ``status``."""
    wait_until(lambda: cluster.dispatcher.request_job_status(job_id) is status,
               message=f"job {job_id} to be {status.name} (it is {cluster.dispatcher.request_job_status(job_id)})")
