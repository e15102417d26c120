"""CloseableIterator hands out collected records from batches, with no Python call per record (issue 15).

The tests count Python-level calls with ``sys.setprofile`` (C functions such as a list
iterator's ``__next__`` are not Python calls), never time.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import pytest

from streamkernel.common.typeinfo import Types
from streamkernel.datastream.closeable_iterator import CloseableIterator
from streamkernel.datastream.connectors.collect import CollectBuffer
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment

BATCH, BATCHES = 500, 4


def python_calls(run: Callable[[], Any]) -> int:
    """How many Python functions were called (generators resumed) while ``run()`` ran."""
    calls = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[0] += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls[0]


def batches() -> list:
    return [list(range(i * BATCH, (i + 1) * BATCH)) for i in range(BATCHES)]


def test_a_for_loop_costs_python_calls_per_batch_not_per_record() -> None:
    it = CloseableIterator(batches=iter(batches()))
    seen: list = []

    def read() -> None:
        for x in it:
            seen.append(x)

    calls = python_calls(read)
    assert seen == list(range(BATCH * BATCHES))
    assert calls <= 2 * BATCHES + 4, f"{calls} Python calls for {BATCH * BATCHES} records in {BATCHES} batches"


def test_reading_a_collect_buffer_costs_python_calls_per_batch() -> None:
    buffer = CollectBuffer(capacity=BATCH * BATCHES)
    for batch in batches():
        buffer.put_batch(batch)
    buffer.close()
    out: list = []
    calls = python_calls(lambda: out.extend(buffer))
    assert out == list(range(BATCH * BATCHES))
    assert calls <= 12 * BATCHES, calls  # poll_batch and the lock per batch, nothing per record
    buffer.discard()


def test_execute_and_collect_costs_python_calls_per_batch() -> None:
    n = 20_000
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    ds = env.from_collection(list(range(n)), type_info=Types.LONG()).map(lambda x: x + 1, output_type=Types.LONG())
    with ds.execute_and_collect() as it:
        first = next(it)
        rest: list = []
        calls = python_calls(lambda: rest.extend(it))
    assert [first] + rest == list(range(1, n + 1))
    assert calls < n // 10, f"{calls} Python calls in the reader's thread for {n} records"


def test_next_and_for_share_one_position() -> None:
    it = CloseableIterator(batches=iter(batches()))
    assert next(it) == 0 and it.next() == 1
    for x in it:
        if x == BATCH + 2:
            break
    assert next(it) == BATCH + 3
    assert list(it)[:2] == [BATCH + 4, BATCH + 5]
    with pytest.raises(StopIteration, match="No more data"):
        next(it)


def test_closing_inside_a_loop_ends_it_in_the_middle_of_a_batch() -> None:
    closed: list = []
    it = CloseableIterator(batches=iter(batches()), close=lambda: closed.append(True))
    seen = []
    for x in it:
        seen.append(x)
        if x == 10:
            it.close()
    assert seen == list(range(11)) and closed == [True]
    with pytest.raises(StopIteration):
        next(it)
    it.close()
    assert closed == [True]


def test_to_pandas_takes_the_rest_of_the_batch_then_whole_batches() -> None:
    it = CloseableIterator(batches=iter(batches()), close=lambda: None)
    assert next(it) == 0
    assert it.to_pandas(["x"])["x"].tolist() == list(range(1, BATCH * BATCHES))

    def calls_for(size: int) -> int:
        parts = [list(range(i * size, (i + 1) * size)) for i in range(BATCHES)]
        return python_calls(lambda: CloseableIterator(batches=iter(parts)).to_pandas(["x"]))

    calls_for(BATCH)  # pandas imported and warm
    more = calls_for(10 * BATCH) - calls_for(BATCH)
    assert more < BATCH, f"{more} more Python calls for {9 * BATCH * BATCHES} more records"


def test_a_failing_batch_source_raises_after_the_records_before_it() -> None:
    def failing() -> Any:
        yield [1, 2]
        raise RuntimeError("job failed")

    it = CloseableIterator(batches=failing())
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="job failed"):
        list(it)


def test_a_record_iterator_still_works() -> None:
    it = CloseableIterator(iter(range(5)), close=lambda: None)
    assert next(it) == 0
    assert list(it) == [1, 2, 3, 4]
