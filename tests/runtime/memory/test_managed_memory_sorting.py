"""Managed memory for BATCH mode's sorters (issue 19): the job graph gives each sorting operator its
fraction of the slot by Flink's consumer weights; a sorter reserves that share, spills sorted runs to
disk beyond it and merges them (the operator sees exactly what an unbounded sort gives), and a share
below Flink's 12 pages fails with Flink's message naming the keys to raise."""

from __future__ import annotations

import os
import random
from types import SimpleNamespace

import pytest

from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK
from streamkernel.errors import IllegalConfigurationError
from streamkernel.graph.job_graph import build_job_graph
from streamkernel.runtime.memory.memory_manager import MemoryManager, MemoryReservationError
from streamkernel.runtime.operators import external_sorter
from streamkernel.runtime.operators.batch_sorting import BatchSortingInput
from streamkernel.runtime.operators.batch_two_input import BatchTwoInput
from streamkernel.runtime.operators.external_sorter import (
    InsufficientSortMemoryError,
    ManagedSortBuffer,
    open_sort_buffers,
    sort_memory,
)


# ---------------------------------------------------------------- the job graph's fractions
def _keyed_batch_job(conf: dict, groups: tuple[str, str] = ("default", "default")):
    from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.get_config().set_global_job_parameters({})
    counts = env.from_collection([(i % 7, i) for i in range(50)]) \
        .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).slot_sharing_group(groups[0])
    counts.key_by(lambda t: t[1] % 3).sum(1).slot_sharing_group(groups[1]).print()
    graph = env.get_stream_graph("fractions")
    graph.configuration.update(conf)
    return build_job_graph(graph)


def _fractions(job_graph) -> dict[str, dict[str, float]]:
    return {v.name: {u: f for _, u, f in v.managed_memory_fractions} for v in job_graph.vertices
            if v.managed_memory_fractions}


def test_sorting_operators_of_one_slot_sharing_group_share_its_managed_memory_by_weight() -> None:
    fractions = _fractions(_keyed_batch_job({}))
    # two sorters of equal weight (execution.sorted-inputs.memory); the per-key batch state backend
    # keeps nothing in managed memory, so the OPERATOR use case has the whole slot
    assert {name: f["OPERATOR"] for name, f in fractions.items()} == {
        "Reduce": 0.5, "Keyed Aggregation -> Sink: Print to Std. Out": 0.5}
    assert all(f["STATE_BACKEND"] == 0.0 for f in fractions.values())
    # in different slot sharing groups each sorter has its slot to itself
    separate = _fractions(_keyed_batch_job({}, ("a", "b")))
    assert sorted(f["OPERATOR"] for f in separate.values()) == [1.0, 1.0]


def test_consumer_weights_split_a_slot_between_sorting_and_rocksdb_as_flink_does() -> None:
    rocksdb = {"state.backend.type": "rocksdb", "execution.batch-state-backend.enabled": "false"}
    fractions = _fractions(_keyed_batch_job(rocksdb))["Reduce"]
    assert fractions == {"OPERATOR": 0.25, "STATE_BACKEND": 0.5}  # 70:70, and half of OPERATOR's share
    weighted = _fractions(_keyed_batch_job({**rocksdb, "taskmanager.memory.managed.consumer-weights":
                                            "OPERATOR:30,STATE_BACKEND:70"}))["Reduce"]
    assert weighted == {"OPERATOR": 0.15, "STATE_BACKEND": 0.7}
    legacy = _fractions(_keyed_batch_job({**rocksdb, "taskmanager.memory.managed.consumer-weights": "DATAPROC:10"}))
    assert legacy["Reduce"] == {"OPERATOR": 0.25, "STATE_BACKEND": 0.5}  # Flink 1.x's name covers both


def test_streaming_rocksdb_keeps_the_whole_slot() -> None:
    from streamkernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([(1, 2)]).key_by(lambda t: t[0]).sum(1).print()
    graph = env.get_stream_graph("streaming")
    graph.configuration["state.backend.type"] = "rocksdb"
    assert _fractions(build_job_graph(graph)) == {"Keyed Aggregation -> Sink: Print to Std. Out": {
        "STATE_BACKEND": 1.0}}


