"""BATCH mode: BatchTwoInput (streamkernel.runtime.operators.batch_two_input) and per-key state
whatever ``state.backend.type`` says (Flink's BatchExecutionKeyedStateBackend)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from streamkernel.common import Configuration, Types
from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK
from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.runtime.operators.batch_two_input import BatchTwoInput, merge_sorted_inputs
from streamkernel.runtime.state.heap import HeapKeyedStateBackend


def test_merge_prefers_the_waiting_head_on_ties_and_starts_with_the_first_inserted():
    a = [((b"k", 1), "a1"), ((b"k", 1), "a2"), ((b"z", 0), "a3")]
    b = [((b"k", 1), "b1"), ((b"k", 1), "b2")]
    # input 0 first: a1; then b1 waits while a2 arrives (a tie): b1 goes first, and so on
    assert merge_sorted_inputs(a, b, 0) == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
    assert merge_sorted_inputs(a, b, 1) == [(1, 0), (0, 0), (1, 1), (0, 1), (0, 2)]
    assert merge_sorted_inputs([((b"a", 5), 0)], [((b"a", 4), 0)], 0) == [(1, 0), (0, 0)]  # smaller first
    assert merge_sorted_inputs([], b, 0) == [(1, 0), (1, 1)]


class _TwoInputHead:
    """Records what the batch input calls on it."""

    def __init__(self):
        self.calls: list = []
        self.current_watermark = MIN_WATERMARK
        self._timer_services: list = []
        self.context = SimpleNamespace(keyed_backend=None)
        self.output = SimpleNamespace(emit=None, emit_side=None, emit_watermark_status=None,
                                      emit_watermark=lambda ts: self.calls.append(("downstream watermark", ts)))

    def process_batch1(self, values, timestamps):
        self.calls.append((1, values, timestamps))

    def process_batch2(self, values, timestamps):
        self.calls.append((2, values, timestamps))

    def process_watermark(self, timestamp):  # the end of a key: its timers fire
        self.calls.append(("watermark", timestamp))
        self.output.emit_watermark(timestamp)

    def process_watermark1(self, timestamp):
        self.calls.append(("watermark1", timestamp))

    def process_watermark2(self, timestamp):
        self.calls.append(("watermark2", timestamp))

    def end_input(self, index):
        self.calls.append(("end", index))


def test_keyed_inputs_are_merged_key_by_key_with_watermarks_held_back():
    head = _TwoInputHead()
    batch = BatchTwoInput(head, lambda r: r[0], lambda r: r[0])
    batch.process_batch1([("b", 1), ("a", 2)], [1, 3])
    batch.process_watermark1(10)
    batch.process_batch2([("a", 3)], [2])
    batch.end_input(1)
    batch.end_input(0)
    assert head.calls == [
        (2, [("a", 3)], [2]), (1, [("a", 2)], [3]), ("watermark", MAX_WATERMARK),  # key a, its end
        (1, [("b", 1)], [1]), ("watermark", MAX_WATERMARK),  # (the operator's watermarks stay in)
        ("watermark1", MAX_WATERMARK), ("watermark2", MAX_WATERMARK), ("end", 1), ("end", 0)]
    assert head.current_watermark == MIN_WATERMARK


def test_broadcast_input_goes_first_and_non_keyed_inputs_alternate():
    head = _TwoInputHead()
    batch = BatchTwoInput(head, None, None, broadcast=True)
    batch.process_batch1(["x"], None)
    batch.process_batch2(["rule"], None)
    assert head.calls == [(2, ["rule"], None)]  # the other input waits for the broadcast one to end
    batch.end_input(1)
    batch.process_batch1(["y"], None)
    batch.end_input(0)
    assert head.calls[1:3] == [(1, ["x"], None), (1, ["y"], None)]

    head = _TwoInputHead()
    batch = BatchTwoInput(head, None, None)
    batch.process_batch1([1, 2, 3], [7, 8, 9])
    batch.process_batch2(["a"], None)
    batch.end_input(0)
    batch.end_input(1)
    assert head.calls[:4] == [(1, [1], [7]), (2, ["a"], None), (1, [2, 3], [8, 9]), ("watermark1", MAX_WATERMARK)]


# ---------------------------------------------------------------------------- per-key state in BATCH
class _Count(KeyedProcessFunction):
    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield (value[0], self.count.value())


@pytest.fixture
def backends(monkeypatch):
    """Which keyed backends the job creates, and how much state the heap one held at each dispose()."""
    seen = SimpleNamespace(rocksdb=0, held_at_dispose=[])
    from streamkernel.runtime.state import rocksdb

    real_rocksdb_init = rocksdb.RocksDBKeyedStateBackend.__init__
    real_dispose = HeapKeyedStateBackend.dispose

    def rocksdb_init(self, *args, **kwargs):
        seen.rocksdb += 1
        real_rocksdb_init(self, *args, **kwargs)

    def dispose(self):
        seen.held_at_dispose.append(sum(len(t.plain) + len(t.spaced) for t in self._tables.values()))
        real_dispose(self)

    monkeypatch.setattr(rocksdb.RocksDBKeyedStateBackend, "__init__", rocksdb_init)
    monkeypatch.setattr(HeapKeyedStateBackend, "dispose", dispose)
    return seen


def _count_job(tmp_path, settings: dict, keys: int) -> list:
    conf = Configuration.from_dict({"state.backend.type": "rocksdb", **settings})
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)
    records = [(f"k{i % keys}", i) for i in range(3 * keys)]
    results = env.from_collection(records).key_by(lambda r: r[0]).process(_Count()).execute_and_collect()
    with results:
        return list(results)


def test_batch_job_keeps_only_the_current_keys_state_even_with_rocksdb_configured(tmp_path, backends):
    keys = 200
    out = _count_job(tmp_path, {}, keys)
    assert sorted(out) == sorted((f"k{k}", n) for k in range(keys) for n in (1, 2, 3))
    assert backends.rocksdb == 0  # the batch backend replaces the configured one
    # dropped after every key, holding that key's one entry: memory does not grow with the keys
    per_key = backends.held_at_dispose[:keys]
    assert per_key == [1] * keys


def test_batch_state_backend_can_be_switched_off(tmp_path, backends):
    out = _count_job(tmp_path, {"execution.batch-state-backend.enabled": "false"}, 5)
    assert sorted(out) == sorted((f"k{k}", n) for k in range(5) for n in (1, 2, 3))
    assert backends.rocksdb == 1 and backends.held_at_dispose == []


# ---------------------------------------------------------------------------- parallelism in BATCH
def _parallelisms(settings: dict) -> dict:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(settings))
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    mapped = env.from_collection([1, 2, 3]).map(lambda v: v).name("unset")
    mapped.key_by(lambda v: v).map(lambda v: v, output_type=Types.INT()).name("set").set_parallelism(2).print()
    first = {n.name: n.parallelism for n in env.get_stream_graph().nodes}
    again = {n.name: n.parallelism for n in env.get_stream_graph().nodes}
    assert first == again  # the program is left as written: each graph decides anew
    return first


def test_batch_operators_without_a_set_parallelism_run_at_one_unless_switched_off():
    decided = _parallelisms({})
    assert decided["unset"] == 1 and decided["set"] == 2 and decided["Sink: Print to Std. Out"] == 2  # set's group
    switched_off = _parallelisms({"execution.batch.adaptive.auto-parallelism.enabled": "false"})
    assert switched_off["unset"] == 2 and switched_off["set"] == 2
