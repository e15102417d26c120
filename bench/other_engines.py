"""W1-W3 on other Python streaming engines: streamz and bytewax (``pip install streamkernel[bench]``).

Each function has the signature of ``plain_w1`` etc. in ``bench/workloads.py``, calls the
same user functions from that module per record and returns the same result as the plain
loop (W1: the sum; W2: the number of running-reduce results; W3: the number of fired
windows). The engines are imported lazily inside the functions, so this module imports
without them; ``available(engine)`` says whether one is installed. W2 and W3 prepare their
input records before the clock starts and set ``<function>.elapsed``, as the plain loop and
streamkernel versions do.

* streamz: a synchronous ``Stream()`` fed with ``emit``; ``map``/``filter``/``accumulate``/
  ``sink``. streamz has no keyed state and no event-time windows, so W2's running reduce
  and W3's per-key tumbling windows are hand-rolled inside ``accumulate`` (a state dict;
  W3 fires windows as its watermark passes their end, like the plain loop, and an
  end-of-input marker emitted after the last record fires the rest).
* bytewax: ``bytewax.dataflow.Dataflow`` with ``bytewax.operators``, one worker in this
  thread (``bytewax.testing.run_main``), input from a ``TestingSource`` in batches of
  ``BYTEWAX_BATCH_SIZE`` records (the default batch size of bytewax's Kafka source; the
  TestingSource default of 1 makes every operator run once per record). W2 is ``key_on`` +
  ``stateful_map``; W3 is ``key_on`` + ``windowing.reduce_window`` with an ``EventClock``
  and a ``TumblingWindower`` of 1 s. bytewax keys must be strings, so W3's int key goes
  through ``str()``, and its timestamps (ms) become UTC datetimes for the EventClock.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # bench/ is no package: make ``workloads`` importable from anywhere
    sys.path.insert(0, _HERE)

from workloads import (  # noqa: E402
    W1Total,
    w1_even,
    w1_map1,
    w1_map2,
    w2_key,
    w2_record,
    w2_reduce,
    w3_key,
    w3_record,
    w3_reduce,
    w3_timestamp,
)

BYTEWAX_BATCH_SIZE = 1000
"""Records per TestingSource batch in the bytewax workloads."""

_MODULES = {
    "streamz": ("streamz",),
    "bytewax": ("bytewax.dataflow", "bytewax.operators", "bytewax.operators.windowing",
                "bytewax.outputs", "bytewax.testing"),
}

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def available(engine: str) -> bool:
    """True if ``engine`` ("streamz" or "bytewax") and the modules the workloads use import.

    Importing here, before any clock starts, also keeps import time out of the W1 timing.
    """
    try:
        for name in _MODULES[engine]:
            importlib.import_module(name)
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------- streamz


def streamz_w1(n: int) -> int:
    """W1 on streamz: Stream().map.filter.map.sink(W1Total.add), records pushed with emit."""
    from streamz import Stream

    total = W1Total()
    source = Stream()
    source.map(w1_map1).filter(w1_even).map(w1_map2).sink(total.add)
    emit = source.emit
    for x in range(n):
        emit(x)
    return total.value


def streamz_w2(n: int) -> int:
    """W2 on streamz: a running reduce per key, hand-rolled in accumulate (a dict of accumulators)."""
    from streamz import Stream

    records = [w2_record(i) for i in range(n)]
    count = [0]

    def sink(value: Any) -> None:
        count[0] += 1

    def step(state: dict[str, Any], r: tuple[str, int]) -> tuple[dict[str, Any], Any]:
        k = w2_key(r)
        acc = state.get(k)
        acc = r if acc is None else w2_reduce(acc, r)
        state[k] = acc
        return state, acc

    source = Stream()
    source.accumulate(step, start={}, returns_state=True).sink(sink)
    emit = source.emit
    start = time.perf_counter()
    for r in records:
        emit(r)
    streamz_w2.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]
    return count[0]


_END = object()
"""End-of-input marker for the streamz W3 pipeline: fires every window still open."""


def streamz_w3(n: int) -> int:
    """W3 on streamz: 1 s tumbling event-time windows per key, hand-rolled in accumulate.

    streamz has no event time, watermarks or windows. The accumulate state holds the open
    windows (window end -> key -> accumulator) and the watermark (max timestamp - 1, as a
    monotonous watermark); each record emits the list of windows it fired (usually empty),
    ``flatten`` turns the list into records for the sink, and an end-of-input marker fires
    the windows left open.
    """
    from streamz import Stream

    records = [w3_record(i) for i in range(n)]
    count = [0]
    size = 1000
    no_output: list[Any] = []

    def sink(value: Any) -> None:
        count[0] += 1

    def step(state: dict[str, Any], r: Any) -> tuple[dict[str, Any], list[Any]]:
        windows: dict[int, dict[int, Any]] = state["windows"]
        if r is _END:
            fired = []
            for end in sorted(windows):
                fired.extend(windows[end].values())
            windows.clear()
            return state, fired
        ts = w3_timestamp(r)
        k = w3_key(r)
        end = ts - ts % size + size
        per_key = windows.get(end)
        if per_key is None:
            per_key = windows[end] = {}
        acc = per_key.get(k)
        per_key[k] = r if acc is None else w3_reduce(acc, r)
        if ts - 1 <= state["watermark"]:
            return state, no_output
        watermark = state["watermark"] = ts - 1
        fired = no_output
        while windows:
            first = min(windows)
            if first - 1 > watermark:
                break
            if fired is no_output:
                fired = []
            fired.extend(windows.pop(first).values())
        return state, fired

    source = Stream()
    (source.accumulate(step, start={"windows": {}, "watermark": -1}, returns_state=True)
        .flatten()
        .sink(sink))
    emit = source.emit
    start = time.perf_counter()
    for r in records:
        emit(r)
    emit(_END)
    streamz_w3.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]
    return count[0]


# ---------------------------------------------------------------------- bytewax


def _bytewax_sink(fn: Callable[[Any], None]) -> Any:
    """A bytewax DynamicSink that calls ``fn`` once per record."""
    from bytewax.outputs import DynamicSink, StatelessSinkPartition

    class _Partition(StatelessSinkPartition):
        def write_batch(self, items: list[Any]) -> None:
            for item in items:
                fn(item)

    class _Sink(DynamicSink):
        def build(self, step_id: str, worker_index: int, worker_count: int) -> _Partition:
            return _Partition()

    return _Sink()


def bytewax_w1(n: int) -> int:
    """W1 on bytewax: input, map, filter, map, and a sink calling W1Total.add per record."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSource, run_main

    total = W1Total()
    flow = Dataflow("W1")
    s = op.input("inp", flow, TestingSource(range(n), batch_size=BYTEWAX_BATCH_SIZE))
    s = op.map("map1", s, w1_map1)
    s = op.filter("even", s, w1_even)
    s = op.map("map2", s, w1_map2)
    op.output("sum", s, _bytewax_sink(total.add))
    run_main(flow)
    return total.value


