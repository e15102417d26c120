"""Sinks at runtime: print prefixes, the collect buffer, SinkFunctions, user sinks, the pandas sink."""

from __future__ import annotations

import pickle
import threading
import time

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.types import Row
from streamkernel.common.watermark_strategy import MIN_WATERMARK
from streamkernel.datastream.connectors import (
    CollectBuffer,
    CollectSink,
    PandasSink,
    PrintSink,
    Sink,
    SinkFunction,
    SinkWriter,
)
from streamkernel.datastream.connectors.pandas import records_to_dataframe
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import InvalidProgramError, UserFunctionError
from streamkernel.graph.operator_specs import SinkSpec

TIMEOUT_S = 10.0


def sink_harness(sink, **kwargs):
    return harness.OperatorHarness(SinkSpec(sink=sink), name="Sink: test", **kwargs)


# --------------------------------------------------------------------- print
@pytest.mark.parametrize("identifier, subtask, parallelism, expected", [
    (None, 0, 1, "a\nb\n"),
    (None, 1, 2, "2> a\n2> b\n"),
    ("wc", 0, 1, "wc> a\nwc> b\n"),
    ("wc", 2, 3, "wc:3> a\nwc:3> b\n"),
])
def test_print_sink_prefixes_lines_as_flink(capsys, identifier, subtask, parallelism, expected) -> None:
    h = sink_harness(PrintSink(identifier), subtask_index=subtask, parallelism=parallelism)
    h.process(["a", "b"])
    h.finish()
    assert capsys.readouterr().out == expected


def test_print_sink_to_stderr_and_str_of_records(capsys) -> None:
    sink_harness(PrintSink(to_stderr=True)).process([(1, "x"), None])
    captured = capsys.readouterr()
    assert captured.err == "(1, 'x')\nNone\n" and captured.out == ""


def test_print_sink_writes_records_as_pyflink_prints_their_declared_type(capsys) -> None:
    """PyFlink prints typed records with Java's toString ((a,1)), rows as +I[a,1], and
    records without a declared type with Python's str(('a', 1))."""
    from streamkernel.common.typeinfo import Types

    def printed(input_type, values):
        spec = SinkSpec(sink=PrintSink(), input_type=input_type)
        harness.OperatorHarness(spec, name="Sink: test", subtask_index=1, parallelism=2).process(values)
        return capsys.readouterr().out

    assert printed(Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("b", 2)]) == "2> (a,1)\n2> (b,2)\n"
    assert printed(Types.ROW([Types.STRING(), Types.INT()]), [Row("a", 1)]) == "2> +I[a,1]\n"
    assert printed(Types.PICKLED_BYTE_ARRAY(), [("a", 1)]) == "2> ('a', 1)\n"
    assert printed(None, [("a", 1)]) == "2> ('a', 1)\n"


def test_print_of_a_typed_stream_through_a_job(capsys) -> None:
    from streamkernel.common.typeinfo import Types

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    words = env.from_collection(["to", "be", "to"])
    words.map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()])) \
        .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
    words.map(lambda w: (w, len(w))).print("pickled")
    env.execute("typed print")
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if not line.startswith("pickled")] == ["(to,1)", "(be,1)", "(to,2)"]
    assert [line for line in lines if line.startswith("pickled")] == ["pickled> ('to', 2)", "pickled> ('be', 2)",
                                                                      "pickled> ('to', 2)"]


def test_sink_does_not_forward_watermarks_but_counts_records() -> None:
    h = sink_harness(SinkFunction(lambda v: None))
    h.process([1, 2, 3]).watermark(100)
    assert h.output.events == []
    assert h.metrics.records_in == 3
    assert h.operator.current_watermark == 100


# ------------------------------------------------------------- collect buffer
def test_collect_buffer_blocks_writers_when_full() -> None:
    buffer = CollectBuffer(capacity=4)
    assert buffer.put_batch([1, 2, 3])
    assert buffer.put_batch([4, 5], timeout=0.01) is False  # would exceed the capacity
    released = threading.Event()

    def write() -> None:
        buffer.put_batch([4, 5])  # blocks until the reader makes room
        released.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert not released.wait(0.05)
    assert buffer.poll_batch(timeout=TIMEOUT_S) == [1, 2, 3]
    assert released.wait(TIMEOUT_S)
    writer.join(TIMEOUT_S)
    buffer.close()
    assert list(buffer) == [4, 5]


def test_collect_buffer_takes_an_oversized_batch_when_empty() -> None:
    buffer = CollectBuffer(capacity=2)
    assert buffer.put_batch(list(range(5)), timeout=0.01)
    assert len(buffer) == 5