@pytest.mark.parametrize("weights, named", [
    ("OPERATOR:-1", "Managed memory weight should not be negative. Configured weight for OPERATOR is -1"),
    ("OPERATOR=70", "'OPERATOR=70' is not one"),
    ("OPERATOR:lots", "the weight of OPERATOR must be an integer"),
])
def test_a_wrong_consumer_weight_fails_at_execute_naming_the_key(weights: str, named: str) -> None:
    from streamkernel.common import Configuration
    from streamkernel.datastream import StreamExecutionEnvironment

    conf = Configuration()
    conf.set_string("taskmanager.memory.managed.consumer-weights", weights)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.from_collection([1, 2]).print()
    with pytest.raises(IllegalConfigurationError) as failure:
        env.execute("bad weights")
    assert named in str(failure.value) and "taskmanager.memory.managed.consumer-weights" in str(failure.value)


# ---------------------------------------------------------------- the sorter
def test_sort_memory_is_split_and_refused_below_twelve_pages_as_flinks_sorter() -> None:
    memory = sort_memory(1000, 32 << 10, 128, 0.8)
    assert (memory.write_buffers, memory.max_fan) == (4, 128)  # 1000 // 100 >= 4: four write buffers
    assert memory.sort_memory == 996 * (32 << 10) and memory.start_spilling_bytes == int(0.8 * 996 * (32 << 10))
    assert sort_memory(50, 32 << 10, 128, 0.8).max_fan == 48  # the fan-in shrinks to what the pages allow
    with pytest.raises(InsufficientSortMemoryError, match=r"^Too little memory provided to sorter to perform task\. "
                       r"Required are at least 12 pages\. Current page size is 32768 bytes\. Operator"):
        sort_memory(11, 32 << 10, 128, 0.8, "Operator 'x' ...")


def test_a_sorter_below_twelve_pages_names_the_operator_its_share_and_the_keys_to_raise(tmp_path) -> None:
    manager = MemoryManager(300 << 10, slot_index=1)  # 9 pages of 32 KiB
    with pytest.raises(InsufficientSortMemoryError) as failure:
        open_sort_buffers(manager, 1.0, 1, {}, str(tmp_path), "Reduce (1/1)")
    message = str(failure.value)
    assert "Operator 'Reduce (1/1)'" in message and "slot's 307200 bytes of managed memory: 9 pages" in message
    assert "'taskmanager.memory.managed.size'" in message and "'taskmanager.memory.managed.consumer-weights'" in message
    assert manager.metrics() == {}  # nothing stays reserved


def test_sorters_reserve_their_share_of_the_slot_and_give_it_back() -> None:
    manager = MemoryManager(4 << 20)
    buffers = open_sort_buffers(manager, 0.5, 2, {}, "/unused", "Co-Process (1/1)")
    assert buffers is not None and len(buffers) == 2
    pages = (4 << 20) // (32 << 10) // 4  # half the slot, split between the two inputs
    assert manager.metrics()["operator"] == {"reserved": 2 * pages * (32 << 10), "used": 0, "reservations": 2,
                                                "spilled_runs": 0}
    with pytest.raises(MemoryReservationError, match="only 2097152 bytes are remaining"):
        manager.reserve_memory("another", 3 << 20)
    for buffer in buffers:
        buffer.close()
    assert manager.metrics() == {}


class _Head:
    """A keyed head that records what it is fed, key by key."""

    def __init__(self) -> None:
        self.calls: list = []
        self.current_watermark = MIN_WATERMARK
        self._timer_services: list = []
        self.context = SimpleNamespace(keyed_backend=None)
        self.output = SimpleNamespace(emit=None, emit_side=None, emit_watermark_status=None,
                                      emit_watermark=lambda ts: None)

    def process_batch(self, values, timestamps):
        self.calls.append(("records", list(values), None if timestamps is None else list(timestamps)))

    process_batch1 = process_batch

    def process_batch2(self, values, timestamps):
        self.calls.append(("records2", list(values), None if timestamps is None else list(timestamps)))

    def process_watermark(self, timestamp):
        if timestamp == MAX_WATERMARK:
            self.calls.append(("key ends",))

    def process_watermark1(self, timestamp):
        self.calls.append(("final watermark 1",))

    def process_watermark2(self, timestamp):
        self.calls.append(("final watermark 2",))

    def end_input(self, *index):
        self.calls.append(("end",) + index)


