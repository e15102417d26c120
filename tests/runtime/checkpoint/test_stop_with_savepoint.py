"""Stop-with-savepoint with Flink's semantics: a synchronous savepoint, then the job FINISHES.

The sources stop at the savepoint's barrier, so nothing read after it reaches any sink:
restoring the savepoint gives exactly the output of a run without the stop, for a
two-phase-commit sink (FileSink) and for a plain one (a function appending to a file) alike.
Without drain, event-time windows still open stay in the savepoint (no end of input); with
drain (Flink's ``--drain``, MAX_WATERMARK first) they fire before the job finishes.

The scripted sources pause a few milliseconds between records so that a job is still
running when the test stops it; no assertion depends on where it stops.
"""

from __future__ import annotations

import collections
import pathlib
import threading
from typing import Any, Optional

import pytest

from streamkernel.common import Configuration, Duration, Types, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.common.serialization import Encoder
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, RollingPolicy
from streamkernel.datastream.functions import MapFunction, RuntimeContext
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.errors import CheckpointFailedError, JobExecutionError
from streamkernel.datastream.window import TumblingEventTimeWindows
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import Pause, ScriptedSource, wait_until

RECORDS = [f"r{i:04d}" for i in range(400)]
WINDOW_MS = 100
EVENTS = [("k", i * 10) for i in range(300)]  # 10 events per 100 ms window


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)  # ./savepoints and the checkpoint directory stay out of the repository


def environment(tmp_path: pathlib.Path, restore_from: Optional[str] = None,
                extra: Optional[dict] = None) -> StreamExecutionEnvironment:
    conf = {"execution.checkpointing.interval": "1 h", "execution.checkpointing.dir": str(tmp_path / "chk"),
            **(extra or {})}
    if restore_from is not None:
        conf["execution.state-recovery.path"] = restore_from
    return StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))


def slowly(items: list) -> list:
    """The items with a 2 ms pause after each (the job is still running when it is stopped)."""
    return [x for item in items for x in (item, Pause(2))]