def test_collect_buffer_raises_the_job_error_after_the_records_before_it() -> None:
    buffer = CollectBuffer(capacity=10)
    buffer.put_batch([1, 2])
    buffer.fail(RuntimeError("job failed"))
    iterator = iter(buffer)
    assert [next(iterator), next(iterator)] == [1, 2]
    with pytest.raises(RuntimeError, match="job failed"):
        next(iterator)


def test_collect_buffer_fail_releases_blocked_writers() -> None:
    buffer = CollectBuffer(capacity=1)
    buffer.put_batch([1])
    writer = threading.Thread(target=buffer.put_batch, args=([2],))
    writer.start()
    buffer.fail(RuntimeError("cancelled"))
    writer.join(TIMEOUT_S)
    assert not writer.is_alive()


def test_collect_buffer_closes_after_every_sink_subtask_finished() -> None:
    sink = CollectSink(capacity=100)
    writers = [sink_harness(sink, subtask_index=i, parallelism=2) for i in range(2)]
    writers[0].process(["a"]).finish()
    assert not sink.buffer.closed  # subtask 1 has not finished yet
    writers[1].process(["b"]).finish()
    assert sink.buffer.closed
    assert sorted(sink.buffer) == ["a", "b"]


def test_collect_writer_copies_the_batch() -> None:
    sink = CollectSink()
    batch = [1, 2]
    sink_harness(sink).operator.process_batch(batch, None)
    batch.append(3)
    assert sink.buffer.poll_batch(0) == [1, 2]


def test_pickled_collect_sink_finds_the_live_buffer() -> None:
    sink = CollectSink(capacity=7)
    copy = pickle.loads(pickle.dumps(sink))
    assert copy.buffer is sink.buffer and copy.capacity == 7


def test_collect_sink_through_a_job_with_backpressure() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    sink = CollectSink(capacity=16)  # far smaller than the output: the job must wait for the reader
    env.from_collection(list(range(2000))).map(lambda x: x + 1).sink_to(sink)
    client = env.execute_async("collect")
    results = []
    deadline = time.monotonic() + TIMEOUT_S
    for value in sink.buffer:
        results.append(value)
        assert len(sink.buffer) <= 16 + 1024  # bounded by the capacity (plus one batch)
        assert time.monotonic() < deadline
    client.get_job_execution_result().result(TIMEOUT_S)
    assert sorted(results) == list(range(1, 2001))


# -------------------------------------------------------------- sink functions
class Recorder(SinkFunction):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []
        self.opened = self.closed = False

    def open(self, runtime_context) -> None:
        self.opened = runtime_context.get_index_of_this_subtask() == 0

    def invoke(self, value, context) -> None:
        self.calls.append((value, context.timestamp(), context.current_watermark()))

    def close(self) -> None:
        self.closed = True


def test_sink_function_invoke_gets_the_record_timestamp_and_watermark() -> None:
    recorder = Recorder()
    h = sink_harness(recorder)
    h.process(["a", "b"], [10, 20]).watermark(15).process(["c"])
    h.close()
    assert recorder.opened and recorder.closed
    assert recorder.calls == [("a", 10, MIN_WATERMARK), ("b", 20, MIN_WATERMARK), ("c", None, 15)]


def test_plain_callable_and_wrapped_object_with_invoke() -> None:
    seen: list = []
    sink_harness(SinkFunction(seen.append)).process([1, 2])

    class Plain:
        def invoke(self, value, context):
            seen.append(("invoke", value))

    sink_harness(SinkFunction(Plain())).process([3])
    assert seen == [1, 2, ("invoke", 3)]


def test_failing_sink_function_names_operator_and_record() -> None:
    h = sink_harness(SinkFunction(lambda v: 1 / v))
    with pytest.raises(UserFunctionError, match=r"'Sink: test'.*record 0.*ZeroDivisionError"):
        h.process([2, 0, 5])


def test_unknown_sink_is_rejected_with_a_clear_error() -> None:
    with pytest.raises(InvalidProgramError, match="cannot write to"):
        sink_harness(42)


# ------------------------------------------------------------------ user sinks
class ListSink(Sink):
    def __init__(self, batched: bool) -> None:
        self.rows: list = []
        self.events: list = []
        self.batched = batched

    def create_writer(self, context):
        sink = self

        class PerRecord(SinkWriter):
            def write(self, element, ctx):
                sink.rows.append((context.get_index_of_this_subtask(), element, ctx.timestamp()))

            def flush(self, end_of_input):
                sink.events.append(("flush", end_of_input))

            def close(self):
                sink.events.append(("close",))

        class Batched(PerRecord):
            def write_batch(self, values, timestamps):
                sink.rows.append(("batch", list(values)))

        return Batched() if self.batched else PerRecord()