def _records_by_key(calls: list) -> list:
    """What the operator saw, batches of one key joined (the sorter may cut a key into several batches)."""
    seen: list = []
    for call in calls:
        if call[0].startswith("records") and seen and seen[-1][0] == call[0]:
            seen[-1] = (call[0], seen[-1][1] + call[1],
                        None if call[2] is None else (seen[-1][2] or []) + call[2])
        else:
            seen.append(call)
    return seen


def _small_buffer(tmp_path, pages: int = 12, max_fan: int = 128) -> ManagedSortBuffer:
    return ManagedSortBuffer(sort_memory(pages, 1024, max_fan, 0.8), str(tmp_path))


@pytest.mark.parametrize("max_fan", [128, 2])
def test_a_spilling_sorter_feeds_the_operator_exactly_what_an_unbounded_one_does(tmp_path, max_fan: int) -> None:
    rng = random.Random(7)
    batches = []
    for _ in range(40):
        values = [(f"k{rng.randrange(30)}", rng.randrange(1000)) for _ in range(50)]
        batches.append((values, [rng.choice([None, rng.randrange(100)]) for _ in values]))
    unbounded, spilling = _Head(), _Head()
    buffer = _small_buffer(tmp_path, max_fan=max_fan)
    inputs = (BatchSortingInput(unbounded, lambda r: r[0]), BatchSortingInput(spilling, lambda r: r[0],
                                                                                 sort_buffer=buffer))
    for values, timestamps in batches:
        for sorting in inputs:
            sorting.process_batch(list(values), list(timestamps))
    assert buffer.runs.spilled >= 5  # 2000 records of ~100 bytes against ~8 KiB before spilling
    for sorting in inputs:
        sorting.end_input()
    assert _records_by_key(spilling.calls) == _records_by_key(unbounded.calls)
    assert sum(1 for c in unbounded.calls if c == ("key ends",)) == 31  # 30 keys, then the final watermark
    assert os.listdir(tmp_path) == []  # the runs are gone


def test_a_spilling_two_input_sorter_merges_its_inputs_as_the_unbounded_one(tmp_path) -> None:
    rng = random.Random(11)
    data = [[((rng.randrange(20), i), rng.randrange(50)) for i in range(700)] for _ in (0, 1)]
    unbounded, spilling = _Head(), _Head()
    buffers = [_small_buffer(tmp_path / "1"), _small_buffer(tmp_path / "2")]
    inputs = (BatchTwoInput(unbounded, lambda r: r[0], lambda r: r[0]),
              BatchTwoInput(spilling, lambda r: r[0], lambda r: r[0], sort_buffers=buffers))
    for sorting in inputs:
        for start in range(0, 700, 100):
            sorting.process_batch1([v for v, _ in data[0][start:start + 100]], [t for _, t in data[0][start:start + 100]])
            sorting.process_batch2([v for v, _ in data[1][start:start + 50]], [t for _, t in data[1][start:start + 50]])
        sorting.end_input(1)
        for start in range(350, 700, 50):
            sorting.process_batch2([v for v, _ in data[1][start:start + 50]], [t for _, t in data[1][start:start + 50]])
        sorting.end_input(0)
    assert all(b.runs.spilled >= 3 for b in buffers)
    assert _records_by_key(spilling.calls) == _records_by_key(unbounded.calls)
    assert all(not os.listdir(tmp_path / d) for d in ("1", "2"))


def test_a_failing_operator_leaves_no_spill_files(tmp_path) -> None:
    class Failing(_Head):
        def process_batch(self, values, timestamps):
            raise RuntimeError("user function failed")

    buffer = _small_buffer(tmp_path)
    sorting = BatchSortingInput(Failing(), lambda r: r[0], sort_buffer=buffer)
    sorting.process_batch([(i % 5, "x" * 200) for i in range(500)], None)
    assert buffer.runs.spilled > 0 and os.listdir(tmp_path)
    with pytest.raises(RuntimeError, match="user function failed"):
        sorting.end_input()
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- end to end, on the local cluster
def _word_count(conf: dict) -> list:
    from streamkernel.common import Configuration, Types
    from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    configuration = Configuration()
    for key, value in {"restart-strategy.type": "none", **conf}.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)
    words = [f"w{(i * 7919) % 1000}" for i in range(40_000)]
    counts = env.from_collection(words, Types.STRING()).map(lambda w: (w, 1)) \
        .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    with counts.execute_and_collect() as results:
        return list(results)


