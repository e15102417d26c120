"""streamkernel's run of the job whose REST answers Flink 2.3 recorded (``flink_rest_answers.json``).

The same shape as ``scripts/flink_rest_oracle/RestShapeJob.java``: a rate-limited generator
(parallelism 2, event time from the values) -> rebalance -> map -> key_by -> a
KeyedProcessFunction counting per key in ValueState with an event-time timer -> a discarding
sink, checkpointing every 500 ms, on 2 TaskManagers x 2 slots.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from typing import Any, Iterator

from streamkernel.common.job_status import JobStatus
from streamkernel.common.typeinfo import Types
from streamkernel.common.watermark_strategy import WatermarkStrategy
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.function_process import KeyedProcessFunction
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
from streamkernel.testing.waiting import wait_until

__all__ = ["CountPerKey", "OPERATOR_GROUPS", "shaped_job"]

#: Our metric groups of the job's operators (as metric ids spell them) -> their role.
OPERATOR_GROUPS = {"Source__numbers": "source", "plus_one": "map", "count_per_key": "process", "Sink__discard": "sink"}


class CountPerKey(KeyedProcessFunction):
    """Counts each key's records in ValueState; an event-time timer a second later emits the count."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1000)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield self.count.value()


@contextlib.contextmanager
def shaped_job(backend: str = "local") -> Iterator[tuple[MiniCluster, str]]:
    """The cluster (its TaskManagers on ``backend``) and the job's id, once the job ran with three
    checkpoints completed and every subtask's metrics in a heartbeat."""
    checkpoints = tempfile.mkdtemp(prefix="rest-shaped-job-")
    cluster = MiniCluster(2, 2, backend=backend, configuration={"rest.port": "0"}).start(make_current=False)
    try:
        set_current_cluster(cluster)
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.enable_checkpointing(500)
        env.get_checkpoint_config().set_checkpoint_storage_dir(checkpoints)
        numbers = env.from_source(
            DataGeneratorSource(lambda i: i, None, 200.0),
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda value, ts: value), "numbers")
        numbers.rebalance().map(lambda v: v + 1).name("plus one") \
            .key_by(lambda v: v % 10).process(CountPerKey()).name("count per key") \
            .add_sink(lambda v: None).name("discard")
        job_id = str(env.execute_async("rest shape job").get_job_id())
        set_current_cluster(None)

        def ready() -> bool:
            details = cluster.dispatcher.request_job_details(job_id)
            live = {t.attempt_id for tm in cluster.resource_manager.taskmanager_snapshots()
                    if tm.last_heartbeat is not None for t in tm.last_heartbeat.tasks}
            return (details.status is JobStatus.RUNNING and details.checkpoints is not None
                    and details.checkpoints.num_completed >= 3 and len(live) == len(details.subtasks))

        wait_until(ready, timeout=60, message="the shaped job running, three checkpoints completed, "
                                              "every subtask in a heartbeat")
        yield cluster, job_id
    finally:
        set_current_cluster(None)
        cluster.stop()
        shutil.rmtree(checkpoints, ignore_errors=True)
