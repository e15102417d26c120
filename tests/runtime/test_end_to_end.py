"""Whole jobs through the public API: results, parallelism, errors, cancel, backpressure, sessions."""

from __future__ import annotations

import collections
import threading
import time

import pytest

from streamkernel.common import Duration, Row, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import (
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window import TumblingEventTimeWindows
from streamkernel.errors import JobExecutionError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import wait_until

WORDS = ["to be or not to be", "that is the question", "to sleep perchance to dream", "be still"]


def _env(parallelism: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def _task_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.endswith(")") and "/" in t.name]


def _subtask_metrics(snapshot: dict) -> dict[str, dict]:
    """Every subtask's metrics in a cluster snapshot, by subtask name."""
    return {s["name"]: s.get("metrics") or {} for j in snapshot["jobs"] for v in j["vertices"] for s in v["subtasks"]}


def _metric(snapshot: dict, prefix: str, name: str) -> int:
    """The sum of metric ``name`` over the subtasks whose name starts with ``prefix``."""
    return sum(m.get(name) or 0 for n, m in _subtask_metrics(snapshot).items() if n.startswith(prefix))


def _records_out(cluster: MiniCluster, prefix: str) -> int:
    return _metric(cluster.inspection.snapshot(), prefix, "records_out")


def _if(test, value):
    """``value`` when ``test(value)``, else None (for wait_until on a snapshot)."""
    return value if test(value) else None


def _word_counts(parallelism: int) -> dict[str, int]:
    env = _env(parallelism)
    counts = (env.from_collection(WORDS * 50)
              .flat_map(lambda line: line.split())
              .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
              .key_by(lambda p: p[0])
              .reduce(lambda a, b: (a[0], a[1] + b[1])))
    final: dict[str, int] = {}
    for word, count in counts.execute_and_collect():
        final[word] = max(final.get(word, 0), count)
    return final


def test_keyed_results_are_the_same_at_parallelism_1_2_and_4() -> None:
    expected = collections.Counter(w for line in WORDS * 50 for w in line.split())
    for parallelism in (1, 2, 4):
        assert _word_counts(parallelism) == dict(expected)
    assert _task_threads() == []  # the transient clusters are gone


class _CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        current = (self.count.value() or 0) + 1
        self.count.update(current)
        yield ctx.get_current_key(), current


@pytest.mark.parametrize("parallelism", [1, 3])
def test_value_state_is_per_key(parallelism: int) -> None:
    env = _env(parallelism)
    out = (env.from_source(NumberSequenceSource(1, 300), WatermarkStrategy.no_watermarks(), "n")
           .key_by(lambda x: x % 7).process(_CountPerKey()).execute_and_collect())
    last: dict[int, int] = {}
    for key, count in out:
        assert count == last.get(key, 0) + 1  # per key, counts arrive in order
        last[key] = count
    assert last == {k: sum(1 for x in range(1, 301) if x % 7 == k) for k in range(7)}


class _Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def test_event_time_windows_fire_at_the_end_of_a_bounded_input() -> None:
    env = _env(2)
    events = [("a", 1000), ("a", 1500), ("b", 1200), ("a", 2500), ("b", 5200), ("a", 900), ("a", 6000)]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)).with_timestamp_assigner(_Ts())
    rows = (env.from_collection(events).assign_timestamps_and_watermarks(strategy)
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
            .reduce(lambda x, y: (x[0], max(x[1], y[1])))
            .execute_and_collect())
    # All records arrive before the first periodic watermark; the final MAX watermark fires every window.
    assert sorted(rows) == [("a", 900), ("a", 1500), ("a", 2500), ("a", 6000), ("b", 1200), ("b", 5200)]


def test_late_records_go_to_the_side_output_once_the_watermark_passed_their_window() -> None:
    env = _env(1)
    env.get_config().set_auto_watermark_interval(5)
    events = [("a", 1000), ("a", 1500), ("b", 1200), ("a", 2500), ("b", 5200)]
    events += [("c", 5300 + i) for i in range(100)]  # ~0.5 s at 200 records/s: many watermarks pass
    events += [("a", 900), ("a", 6000)]
    late = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG()]))
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)).with_timestamp_assigner(_Ts())
    windowed = (env.from_source(DataGeneratorSource(lambda i: events[i], count=len(events), rate_limiter_strategy=200.0),
                                strategy, "events")
                .key_by(lambda e: e[0])
                .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
                .side_output_late_data(late)
                .reduce(lambda x, y: (x[0], max(x[1], y[1]))))
    tagged = windowed.filter(lambda r: r[0] != "c").map(lambda r: ("on time", r)) \
        .union(windowed.get_side_output(late).map(lambda r: ("late", r)))
    rows = list(tagged.execute_and_collect("late data"))  # collected: runs the same on every backend
    on_time = [r for tag, r in rows if tag == "on time"]
    late_rows = [r for tag, r in rows if tag == "late"]
    assert late_rows == [("a", 900)]  # its window [0, 1000) closed when the watermark passed 999
    assert sorted(on_time) == [("a", 1500), ("a", 2500), ("a", 6000), ("b", 1200), ("b", 5200)]


class _Explode(ProcessFunction):
    def process_element(self, value, ctx):
        if value == 13:
            raise ValueError("unlucky number")
        yield value


