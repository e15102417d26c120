"""The source operator: the head of a source task's chain, driven by the task (it has no input).

The Task calls :meth:`SourceOperator.emit_next` in its loop; each call reads one batch from
the subtask's :class:`~streamkernel.runtime.sources.base.SourceReader` and emits it. The
operator also does what Flink's SourceOperator does around the reader:

* **timestamps**: with a WatermarkStrategy that has a timestamp assigner, every record's
  timestamp is ``assigner.extract_timestamp(value, record_timestamp)`` (the record's own
  timestamp, or MIN_WATERMARK when it has none, as Flink's ``NO_TIMESTAMP``). Without an
  assigner records keep the reader's timestamps; the built-in sources have none (unlike
  Kafka records), so a strategy without assigner (e.g. ``for_monotonous_timestamps()``
  alone) yields no timestamps and no watermarks before the final one;
* **watermarks**: the strategy's generator sees each batch once (``on_event`` with the
  batch's largest timestamp: equivalent for the built-in generators, which only track the
  maximum) and is asked for a periodic watermark every ``pipeline.auto-watermark-interval``
  (200 ms; 0 disables) of processing time, checked on every ``emit_next``;
* **idleness**: ``with_idleness(t)`` marks the output idle after ``t`` without records; a
  reader without splits (``is_idle``, e.g. a MemoryLog subtask with no partition) is idle
  at once. The next record or watermark marks it active again;
* **end of input**: when the reader finishes, MAX_WATERMARK is emitted (Flink: event time
  ends with the source) and ``emit_next`` returns False; the Task then sends END_OF_PARTITION;
* **checkpoints**: ``snapshot_state`` returns ``{"splits": reader.snapshot_splits()}`` for a
  reader with split-level positions, else ``{"position": reader.snapshot_position()}``;
  ``initialize_state`` restores it from ``context.restored_state``. At the same parallelism
  a subtask gets back exactly what it snapshotted. At another parallelism it gets
  ``{"raw_all": [every old subtask's state]}`` (see ``checkpoint.restore``): it
  concatenates the old subtasks' splits in old subtask order, lets the reader cut them
  finer (``rebalance_splits``) and keeps those its reader ``owns_split`` (by default split
  *i* -> subtask ``i % parallelism``), so every split, finished or not, lands on exactly
  one new subtask. A per-subtask position cannot be
  redistributed: restoring one at another parallelism is refused with a clear error.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator, Optional

from streamkernel.common.options import PipelineOptions
from streamkernel.common.watermark_strategy import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    NoWatermarksGenerator,
    TimestampAssigner,
)
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.operator_specs import SourceSpec
from streamkernel.runtime.operators.base import OperatorContext, Output, StreamOperator
from streamkernel.runtime.operators.batch_sorting import is_batch_mode
from streamkernel.runtime.operators.contexts import wrap_user_error
from streamkernel.runtime.operators.simple import failed_index
from streamkernel.runtime.sources import create_reader
from streamkernel.runtime.sources.base import SourceReader

__all__ = ["SourceOperator", "DEFAULT_BATCH_SIZE", "timestamp_extractor"]

#: records read per ``emit_next`` by default
DEFAULT_BATCH_SIZE = 1024


def timestamp_extractor(assigner: TimestampAssigner) -> Callable[[Iterator[Any], Optional[list]], list]:
    """``f(iter(values), timestamps) -> new timestamps`` for a batch, with as few calls per record as possible.

    A plain function given to ``with_timestamp_assigner`` is called directly (one call per
    record instead of two through ``extract_timestamp``). The values come as an iterator so
    that, when the assigner raises, the caller knows which record it was (``failed_index``).
    """
    function = getattr(assigner, "_function", None)
    takes_timestamp = getattr(assigner, "_takes_timestamp", None)
    if callable(function) and takes_timestamp is False:
        return lambda values, timestamps: list(map(function, values))
    extract = function if callable(function) and takes_timestamp else assigner.extract_timestamp

    def extract_batch(values: Iterator[Any], timestamps: Optional[list]) -> list:
        if timestamps is None:
            # as Flink: a record without timestamp passes Long.MIN_VALUE as record_timestamp
            return [extract(v, MIN_WATERMARK) for v in values]
        return list(map(extract, values, timestamps))

    return extract_batch


class SourceOperator(StreamOperator):
    """Reads the subtask's share of a Source and emits it with timestamps and watermarks.

    Spec fields: ``source`` (a Source) and ``watermark_strategy`` (a WatermarkStrategy or
    None: no timestamps, no watermarks but the final MAX_WATERMARK).
    """

    def __init__(self, spec: SourceSpec) -> None:
        super().__init__(spec)
        self.source = spec.source
        self.watermark_strategy = spec.watermark_strategy
        self.reader: Optional[SourceReader] = None
        #: True once the reader finished and MAX_WATERMARK went out
        self.finished = False
        #: True while the output is marked idle
        self.idle = False
        #: set to interrupt the task's wait between polls (the Task sets it on cancel)
        self.wakeup = threading.Event()
        self._had_records = True
        self._extract: Optional[Callable[[Iterator[Any], Optional[list]], list]] = None
        self._generator: Any = None
        self._interval_ms: Optional[int] = None
        self._idle_timeout_ms: Optional[int] = None
        self._next_periodic_ms = 0
        self._last_record_ms = 0
        self._now_ms: Callable[[], int] = lambda: 0

    # ---------------------------------------------------------------- lifecycle
    def setup(self, context: OperatorContext, output: Output) -> None:
        """Create the reader of this subtask's splits and the watermark machinery."""
        super().setup(context, output)
        info = context.task_info
        self._now_ms = context.processing_time.current_processing_time
        self.reader = create_reader(self.source, info.subtask_index, info.parallelism, now_ms=self._now_ms)
        strategy = self.watermark_strategy
        if strategy is None:
            return
        if strategy.timestamp_assigner is not None:
            self._extract = timestamp_extractor(strategy.timestamp_assigner)
        self._generator = strategy.create_watermark_generator()
        interval = PipelineOptions.AUTO_WATERMARK_INTERVAL.get(context.configuration).to_milliseconds()
        self._interval_ms = interval if interval > 0 else None
        self._idle_timeout_ms = strategy.idle_timeout_ms
        if is_batch_mode(context.configuration):
            # BATCH: timestamps only; no watermark but the final one (Flink: emitProgressiveWatermarks=false)
            self._generator, self._interval_ms, self._idle_timeout_ms = NoWatermarksGenerator(), None, None

    def initialize_state(self) -> None:
        """Move the reader to the restored position, if any (redistributing splits after a rescale)."""
        restored = self.context.restored_state
        if restored is None:
            return
        reader = self.reader
        assert reader is not None
        if "raw_all" in restored:
            self._restore_rescaled(reader, restored["raw_all"])
        elif restored.get("splits") is not None:
            self._require_splits(reader, "its checkpointed position is a list of splits")
            reader.restore_splits(list(restored["splits"]))
        elif restored.get("position") is not None:
            reader.restore_position(restored["position"])

    def _restore_rescaled(self, reader: SourceReader, raw_all: list) -> None:
        """Take this subtask's share of every old subtask's splits (module docstring)."""
        old = [raw for raw in raw_all if raw is not None]
        positions = [raw for raw in old if raw.get("position") is not None]
        if positions:
            raise InvalidProgramError(
                f"cannot restore {self._describe()} from {len(raw_all)} subtasks at parallelism "
                f"{self.context.task_info.parallelism}: its reader ({type(reader).__name__}) keeps one position "
                f"per subtask, not splits; restore it at parallelism {len(raw_all)}, or give the reader "
                f"snapshot_splits() / restore_splits()")
        if not any(raw.get("splits") is not None for raw in old):
            return  # nothing was read anywhere: start afresh
        self._require_splits(reader, "it is restored at another parallelism")
        every = reader.rebalance_splits([split for raw in old for split in (raw.get("splits") or ())])
        reader.restore_splits([split for index, split in enumerate(every) if reader.owns_split(index, split)])

    def _require_splits(self, reader: SourceReader, why: str) -> None:
        if not reader.supports_splits:
            raise InvalidProgramError(
                f"cannot restore {self._describe()}: {why}, but its reader ({type(reader).__name__}) has no "
                f"snapshot_splits() / restore_splits(); was the source replaced by another kind of source?")

    def open(self) -> None:
        """Open the reader; mark the output idle if it has nothing assigned."""
        self.reader.open()  # type: ignore[union-attr]
        now = self._now_ms()
        self._last_record_ms = now
        if self._interval_ms is not None:
            self._next_periodic_ms = now + self._interval_ms
        if self.reader.is_idle:  # type: ignore[union-attr]
            self._set_idle(True)

    def close(self) -> None:
        """Close the reader (files, sockets)."""
        if self.reader is not None:
            self.reader.close()

    # --------------------------------------------------------------- the loop
    def emit_next(self, max_records: int = DEFAULT_BATCH_SIZE) -> bool:
        """Read and emit one batch; False once the reader finished (MAX_WATERMARK was emitted)."""
        if self.finished:
            return False
        batch = self.reader.read_batch(max_records)  # type: ignore[union-attr]
        if batch is None:
            self.finished = True
            self._emit_watermark(MAX_WATERMARK)
            return False
        values, timestamps = batch
        self._had_records = bool(values)
        if values:
            if self.idle:
                self._set_idle(False)
            if self._extract is not None:
                timestamps = self._timestamps(values, timestamps)
            newest = self._newest(values, timestamps) if self._generator is not None else None
            self.output.emit(values, timestamps)
            metrics = self.context.metrics
            metrics.records_in += len(values)
            metrics.records_out += len(values)
            metrics.last_emit_ms = self._now_ms()  # per batch: sourceIdleTime, currentEmitEventTimeLag
            metrics.last_event_time = newest
            if newest is not None:
                punctuated = self._generator.on_event(values[-1], newest)
                if punctuated is not None:
                    self._emit_watermark(punctuated)
        elif self.reader.is_idle and not self.idle:  # type: ignore[union-attr]
            self._set_idle(True)
        if self._interval_ms is not None or self._idle_timeout_ms is not None:
            self._on_processing_time(bool(values))
        return True

    def _timestamps(self, values: list, timestamps: Optional[list]) -> list:
        it = iter(values)
        try:
            return self._extract(it, timestamps)  # type: ignore[misc]
        except Exception as exc:
            raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc

    def _newest(self, values: list, timestamps: Optional[list]) -> Optional[int]:
        """The batch's largest timestamp (None without timestamps), checking they are ints."""
        if timestamps is None:
            return None
        try:
            return max(timestamps)
        except TypeError as exc:
            bad = next(t for t in timestamps if not isinstance(t, int))
            raise wrap_user_error(self, values[timestamps.index(bad)], TypeError(
                f"event-time timestamps must be int epoch milliseconds; the timestamp assigner "
                f"returned {bad!r}")) from exc

    def _on_processing_time(self, had_records: bool) -> None:
        """Periodic watermarks and idleness, checked once per emit_next."""
        now = self._now_ms()
        if had_records:
            self._last_record_ms = now
        elif (self._idle_timeout_ms is not None and not self.idle
              and now - self._last_record_ms >= self._idle_timeout_ms):
            self._set_idle(True)
        if self._interval_ms is not None and now >= self._next_periodic_ms:
            self._next_periodic_ms = now + self._interval_ms
            if not self.idle:
                watermark = self._generator.on_periodic_emit()
                if watermark is not None:
                    self._emit_watermark(watermark)

    def advance_to_end_of_event_time(self) -> None:
        """Stop-with-savepoint with drain: emit MAX_WATERMARK now (Flink's ``advanceToEndOfEventTime``)."""
        self._emit_watermark(MAX_WATERMARK)

    def _emit_watermark(self, timestamp: int) -> None:
        if timestamp <= self.current_watermark:
            return
        if self.idle:
            self._set_idle(False)
        self.current_watermark = timestamp
        self.context.metrics.output_watermark = timestamp
        self.output.emit_watermark(timestamp)

    def _set_idle(self, idle: bool) -> None:
        self.idle = idle
        self.output.emit_watermark_status(idle)

    def idle_wait_seconds(self) -> float:
        """How long the task may wait before the next ``emit_next`` (0 after a batch with records)."""
        if self._had_records or self.finished:
            return 0.0
        delay = self.reader.poll_delay_seconds()  # type: ignore[union-attr]
        if self._interval_ms is not None and not self.idle:
            delay = min(delay, max(0.0, (self._next_periodic_ms - self._now_ms()) / 1000.0))
        return delay

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """A source has no input."""
        raise TypeError(f"{self._describe()} has no input; the task drives it with emit_next()")

    # ------------------------------------------------------------- checkpoints
    def snapshot_state(self, checkpoint_id: int) -> dict:
        """``{"splits": [...]}`` (or ``{"position": ...}``): where the reader stands after the last emitted batch."""
        reader = self.reader
        assert reader is not None
        if reader.supports_splits:
            return {"splits": reader.snapshot_splits()}
        return {"position": reader.snapshot_position()}

    def _describe(self) -> str:
        if self.context is None:
            return f"source {self.source!r}"
        info = self.context.task_info
        return f"source {self.context.node.name!r} (subtask {info.subtask_index + 1}/{info.parallelism})"
