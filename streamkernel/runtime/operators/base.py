"""The operator contract: what a Task calls on each operator of its chain, and what it gets.

A Task thread runs one subtask of an operator chain. It calls, in order:
``setup(context, output)`` -> ``initialize_state()`` -> ``open()`` -> then, as input
arrives, ``process_batch`` / ``process_watermark`` / ``process_watermark_status`` (and for
bounded input ``end_input``) -> ``finish()`` -> ``close()``. Checkpoints call
``snapshot_state`` between batches. Everything runs in the task's thread: an operator never
needs a lock (Flink's mailbox model); timers fire in the same thread.

The hot path is :meth:`StreamOperator.process_batch`: it receives a batch (``values`` and
``timestamps``, see :mod:`streamkernel.runtime.core.records`) and emits results with one call
to ``self.output.emit(values, timestamps)`` per batch, not per record.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Protocol

from streamkernel.common.watermark_strategy import MIN_WATERMARK
from streamkernel.graph.operator_specs import OperatorSpec
from streamkernel.runtime.operators.key_group_check import KeyGroupCheck

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.graph.stream_graph import StreamNode
    from streamkernel.runtime.core.metrics import OperatorMetrics
    from streamkernel.runtime.operators.timers import InternalTimerService, ProcessingTimeService, Triggerable
    from streamkernel.runtime.state.api import KeyedStateBackend, OperatorStateBackend

__all__ = ["Output", "TaskInfo", "OperatorContext", "StreamOperator", "TwoInputStreamOperator"]


class Output(Protocol):
    """Where an operator's results go: the next chained operator, or the network."""

    def emit(self, values: list, timestamps: Optional[list]) -> None:
        """Emit a batch of records (``timestamps`` None when they have none)."""

    def emit_watermark(self, timestamp: int) -> None:
        """Emit a watermark (event time has reached ``timestamp``)."""

    def emit_watermark_status(self, idle: bool) -> None:
        """Tell downstream this output became idle / active (with_idleness)."""

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        """Emit a batch to the side output ``tag`` (an OutputTag)."""


@dataclass(frozen=True)
class TaskInfo:
    """Who is running: job, task (job vertex) and subtask, as RuntimeContext reports them."""

    job_id: str
    job_name: str
    task_name: str
    subtask_index: int
    parallelism: int
    max_parallelism: int
    attempt_number: int = 0
    #: the task's name as PyFlink names it (merged Python operators: ``"Map, Filter -> Sink: ..."``)
    pyflink_task_name: str = ""

    @property
    def task_name_with_subtasks(self) -> str:
        """Flink's ``"Map -> Filter (2/4)#0"`` form (1-based index, attempt after #)."""
        return f"{self.task_name} ({self.subtask_index + 1}/{self.parallelism})#{self.attempt_number}"

    @property
    def pyflink_task_name_with_subtasks(self) -> str:
        """``task_name_with_subtasks`` with PyFlink's task name, as a PyFlink RuntimeContext reports it."""
        name = self.pyflink_task_name or self.task_name
        return f"{name} ({self.subtask_index + 1}/{self.parallelism})#{self.attempt_number}"


@dataclass
class OperatorContext:
    """Everything the Task gives an operator in ``setup``.

    ``keyed_backend`` is set for keyed operators (those reading a key_by stream);
    ``timer_service(name, triggerable)`` returns the operator's timer service (event and
    processing time, namespaced, keyed when the operator is keyed); ``processing_time``
    is the task's clock and processing-time scheduler; ``restored_state`` is what
    ``snapshot_state`` returned at the checkpoint being restored (None on a fresh start).
    """

    task_info: TaskInfo
    node: "StreamNode"
    processing_time: "ProcessingTimeService"
    timer_service: Callable[[str, "Triggerable"], "InternalTimerService"]
    operator_state: "OperatorStateBackend"
    metrics: "OperatorMetrics"
    keyed_backend: Optional["KeyedStateBackend"] = None
    configuration: Mapping[str, str] = field(default_factory=dict)
    job_parameters: Mapping[str, str] = field(default_factory=dict)
    restored_state: Optional[dict] = None


