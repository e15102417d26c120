"""TimestampsAndWatermarksOperator: ``assign_timestamps_and_watermarks`` in the middle of a dataflow.

Flink's operator of the same name. Per batch: the strategy's TimestampAssigner gives each
record its timestamp (one list comprehension), and the WatermarkGenerator sees the batch's
largest timestamp once (the built-in generators only track the maximum, so that is the
same as seeing every event). Every ``pipeline.auto-watermark-interval`` ms of processing
time (200 by default; 0 switches periodic watermarks off) a processing-time callback asks
the generator for a watermark and emits it when it advances.

Upstream watermarks are ignored — this operator makes its own — except the final
``MAX_WATERMARK`` (end of input), which is forwarded, as Flink does; upstream idleness is
ignored too. With ``with_idleness(t)``, when no record arrived for ``t`` ms of processing
time the output is marked idle (checked on the periodic callback, as Flink's
IdlenessTimer); the next record marks it active again.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.common.options import PipelineOptions
from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK, NoWatermarksGenerator
from streamkernel.graph.operator_specs import TimestampsWatermarksSpec
from streamkernel.runtime.operators.base import StreamOperator
from streamkernel.runtime.operators.batch_sorting import is_batch_mode
from streamkernel.runtime.operators.contexts import wrap_user_error
from streamkernel.runtime.operators.simple import failed_index

__all__ = ["TimestampsAndWatermarksOperator", "AUTO_WATERMARK_INTERVAL", "DEFAULT_AUTO_WATERMARK_INTERVAL_MS"]

#: the configuration key of the periodic watermark interval
AUTO_WATERMARK_INTERVAL = "pipeline.auto-watermark-interval"
#: Flink's default interval (ms)
DEFAULT_AUTO_WATERMARK_INTERVAL_MS: int = PipelineOptions.AUTO_WATERMARK_INTERVAL.default_value().to_milliseconds()  # type: ignore[union-attr]


def _direct_extractor(assigner: Any) -> tuple[Optional[Callable[..., int]], bool]:
    """The user's plain function behind a function-based assigner, and whether it takes the timestamp.

    ``with_timestamp_assigner(lambda e, ts: ...)`` wraps the function; calling it directly
    saves one Python call per record (W3). (None, True) for a TimestampAssigner subclass.
    """
    function = getattr(assigner, "_function", None)
    takes = getattr(assigner, "_takes_timestamp", None)
    if callable(function) and isinstance(takes, bool):
        return function, takes
    return None, True


class TimestampsAndWatermarksOperator(StreamOperator):
    """Assigns timestamps and generates watermarks from ``spec.watermark_strategy``."""

    def __init__(self, spec: TimestampsWatermarksSpec) -> None:
        super().__init__(spec)
        self.strategy = spec.watermark_strategy
        self._generator: Any = None
        self._extract: Optional[Callable[..., int]] = None
        self._extract_takes_timestamp = True
        self._interval_ms = DEFAULT_AUTO_WATERMARK_INTERVAL_MS
        self._idle_timeout_ms: Optional[int] = self.strategy.idle_timeout_ms
        self._output_watermark = MIN_WATERMARK
        self._idle = False
        self._last_record_ms = 0
        self._timer: Any = None
        self._closed = False

    def open(self) -> None:
        """Create the watermark generator and start the periodic watermark callback."""
        self._generator = self.strategy.create_watermark_generator()
        assigner = self.strategy.timestamp_assigner
        if assigner is not None:
            function, takes = _direct_extractor(assigner)
            if function is not None:
                self._extract, self._extract_takes_timestamp = function, takes
            else:
                self._extract, self._extract_takes_timestamp = assigner.extract_timestamp, True
        self._interval_ms = PipelineOptions.AUTO_WATERMARK_INTERVAL.get(self.context.configuration).to_milliseconds()
        if is_batch_mode(self.context.configuration):
            # BATCH: timestamps only; no watermark but the final one (Flink: emitProgressiveWatermarks=false)
            self._generator, self._interval_ms, self._idle_timeout_ms = NoWatermarksGenerator(), 0, None
        self._last_record_ms = self.context.processing_time.current_processing_time()
        self._schedule()
        super().open()

    def _schedule(self) -> None:
        periodic = self.strategy.max_out_of_orderness_ms is not None or self._idle_timeout_ms is not None
        if self._interval_ms > 0 and periodic and not self._closed:
            service = self.context.processing_time
            self._timer = service.register_timer(service.current_processing_time() + self._interval_ms,
                                                 self._on_periodic)

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Assign the timestamps of a batch, show its max to the generator, emit it."""
        if not values:
            return
        if self._idle:
            self._mark_active()
        if self._idle_timeout_ms is not None:
            self._last_record_ms = self.context.processing_time.current_processing_time()
        extract = self._extract
        if extract is not None:
            it = iter(values)
            try:
                if not self._extract_takes_timestamp:
                    timestamps = list(map(extract, it))
                elif timestamps is None:
                    # as Flink: a record without timestamp passes Long.MIN_VALUE as record_timestamp
                    timestamps = [extract(v, MIN_WATERMARK) for v in it]
                else:
                    timestamps = list(map(extract, it, timestamps))
            except Exception as exc:
                raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc
        if timestamps is not None:
            try:
                newest = max(timestamps)
            except TypeError as exc:
                bad = next((t for t in timestamps if not isinstance(t, int)), None)
                source = "the timestamp assigner returned" if extract is not None else "the record carries"
                raise wrap_user_error(self, values[timestamps.index(bad)], TypeError(
                    f"event-time timestamps must be int epoch milliseconds; {source} {bad!r}")) from exc
            watermark = self._generator.on_event(values[timestamps.index(newest)], newest)
        else:
            watermark = None
        metrics = self.context.metrics
        metrics.records_in += len(values)
        metrics.records_out += len(values)
        self.output.emit(values, timestamps)
        if watermark is not None:  # a punctuated watermark follows the records it was derived from
            self._emit_watermark(watermark)

    def _on_periodic(self, *_: Any) -> None:
        """Processing-time callback: emit the generator's watermark; detect idleness; re-register."""
        if self._closed:
            return
        if self._idle_timeout_ms is not None and not self._idle:
            now = self.context.processing_time.current_processing_time()
            if now - self._last_record_ms >= self._idle_timeout_ms:
                self._idle = True
                self.output.emit_watermark_status(True)
        if not self._idle:
            watermark = self._generator.on_periodic_emit()
            if watermark is not None:
                self._emit_watermark(watermark)
        self._schedule()

    def _emit_watermark(self, watermark: int) -> None:
        if watermark > self._output_watermark:
            if self._idle:
                self._mark_active()
            self._output_watermark = watermark
            self.current_watermark = watermark
            self.output.emit_watermark(watermark)

    def _mark_active(self) -> None:
        self._idle = False
        self.output.emit_watermark_status(False)

    def process_watermark(self, timestamp: int) -> None:
        """Upstream watermarks are ignored, except the end of input (MAX_WATERMARK), forwarded."""
        if timestamp == MAX_WATERMARK and self._output_watermark != MAX_WATERMARK:
            if self._idle:
                self._mark_active()
            self._output_watermark = self.current_watermark = MAX_WATERMARK
            self.output.emit_watermark(MAX_WATERMARK)

    def process_watermark_status(self, idle: bool) -> None:
        """Upstream idleness is ignored: this operator decides its own (Flink does the same)."""

    def finish(self) -> None:
        """A last periodic emission at the end of input (Flink's finish)."""
        if self._generator is not None and not self._idle:
            watermark = self._generator.on_periodic_emit()
            if watermark is not None:
                self._emit_watermark(watermark)

    def close(self) -> None:
        """Stop the periodic callback."""
        self._closed = True
        if self._timer is not None and hasattr(self._timer, "cancel"):
            self._timer.cancel()
        self._timer = None
        super().close()