def test_user_sink_writer_per_record_and_lifecycle() -> None:
    sink = ListSink(batched=False)
    h = sink_harness(sink)
    h.process(["x", "y"], [1, 2])
    h.operator.snapshot_state(1)
    h.finish().close()
    assert sink.rows == [(0, "x", 1), (0, "y", 2)]
    assert sink.events == [("flush", False), ("flush", True), ("close",)]


def test_user_sink_writer_with_write_batch_gets_whole_batches() -> None:
    sink = ListSink(batched=True)
    sink_harness(sink).process(["x", "y"])
    assert sink.rows == [("batch", ["x", "y"])]


# ---------------------------------------------------------------------- pandas
def test_records_to_dataframe_shapes() -> None:
    assert records_to_dataframe([(1, "a"), (2, "b")], ["n", "s"]).to_dict("list") == {"n": [1, 2], "s": ["a", "b"]}
    assert records_to_dataframe([{"k": 1, "v": 2}]).to_dict("list") == {"k": [1], "v": [2]}
    assert records_to_dataframe([Row(name="x", age=3)]).to_dict("list") == {"name": ["x"], "age": [3]}
    assert records_to_dataframe([5, 6]).to_dict("list") == {"value": [5, 6]}
    assert list(records_to_dataframe([], ["a"]).columns) == ["a"]


def test_pandas_sink_orders_by_subtask_and_restarts_cleanly() -> None:
    sink = PandasSink("out", columns=["word", "count"])
    second = sink_harness(sink, subtask_index=1, parallelism=2)
    first = sink_harness(sink, subtask_index=0, parallelism=2)
    second.process([("b", 2)])
    first.process([("a", 1)])
    state = first.operator.snapshot_state(1)
    first.process([("lost", 0)])  # after the checkpoint: replayed by the sources on restore
    assert sink.to_pandas().to_dict("list") == {"word": ["a", "lost", "b"], "count": [1, 0, 2]}
    restarted = sink_harness(sink, subtask_index=0, parallelism=2, restored_state=state)
    restarted.process([("c", 3)])
    assert sink.to_pandas().to_dict("list") == {"word": ["a", "c", "b"], "count": [1, 3, 2]}
    sink_harness(sink, subtask_index=1, parallelism=2)  # a fresh run replaces the subtask's records
    assert sink.records() == [("a", 1), ("c", 3)]


def test_pandas_sink_through_a_job() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    sink = PandasSink("squares")
    env.from_collection([1, 2, 3]).map(lambda x: (x, x * x)).sink_to(sink)
    env.execute("pandas")
    frame = sink.to_pandas()
    assert frame.values.tolist() == [[1, 1], [2, 4], [3, 9]]


def test_a_pandas_sinks_tail_is_its_last_records_across_subtasks_and_the_count() -> None:
    from streamkernel.datastream.connectors.pandas import PandasSink

    sink = PandasSink("tail", columns=["n"])
    sink.store.start(1).extend([4, 5])
    sink.store.start(0).extend([1, 2, 3])  # subtask order, not arrival order
    frame, total = sink.tail(3)
    assert list(frame["n"]) == [3, 4, 5] and total == 5
    assert list(sink.tail(10)[0]["n"]) == [1, 2, 3, 4, 5] and sink.tail(0)[0].empty


def test_collect_buffer_reader_wakes_writers_blocked_on_a_full_buffer() -> None:
    """A writer blocked at capacity goes on once the reader drained the buffer: the reader takes
    every ready batch per wake-up and then wakes the waiting writers (never a lost wake-up)."""
    buffer = CollectBuffer(capacity=2)

    def write() -> None:
        for i in range(0, 40, 2):
            buffer.put_batch([i, i + 1])  # blocks (no timeout) while two records are buffered
        buffer.close()

    writer = threading.Thread(target=write)
    writer.start()
    batches = []
    for batch in buffer.batches():
        batches.append(batch)
        assert len(buffer) <= buffer.capacity
    writer.join(TIMEOUT_S)
    assert not writer.is_alive()
    assert [r for b in batches for r in b] == list(range(40))


def test_a_live_view_reads_the_recent_records_and_the_total_together() -> None:
    """A writer puts batches while a view reads: a total above 0 always comes with its records."""
    from streamkernel.datastream.connectors.collect import CollectBuffer

    buffer = CollectBuffer(capacity=1 << 20)
    started = threading.Event()

    def write() -> None:
        started.set()
        for i in range(2000):
            buffer.put_batch([i])

    writer = threading.Thread(target=write)
    writer.start()
    started.wait()
    seen = [buffer.recent_and_total(5) for _ in range(5000)]
    writer.join()
    assert all(bool(recent) == (total > 0) and len(recent) == min(5, total) for recent, total in seen)
    assert buffer.recent_and_total(3) == ([1997, 1998, 1999], 2000)