def bytewax_w2(n: int) -> int:
    """W2 on bytewax: key_on(w2_key), then stateful_map emitting the running reduce per record."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSource, run_main

    records = [w2_record(i) for i in range(n)]
    count = [0]

    def sink(value: Any) -> None:
        count[0] += 1

    def running_reduce(acc: Any, r: tuple[str, int]) -> tuple[Any, Any]:
        acc = r if acc is None else w2_reduce(acc, r)
        return acc, acc

    flow = Dataflow("W2")
    s = op.input("inp", flow, TestingSource(records, batch_size=BYTEWAX_BATCH_SIZE))
    keyed = op.key_on("key", s, w2_key)
    reduced = op.stateful_map("reduce", keyed, running_reduce)
    op.output("out", reduced, _bytewax_sink(sink))
    start = time.perf_counter()
    run_main(flow)
    bytewax_w2.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]
    return count[0]


def bytewax_w3(n: int) -> int:
    """W3 on bytewax: key_on, reduce_window with an EventClock and 1 s TumblingWindower.

    The EventClock is driven by event time only: its watermark is the largest timestamp
    seen (no wait, the timestamps are monotonous), its "system time" is frozen so that
    wall-clock time spent processing never advances the watermark, and it never wakes up
    on its own to close windows (new records and end of input do). A record that bytewax
    still judged late raises, since it would make the sums differ from the plain loop.
    """
    import bytewax.operators as op
    import bytewax.operators.windowing as win
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSource, run_main

    records = [w3_record(i) for i in range(n)]
    count = [0]
    late = [0]

    def sink(value: Any) -> None:
        count[0] += 1

    def late_sink(value: Any) -> None:
        late[0] += 1

    def key(r: tuple[int, int, int]) -> str:
        return str(w3_key(r))

    def timestamp(r: tuple[int, int, int]) -> datetime:
        return _EPOCH + timedelta(milliseconds=w3_timestamp(r))

    clock = win.EventClock(timestamp, wait_for_system_duration=timedelta(0),
                           now_getter=lambda: _EPOCH, to_system_utc=lambda ts: None)
    windower = win.TumblingWindower(length=timedelta(seconds=1), align_to=_EPOCH)

    flow = Dataflow("W3")
    s = op.input("inp", flow, TestingSource(records, batch_size=BYTEWAX_BATCH_SIZE))
    keyed = op.key_on("key", s, key)
    out = win.reduce_window("window", keyed, clock, windower, w3_reduce)
    op.output("out", out.down, _bytewax_sink(sink))
    op.output("late", out.late, _bytewax_sink(late_sink))
    start = time.perf_counter()
    run_main(flow)
    bytewax_w3.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]
    if late[0]:
        raise RuntimeError(f"bytewax W3: {late[0]} records judged late")
    return count[0]
