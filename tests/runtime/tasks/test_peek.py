"""The tap behind %flink peek: it remembers the last records an operator emits and changes nothing downstream."""

from __future__ import annotations

import threading

from streamkernel.runtime.tasks.peek import TapOutput, tap_operator


class _Collect:
    def __init__(self) -> None:
        self.batches: list = []
        self.watermarks: list = []

    def emit(self, values, timestamps):
        self.batches.append((list(values), timestamps))

    def emit_watermark(self, timestamp):
        self.watermarks.append(timestamp)


def test_the_tap_keeps_the_last_records_forwards_everything_and_stops_remembering_when_taken() -> None:
    downstream = _Collect()
    tap = TapOutput(downstream, limit=3)
    tap.emit([1, 2], None)
    assert not tap.filled.is_set()
    tap.emit([3, 4, 5, 6], [30, 40, 50, 60])
    tap.emit_watermark(99)
    assert tap.filled.is_set()
    assert tap.take() == [(4, 40), (5, 50), (6, 60)]
    tap.emit([7], None)  # after take: forwarded, not remembered
    assert tap.take() == [(4, 40), (5, 50), (6, 60)]
    assert downstream.batches == [([1, 2], None), ([3, 4, 5, 6], [30, 40, 50, 60]), ([7], None)]
    assert downstream.watermarks == [99]


def test_tap_operator_puts_the_output_back_and_returns_early_once_enough_arrived() -> None:
    class Operator:
        output = _Collect()

    operator = Operator()
    original = operator.output
    emitter = threading.Timer(0.05, lambda: operator.output.emit(list(range(10)), None))
    emitter.start()
    records = tap_operator(operator, limit=5, seconds=30)  # returns once 5 records came, long before 30 s
    assert [r for r, _ in records] == [5, 6, 7, 8, 9]
    assert operator.output is original and original.batches == [(list(range(10)), None)]
    assert tap_operator(operator, limit=5, seconds=0.05) == []  # nothing emitted: nothing seen