def lines(path: pathlib.Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def committed_lines(directory: pathlib.Path) -> list[str]:
    """The lines of the FileSink's committed part files (in-progress files are hidden: ``.part-...``)."""
    return sorted(line for f in directory.rglob("*") if f.is_file() and not f.name.startswith(".")
                  for line in f.read_text().splitlines())


class AppendLine:
    """A plain (non-transactional) sink: every record is appended to a file at once."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = str(path)

    def __call__(self, value: Any) -> None:
        with open(self.path, "a") as f:
            f.write(f"{value}\n")


def two_sinks_job(env: StreamExecutionEnvironment, out: pathlib.Path, appended: pathlib.Path) -> None:
    """Source (parallelism 1) -> rebalance -> map (2) -> a FileSink and an appending sink."""
    env.set_parallelism(2)
    words = (env.from_source(ScriptedSource(slowly(RECORDS)), WatermarkStrategy.no_watermarks(), "records")
             .set_parallelism(1).uid("records")
             .rebalance().map(str.upper, output_type=Types.STRING()).uid("upper"))
    files = (FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
             .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()).build())  # commits at each savepoint
    words.sink_to(files).uid("files")
    words.add_sink(AppendLine(appended)).uid("appended")


def stop_then_restore_keeps_both_sinks_exactly_once(cluster: MiniCluster, tmp_path: pathlib.Path,
                                                    extra: Optional[dict] = None) -> None:
    out, appended = tmp_path / "out", tmp_path / "appended.txt"
    env = environment(tmp_path, extra=extra)
    two_sinks_job(env, out, appended)
    client = env.execute_async("before the stop")
    wait_until(lambda: len(lines(appended)) >= 40, timeout=60, message="40 records written")
    savepoint = cluster.checkpoints.stop_with_savepoint(client.get_job_id(), str(tmp_path / "savepoints"))
    assert client.get_job_status().result() is JobStatus.FINISHED
    before = sorted(lines(appended))
    assert len(before) < len(RECORDS), "the job read everything before it was stopped: the test proves nothing"
    # the savepoint's transactions are committed, and nothing after its barrier reached either sink
    assert committed_lines(out) == before
    restored = environment(tmp_path, restore_from=savepoint, extra=extra)
    two_sinks_job(restored, out, appended)
    restored.execute_async("restored").get_job_execution_result().result(120)
    expected = sorted(r.upper() for r in RECORDS)
    assert sorted(lines(appended)) == expected  # no duplicate, no gap: as a run without the stop
    assert committed_lines(out) == expected


@pytest.mark.py_matrix
def test_stop_with_savepoint_finishes_and_restoring_it_is_exactly_once_for_every_sink(tmp_path) -> None:
    with MiniCluster(1, 4) as cluster:
        stop_then_restore_keeps_both_sinks_exactly_once(cluster, tmp_path)


def test_stop_with_savepoint_aligns_with_unaligned_checkpoints_on(tmp_path) -> None:
    with MiniCluster(1, 4) as cluster:
        stop_then_restore_keeps_both_sinks_exactly_once(cluster, tmp_path,
                                                        {"execution.checkpointing.unaligned.enabled": "true"})


def test_stop_with_savepoint_on_the_process_backend(tmp_path) -> None:
    with MiniCluster(1, 4, backend="process") as cluster:
        stop_then_restore_keeps_both_sinks_exactly_once(cluster, tmp_path)


# ------------------------------------------------------------------ event-time windows and drain
def event_time(value: Any, record_timestamp: int) -> int:
    return value[1]


def window_job(env: StreamExecutionEnvironment, read: pathlib.Path, fired: pathlib.Path) -> None:
    """Events -> (the raw events to ``read``) -> 100 ms tumbling windows counting events -> ``fired``."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(event_time)
    events = env.from_source(ScriptedSource(slowly(EVENTS)), strategy, "events").uid("events")
    events.add_sink(AppendLine(read)).uid("read")
    (events.map(lambda e: (e[0], e[1] // WINDOW_MS, 1)).uid("ones")
     .key_by(lambda t: t[0]).window(TumblingEventTimeWindows.of(Duration.of_millis(WINDOW_MS)))
     .reduce(lambda a, b: (a[0], a[1], a[2] + b[2])).uid("windows")
     .add_sink(AppendLine(fired)).uid("fired"))


def windows_of(events: list) -> collections.Counter:
    """Window index -> how many events it holds (the failure-free output, computed here)."""
    return collections.Counter(ts // WINDOW_MS for _, ts in events)


def fired_windows(path: pathlib.Path) -> list[tuple[int, int]]:
    """(window index, count) of every window result written, in order."""
    return [(int(w), int(c)) for w, c in (eval(line)[1:] for line in lines(path))]  # noqa: S307 - our own tuples


def stop(tmp_path: pathlib.Path, cluster: MiniCluster, drain: bool) -> tuple[str, list, list]:
    read, fired = tmp_path / "read.txt", tmp_path / "fired.txt"
    env = environment(tmp_path)
    env.set_parallelism(1)
    window_job(env, read, fired)
    client = env.execute_async("windows")
    wait_until(lambda: len(lines(read)) >= 35, timeout=60, message="35 events read")
    savepoint = cluster.checkpoints.stop_with_savepoint(client.get_job_id(), str(tmp_path / "savepoints"),
                                                        drain=drain)
    assert client.get_job_status().result() is JobStatus.FINISHED
    events = [eval(line) for line in lines(read)]  # noqa: S307 - our own tuples
    assert len(events) < len(EVENTS), "the job read everything before it was stopped: the test proves nothing"
    return savepoint, events, fired_windows(fired)


@pytest.mark.py_matrix
def test_stop_with_drain_fires_the_open_windows_before_the_job_finishes(tmp_path) -> None:
    with MiniCluster(1, 2) as cluster:
        _, events, fired = stop(tmp_path, cluster, drain=True)
    # MAX_WATERMARK went through before the savepoint: every window of the events read fired once,
    # the last (partial) one too
    assert sorted(fired) == sorted(windows_of(events).items())


def test_stop_without_drain_keeps_open_windows_in_the_savepoint_and_restoring_fires_them_once(tmp_path) -> None:
    with MiniCluster(1, 2) as cluster:
        savepoint, events, fired = stop(tmp_path, cluster, drain=False)
        last_window = events[-1][1] // WINDOW_MS
        assert last_window not in dict(fired)  # no end of input: the window still open did not fire
        assert dict(fired).items() <= windows_of(events).items()
        restored = environment(tmp_path, restore_from=savepoint)
        restored.set_parallelism(1)
        window_job(restored, tmp_path / "read.txt", tmp_path / "fired.txt")
        restored.execute_async("restored").get_job_execution_result().result(120)
    everything = fired_windows(tmp_path / "fired.txt")
    assert sorted(everything) == sorted(windows_of(EVENTS).items())  # each window once, with all its events


# ------------------------------------------------------------------ a failed stop
class Unsnapshottable(MapFunction):
    """Keeps a lock in keyed state: every snapshot of it fails, so the savepoint is declined."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("lock", Types.PICKLED_BYTE_ARRAY()))

    def map(self, value: str) -> str:
        self.state.update(threading.Lock())
        return value


def test_a_failed_stop_with_savepoint_leaves_the_job_running_where_it_stopped(tmp_path) -> None:
    appended = tmp_path / "appended.txt"
    with MiniCluster(1, 2) as cluster:
        env = environment(tmp_path)
        env.set_parallelism(1)
        (env.from_source(ScriptedSource(slowly(RECORDS)), WatermarkStrategy.no_watermarks(), "records").uid("records")
         .key_by(lambda r: r[-1]).map(Unsnapshottable()).uid("locks")
         .add_sink(AppendLine(appended)).uid("appended"))
        client = env.execute_async("stop fails")
        wait_until(lambda: len(lines(appended)) >= 40, timeout=60, message="40 records written")
        with pytest.raises(CheckpointFailedError, match="declined"):
            cluster.checkpoints.stop_with_savepoint(client.get_job_id(), str(tmp_path / "savepoints"))
        # the source stopped at the barrier goes on after the abort: the job reads to its end, once
        client.get_job_execution_result().result(120)
        assert client.get_job_status().result() is JobStatus.FINISHED
    assert sorted(lines(appended)) == sorted(RECORDS)


def test_a_failed_stop_with_drain_fails_the_job_over(tmp_path) -> None:
    appended = tmp_path / "appended.txt"
    with MiniCluster(1, 2) as cluster:
        env = environment(tmp_path, extra={"restart-strategy.type": "none"})
        env.set_parallelism(1)
        (env.from_source(ScriptedSource(slowly(RECORDS)), WatermarkStrategy.no_watermarks(), "records").uid("records")
         .key_by(lambda r: r[-1]).map(Unsnapshottable()).uid("locks")
         .add_sink(AppendLine(appended)).uid("appended"))
        client = env.execute_async("drain fails")
        wait_until(lambda: len(lines(appended)) >= 40, timeout=60, message="40 records written")
        with pytest.raises(CheckpointFailedError, match="declined"):
            cluster.checkpoints.stop_with_savepoint(client.get_job_id(), str(tmp_path / "savepoints"), drain=True)
        # MAX_WATERMARK went out and the operators' input ended: the job cannot go on, it fails over
        with pytest.raises(JobExecutionError, match="with drain failed"):
            client.get_job_execution_result().result(120)