class StreamOperator(ABC):
    """One operator of a chain; subclasses implement :meth:`process_batch`.

    The default watermark handling forwards the watermark after the operator's timer
    services advanced (firing due event-time timers). Subclasses that keep timers register
    them with ``self.context.timer_service(...)`` and list them in ``self._timer_services``.
    """

    def __init__(self, spec: OperatorSpec) -> None:
        self.spec = spec
        self.function = spec.function
        self.output: Output = None  # type: ignore[assignment]  # set by setup
        self.context: OperatorContext = None  # type: ignore[assignment]
        self.current_watermark: int = MIN_WATERMARK
        self._timer_services: list["InternalTimerService"] = []
        #: checks keys made current against this subtask's key groups (None: nothing to check)
        self.key_group_check: Optional[KeyGroupCheck] = None

    # ---------------------------------------------------------------- lifecycle
    def setup(self, context: OperatorContext, output: Output) -> None:
        """Receive the task's context and the output to emit to."""
        self.context = context
        self.output = output
        self.key_group_check = KeyGroupCheck.for_operator(self)

    def initialize_state(self) -> None:
        """Restore operator state from ``self.context.restored_state`` (keyed state is restored by the task)."""

    def open(self) -> None:
        """Open the user function (``function.open(runtime_context)``)."""
        if self.function is not None and hasattr(self.function, "open"):
            from streamkernel.runtime.operators.runtime_context import StreamingRuntimeContext

            self.function.open(StreamingRuntimeContext(self.context))

    @abstractmethod
    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Process a batch of records and emit the results (one emit per batch)."""

    def process_watermark(self, timestamp: int) -> None:
        """Advance event time: fire due event-time timers, then forward the watermark."""
        self.current_watermark = timestamp
        for timers in self._timer_services:
            timers.advance_watermark(timestamp)
        self.output.emit_watermark(timestamp)

    def process_watermark_status(self, idle: bool) -> None:
        """The input became idle or active: forwarded by default."""
        self.output.emit_watermark_status(idle)

    def end_input(self) -> None:
        """The (bounded) input ended: no more records will come."""

    def finish(self) -> None:
        """Emit what is still buffered; called once after the input ended, before close."""

    def close(self) -> None:
        """Release resources and close the user function (also after a failure)."""
        if self.function is not None and hasattr(self.function, "close"):
            self.function.close()

    # ------------------------------------------------------------- checkpoints
    def snapshot_state(self, checkpoint_id: int) -> Optional[dict]:
        """This operator's own (non-keyed) state at a checkpoint, or None."""
        return None

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed everywhere (two-phase-commit sinks commit here)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.kind})"


class TwoInputStreamOperator(StreamOperator):
    """An operator with two inputs (connect); its watermark is the minimum of both inputs'."""

    def __init__(self, spec: OperatorSpec) -> None:
        super().__init__(spec)
        self._input_watermarks = [MIN_WATERMARK, MIN_WATERMARK]

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:  # pragma: no cover
        raise TypeError("a two-input operator takes process_batch1 / process_batch2")

    @abstractmethod
    def process_batch1(self, values: list, timestamps: Optional[list]) -> None:
        """A batch from the first input."""

    @abstractmethod
    def process_batch2(self, values: list, timestamps: Optional[list]) -> None:
        """A batch from the second input."""

    def process_watermark1(self, timestamp: int) -> None:
        """A watermark from the first input."""
        self._input_watermark(0, timestamp)

    def process_watermark2(self, timestamp: int) -> None:
        """A watermark from the second input."""
        self._input_watermark(1, timestamp)

    def _input_watermark(self, index: int, timestamp: int) -> None:
        self._input_watermarks[index] = timestamp
        combined = min(self._input_watermarks)
        if combined > self.current_watermark:
            self.process_watermark(combined)

    def end_input(self, index: int = 0) -> None:
        """Input ``index`` (0 or 1) ended."""