def test_a_batch_job_with_little_managed_memory_spills_and_gives_the_same_result(monkeypatch) -> None:
    spilled: list[int] = []
    write = external_sorter.SpillingRuns.write

    def counting_write(self, entries):
        spilled.append(1)
        return write(self, entries)

    monkeypatch.setattr(external_sorter.SpillingRuns, "write", counting_write)
    roomy = _word_count({"taskmanager.memory.managed.size": "128m"})
    assert spilled == []
    tight = _word_count({"taskmanager.memory.managed.size": "512k"})  # 16 pages: spills every ~300 KiB
    assert len(spilled) >= 3
    assert tight == roomy and len(roomy) == 1000 and sum(c for _, c in roomy) == 40_000


def test_a_batch_job_whose_sorter_gets_under_twelve_pages_is_refused_before_it_starts() -> None:
    from streamkernel.runtime.minicluster.minicluster import current_cluster

    with pytest.raises(InsufficientSortMemoryError) as failure:
        _word_count({"taskmanager.memory.managed.size": "256k"})  # 8 pages of 32 KiB
    text = str(failure.value)
    assert text.startswith("Too little memory provided to sorter to perform task. Required are at least 12 pages.")
    assert "Operator 'Reduce -> Sink: Collect Sink'" in text and ": 8 pages each" in text and "'taskmanager.memory.managed.size'" in text
    assert current_cluster() is None  # no cluster was started


def test_a_session_cluster_task_whose_sorter_gets_under_twelve_pages_fails_naming_the_keys() -> None:
    from streamkernel.common import Types
    from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
    from streamkernel.errors import JobExecutionError
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    conf = {"taskmanager.memory.managed.size": "256k", "restart-strategy.type": "none"}
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=1, backend="local", configuration=conf, rest=False):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        env.from_collection(["a", "b", "a"], Types.STRING()).key_by(lambda w: w).reduce(lambda a, b: a).print()
        with pytest.raises(JobExecutionError) as failure:
            env.execute("too little managed memory")
    text = repr(failure.value) + repr(failure.value.__cause__)
    assert "Too little memory provided to sorter to perform task. Required are at least 12 pages." in text
    assert "'taskmanager.memory.managed.size'" in text


def test_the_cluster_view_shows_what_a_running_sorter_holds_of_its_reservation() -> None:
    from streamkernel.common import Configuration, Types, WatermarkStrategy
    from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
    from streamkernel.jupyter.widgets.models import cluster_model
    from streamkernel.jupyter.widgets.text import cluster_text
    from streamkernel.runtime.minicluster.minicluster import MiniCluster
    from streamkernel.testing.markers import Gate
    from streamkernel.testing.scripted_source import ScriptedSource
    from streamkernel.testing.waiting import wait_until

    conf = {"taskmanager.memory.managed.size": "2m", "restart-strategy.type": "none"}
    gate = Gate("the sorter holds the first part")
    records = [(i % 10, "x" * 1000) for i in range(5000)]
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=1, backend="local", configuration=conf,
                     rest=False) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        env.set_parallelism(1)
        env.from_source(ScriptedSource(records + [gate] + records[:10]), WatermarkStrategy.no_watermarks(), "script",
                        Types.PICKLED_BYTE_ARRAY()).key_by(lambda t: t[0]).reduce(lambda a, b: a).print()
        client = env.execute_async("sorting")

        def sorting_line() -> str:  # once the sorter has spilled twice (~6 MiB of records through 2 MiB)
            text = cluster_text(cluster_model(cluster.inspection.snapshot()))
            runs = text.split(" runs spilled)")[0].rsplit("(", 1)[-1] if " runs spilled)" in text else "0"
            return text if int(runs) >= 2 else ""

        text = wait_until(sorting_line, message="the sorter's managed memory in the cluster view")
        gate.open()
        client.get_job_execution_result().result(timeout=120)
        after = wait_until(lambda: (lambda t: t if "sorters hold" not in t else "")(
            cluster_text(cluster_model(cluster.inspection.snapshot()))), message="the reservation given back")
    line = text.split("sorters hold slot 1: ")[1]
    held, reserved = (int(x) for x in line.split(" MiB")[0].split(" of "))
    runs = int(line.split("(")[1].split(" runs spilled")[0])
    assert reserved == 2 and held <= reserved, text  # ~6 MiB of records went through a 2 MiB sorter
    assert runs >= 2, text
    assert "managed 2 MiB" in after
