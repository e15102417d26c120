"""A test harness for one operator: the task's part played by hand (Flink's OneInputStreamOperatorTestHarness).

Not a test module (no ``test_`` prefix). A test anywhere under tests/runtime loads it with
``import operator_harness as harness`` (``tests/runtime/conftest.py`` puts it on the path).

``OperatorHarness(spec, keyed=True)`` sets up the operator like a Task would (context with a
manual clock, a heap keyed backend, timer services listed on the operator, an operator state
backend), opens it, and collects everything it emits in a :class:`CollectingOutput`.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Optional

from streamkernel.graph.operator_specs import OperatorSpec
from streamkernel.runtime.core.clock import ManualClock
from streamkernel.runtime.core.metrics import OperatorMetrics
from streamkernel.runtime.operators.base import OperatorContext, TaskInfo, TwoInputStreamOperator
from streamkernel.runtime.operators.factory import OPERATOR_CLASSES
from streamkernel.runtime.core.registry import resolve


class CollectingOutput:
    """Records every call an operator makes on its output, in order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def emit(self, values: list, timestamps: Optional[list]) -> None:
        assert timestamps is None or len(timestamps) == len(values), "timestamps must match values"
        self.events.append(("records", list(values), None if timestamps is None else list(timestamps)))

    def emit_watermark(self, timestamp: int) -> None:
        self.events.append(("watermark", timestamp))

    def emit_watermark_status(self, idle: bool) -> None:
        self.events.append(("status", idle))

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        assert timestamps is None or len(timestamps) == len(values)
        self.events.append(("side", tag, list(values), None if timestamps is None else list(timestamps)))

    # -- views
    @property
    def values(self) -> list:
        """Every main-output value, in order."""
        return [v for e in self.events if e[0] == "records" for v in e[1]]

    @property
    def timestamps(self) -> list:
        """The timestamp of every main-output value (None where a batch had none)."""
        out = []
        for e in self.events:
            if e[0] == "records":
                out.extend(e[2] if e[2] is not None else [None] * len(e[1]))
        return out

    @property
    def records(self) -> list:
        """(value, timestamp) pairs of the main output."""
        return list(zip(self.values, self.timestamps))

    @property
    def watermarks(self) -> list:
        return [e[1] for e in self.events if e[0] == "watermark"]

    @property
    def statuses(self) -> list:
        return [e[1] for e in self.events if e[0] == "status"]

    def side(self, tag: Any) -> list:
        """(value, timestamp) pairs emitted to side output ``tag``."""
        out = []
        for e in self.events:
            if e[0] == "side" and e[1] == tag:
                out.extend(zip(e[2], e[3] if e[3] is not None else [None] * len(e[2])))
        return out

    def clear(self) -> None:
        self.events.clear()


def create(spec: OperatorSpec) -> Any:
    """The operator class the factory maps ``spec``'s class to, instantiated (with ``spec`` itself, not a copy)."""
    return resolve(OPERATOR_CLASSES[type(spec).__name__])(spec)


class OperatorHarness:
    """Runs one operator by hand: ``process``, ``watermark``, ``advance_time``, ``finish``, ``close``."""

    def __init__(self, spec: OperatorSpec, *, keyed: bool = False, name: str = "TestOp", start_ms: int = 0,
                 configuration: Optional[dict] = None, restored_state: Optional[dict] = None,
                 operator_state: Any = None, keyed_backend: Any = None, open_now: bool = True,
                 subtask_index: int = 0, parallelism: int = 1) -> None:
        from streamkernel.runtime.operators.timers import InternalTimerService, ProcessingTimeService

        self.clock = ManualClock(start_ms)
        self.processing_time = ProcessingTimeService(self.clock)
        self.output = CollectingOutput()
        self.operator = create(spec)
        self.backend = keyed_backend
        if keyed and self.backend is None:
            from streamkernel.runtime.state.heap import HeapKeyedStateBackend

            self.backend = HeapKeyedStateBackend(128, range(0, 128))
        if operator_state is None:
            from streamkernel.runtime.state.operator_state import DefaultOperatorStateBackend

            operator_state = DefaultOperatorStateBackend()
        operator = self.operator
        backend = self.backend
        processing_time = self.processing_time

        def timer_service(timer_name: str, triggerable: Any) -> Any:
            service = InternalTimerService(timer_name, backend, triggerable, processing_time)
            operator._timer_services.append(service)
            return service

        self.metrics = OperatorMetrics(name)
        info = TaskInfo("job-1", "test job", name, subtask_index, parallelism, 128)
        self.context = OperatorContext(
            task_info=info, node=SimpleNamespace(name=name, operator=spec), processing_time=processing_time,
            timer_service=timer_service, operator_state=operator_state, metrics=self.metrics,
            keyed_backend=backend, configuration=configuration or {}, restored_state=restored_state)
        operator.setup(self.context, self.output)
        operator.initialize_state()
        if open_now:
            operator.open()

    # -- input
    def process(self, values: list, timestamps: Optional[list] = None) -> "OperatorHarness":
        self.operator.process_batch(list(values), None if timestamps is None else list(timestamps))
        return self

    def process1(self, values: list, timestamps: Optional[list] = None) -> "OperatorHarness":
        self.operator.process_batch1(list(values), None if timestamps is None else list(timestamps))
        return self

    def process2(self, values: list, timestamps: Optional[list] = None) -> "OperatorHarness":
        self.operator.process_batch2(list(values), None if timestamps is None else list(timestamps))
        return self

    def watermark(self, timestamp: int) -> "OperatorHarness":
        if isinstance(self.operator, TwoInputStreamOperator):
            self.operator.process_watermark1(timestamp)
            self.operator.process_watermark2(timestamp)
        else:
            self.operator.process_watermark(timestamp)
        return self

    def advance_time(self, millis: int) -> "OperatorHarness":
        """Move the manual clock and run due processing-time callbacks (as the task loop does)."""
        self.clock.advance(millis)
        while self.processing_time.fire_due():
            pass
        return self

    def finish(self) -> "OperatorHarness":
        self.operator.finish()
        return self

    def close(self) -> None:
        self.operator.close()


# ---------------------------------------------------------------- window operator tests
def first(record: Any) -> Any:
    """The key selector of the window tests: a record's first field."""
    return record[0]


def add_counts(a: Any, b: Any) -> Any:
    """The reduce function of the window tests: (key, count) pairs summed."""
    return a[0], a[1] + b[1]


def entries(h: OperatorHarness, state: str = "window-contents") -> list:
    """(key, namespace) of every entry of the keyed state ``state``, read from a snapshot."""
    states = h.backend.snapshot()["states"]
    groups = states[state]["key_groups"] if state in states else {}
    return sorted(((k, ns) for group in groups.values() for k, ns, _ in group), key=repr)


def window_harness(build: Any, **kwargs: Any) -> OperatorHarness:
    """A harness running the window operator that ``build(data_stream)`` creates through the API."""
    from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    stream = build(env.from_collection([("x", 0)]))
    return OperatorHarness(stream._transformation.operator, keyed=True, **kwargs)