def test_a_failing_user_function_fails_the_job_naming_operator_subtask_and_record() -> None:
    env = _env(2)
    env.from_source(NumberSequenceSource(1, 100), WatermarkStrategy.no_watermarks(), "n") \
        .process(_Explode()).name("Exploder").add_sink(lambda v: None)
    with pytest.raises(JobExecutionError) as info:
        env.execute("failing")
    message = str(info.value)
    assert "Exploder" in message and "13" in message and "unlucky number" in message
    assert "/2)" in message  # the subtask
    assert isinstance(info.value.__cause__, Exception)
    wait_until(lambda: _task_threads() == [], message="every task thread to end")


def test_cancel_stops_an_unbounded_job_within_a_second_and_leaves_no_thread() -> None:
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=2) as cluster:
        env = _env(2)
        env.from_source(DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "gen") \
            .map(lambda x: x + 1).add_sink(lambda v: None)
        client = env.execute_async("forever")
        # the job is RUNNING once every task is, and its source emits
        wait_until(lambda: client.get_job_status().result().name == "RUNNING" and _records_out(cluster, "Source") > 0,
                   message="the job to be RUNNING and its source to emit")
        start = time.monotonic()
        client.cancel().result(timeout=5)
        result_status = client.get_job_status().result()
        assert result_status.name == "CANCELED"
        assert time.monotonic() - start < 1.0
        assert cluster.is_running
    assert _task_threads() == []


def test_a_slow_sink_backpressures_an_unbounded_source_and_memory_stays_bounded() -> None:
    seen = []

    def slow(value):
        seen.append(value)
        time.sleep(0.0005)

    with MiniCluster(taskmanagers=1, slots_per_taskmanager=2) as cluster:
        env = _env(1)
        env.from_source(DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "gen") \
            .rebalance().add_sink(slow).set_parallelism(1)
        client = env.execute_async("backpressured")
        snapshot = wait_until(lambda: _if(lambda s: _metric(s, "Source", "backpressured_ns") > 0, cluster.inspection.snapshot()),
                              message="the source to be backpressured")
        client.cancel().result(timeout=60)
    subtasks = _subtask_metrics(snapshot)
    source = next(m for name, m in subtasks.items() if name.startswith("Source"))
    # The source could emit millions per second; credits hold it to what the sink consumed plus a
    # few buffers in flight (the sink's one channel: 2 exclusive + 8 floating buffers = 10 credits x
    # 1024 records, and one batch being built).
    assert source["records_out"] <= len(seen) + 12 * 1024
    assert source["backpressured_ns"] > 0


def test_several_jobs_run_at_once_in_one_cluster() -> None:
    with MiniCluster(taskmanagers=2, slots_per_taskmanager=1) as cluster:
        clients = []
        for name in ("first", "second"):
            env = _env(1)
            env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=200.0),
                            WatermarkStrategy.no_watermarks(), name).add_sink(lambda v: None)
            clients.append(env.execute_async(name))
        # unbounded: neither job ends by itself, so both reach RUNNING together
        wait_until(lambda: sorted(j.status.name for j in cluster.jobs()) == ["RUNNING", "RUNNING"],
                   message="both jobs to be RUNNING at once")
        for c in clients:
            c.cancel().result(timeout=60)


def test_collected_results_become_a_dataframe() -> None:
    env = _env(1)
    frame = env.from_collection([Row(word="a", n=1), Row(word="b", n=2)]).execute_and_collect().to_pandas()
    assert list(frame.columns) == ["word", "n"] and list(frame["n"]) == [1, 2]


def test_latency_markers_reach_the_sinks_and_become_samples() -> None:
    from streamkernel.common import Configuration

    with MiniCluster(taskmanagers=1, slots_per_taskmanager=2) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration.from_dict({"metrics.latency.interval": "20"}))
        env.set_parallelism(2)
        env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=2000.0),
                        WatermarkStrategy.no_watermarks(), "gen").key_by(lambda x: x % 5).map(lambda x: x) \
            .add_sink(lambda v: None)
        client = env.execute_async("latency")

        def latency_samples() -> dict:
            snapshot = cluster.inspection.snapshot()
            return {s["name"]: (s.get("metrics") or {}).get("latency_ms") for j in snapshot["jobs"]
                    for v in j["vertices"] for s in v["subtasks"]}

        samples = wait_until(lambda: _if(lambda found: found and all(found[n] for n in found if "Sink" in n),
                                         latency_samples()),
                             message="latency samples at every sink subtask")
        client.cancel().result(timeout=60)
    assert all(samples[name] for name in samples if "Sink" in name)  # every sink subtask has samples
    assert not any(samples[name] for name in samples if name.startswith("Source"))  # no sink there


@pytest.mark.parametrize("mode", ["BATCH", "AUTOMATIC"])
def test_batch_execution_emits_one_final_value_per_key(mode: str) -> None:
    from streamkernel.datastream import RuntimeExecutionMode

    env = _env(2)
    env.set_runtime_mode(RuntimeExecutionMode[mode])
    counts = (env.from_collection(WORDS).flat_map(lambda line: line.split()).map(lambda w: (w, 1))
              .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])))
    rows = list(counts.execute_and_collect())
    assert sorted(rows) == sorted(collections.Counter(w for line in WORDS for w in line.split()).items())


def test_automatic_mode_streams_when_a_source_is_unbounded() -> None:
    from streamkernel.datastream import RuntimeExecutionMode

    env = _env(1)
    env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
    env.from_source(DataGeneratorSource(lambda i: i, count=None), WatermarkStrategy.no_watermarks(), "g") \
        .key_by(lambda x: x % 2).reduce(lambda a, b: a + b)
    assert env.get_stream_graph().configuration["execution.runtime-mode"] == "STREAMING"
