"""Unaligned vs aligned checkpoints (with and without buffer debloating) of a backpressured job (issue 15).

A fast source feeds a slow keyed operator (2 ms per record, notebook 06's "Enrich"):
its input channels stay full, so an aligned barrier queues behind every buffered record,
while an unaligned one overtakes them (they are stored as in-flight data). For each mode
the bench runs the same job, triggers a checkpoint and prints how long it took, then lets
periodic checkpoints (300 ms interval) run for N seconds and counts how many completed.
Three modes, same job, same run: aligned, aligned with buffer debloating
(``taskmanager.network.memory.buffer-debloat.enabled``: the operator shrinks its senders'
buffers to about 1 s of its throughput, so the barrier waits behind far fewer records), and
unaligned.

With ``--backend process`` the job runs on two TaskManager processes of one slot each, the
slow operator in its own slot sharing group: the keyed edge is a TCP channel, whose barrier
goes out without credit and is announced to the receiving gate.

    PYTHONPATH=$PWD python bench/bench_unaligned.py [--seconds 6] [--warmup 20] [--batch-size 256] [--backend process]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from typing import Any

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import wait_until

SLOW_MS = 2.0


class SlowCount(KeyedProcessFunction):
    """Counts per key, 2 ms per record: the backpressuring operator."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", None))

    def process_element(self, value: Any, ctx: Any) -> Any:
        time.sleep(SLOW_MS / 1000)
        self.count.update((self.count.value() or 0) + 1)
        yield value[0], self.count.value()


def build(unaligned: bool, interval_ms: int, batch_size: int, directory: str,
          remote: bool = False, debloat: bool = False) -> StreamExecutionEnvironment:
    conf = {"execution.checkpointing.dir": directory,
            "taskmanager.network.memory.buffer-debloat.enabled": str(debloat).lower()}
    if batch_size:
        conf["taskmanager.network.batch-size"] = str(batch_size)
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.enable_checkpointing(interval_ms)
    env.get_checkpoint_config().enable_unaligned_checkpoints(unaligned)
    env.set_parallelism(1)
    source = DataGeneratorSource(lambda i: (f"w{i % 5}", i), count=None)
    counts = (env.from_source(source, WatermarkStrategy.no_watermarks(), "events").uid("events")
              .key_by(lambda p: p[0]).process(SlowCount()).uid("count").name("SlowCount"))
    if remote:  # its own slot, in the other TaskManager: the keyed edge crosses TCP
        counts = counts.slot_sharing_group("slow")
    counts.add_sink(lambda pair: None).uid("sink")
    return env


def running(client: Any) -> bool:
    return client.get_job_status().result() is JobStatus.RUNNING and all(
        s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


def latest_completed(cluster: MiniCluster, job_id: Any) -> Any:
    """The job's latest completed checkpoint's statistics (None until reported)."""
    snapshot = cluster.checkpoints.checkpoint_stats(job_id)
    return None if snapshot is None else snapshot.latest_completed


MODES = {"aligned": (False, False), "debloated": (False, True), "unaligned": (True, False)}


def measure(cluster: MiniCluster, mode: str, seconds: float, batch_size: int, warmup: float) -> dict:
    remote = cluster.backend != "local"
    unaligned, debloat = MODES[mode]
    directory = tempfile.mkdtemp(prefix="bench-unaligned-")
    # one triggered checkpoint (periodic ones off: a day's interval)
    client = build(unaligned, 86_400_000, batch_size, directory, remote, debloat).execute_async("triggered")
    job_id = client.get_job_id()
    wait_until(lambda: running(client), message="the job running")
    time.sleep(warmup)  # the channels fill up (backpressure) and debloating converges
    start = time.perf_counter()
    cluster.checkpoints.trigger_checkpoint(job_id, timeout=120)
    triggered_s = time.perf_counter() - start
    stats = wait_until(lambda: latest_completed(cluster, job_id),
                       message="the completed checkpoint's statistics")  # reported after the trigger returns
    client.cancel().result()
    # periodic checkpoints every 300 ms for ``seconds``
    client = build(unaligned, 300, batch_size, directory + "-periodic", remote, debloat).execute_async("periodic")
    job_id = client.get_job_id()
    wait_until(lambda: running(client), message="the job running")
    time.sleep(warmup)
    before = cluster.checkpoints.checkpoint_stats(job_id).num_completed
    time.sleep(seconds)
    completed = cluster.checkpoints.checkpoint_stats(job_id).num_completed - before
    client.cancel().result()
    for leftover in (directory, directory + "-periodic"):  # the checkpoints the bench wrote
        shutil.rmtree(leftover, ignore_errors=True)
    return {"mode": mode, "checkpoint_s": triggered_s,
            "unaligned": stats.unaligned, "persisted_bytes": stats.persisted_data,
            "completed_in_window": completed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="window of periodic checkpoints")
    parser.add_argument("--warmup", type=float, default=20.0,
                        help="seconds before measuring: channels fill up, debloating converges (the first "
                             "full buffers take credits x batch-size x 2 ms to drain)")
    parser.add_argument("--batch-size", type=int, default=0,
                        help="taskmanager.network.batch-size (0: the default, 1024 records)")
    parser.add_argument("--backend", choices=("local", "process"), default="local",
                        help="local: TaskManager threads; process: 2 TaskManager processes, a TCP channel")
    args = parser.parse_args()
    cluster = MiniCluster(1, 2) if args.backend == "local" else MiniCluster(2, 1, backend=args.backend)
    print(f"backend {args.backend}")
    with cluster:
        for mode in MODES:
            r = measure(cluster, mode, args.seconds, args.batch_size, args.warmup)
            print(f"{r['mode']:<10} triggered checkpoint {r['checkpoint_s']:6.2f} s  "
                  f"(unaligned={r['unaligned']}, persisted {r['persisted_bytes']} bytes)   "
                  f"periodic 300 ms: {r['completed_in_window']} completed in {args.seconds:g} s")


if __name__ == "__main__":
    main()
