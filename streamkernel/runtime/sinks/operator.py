"""The sink operator: the end of a chain, writing batches outside the dataflow through a sink writer.

``spec.sink`` (PrintSink, CollectSink, PandasSink, FileSink, CsvSink, a SinkFunction
or a Sink with ``create_writer``) becomes a
:class:`~streamkernel.runtime.sinks.base.BatchSinkWriter` (``create_sink_writer``); the
operator feeds it one batch per call. A sink has no output: watermarks stop here (the
writer is told, for ``SinkContext.current_watermark``), as do idleness changes.

Checkpoints are a two-phase commit: ``snapshot_state`` asks the writer to prepare (flush,
list what the checkpoint will publish) and stores that as ``{"writer": ...}``;
``notify_checkpoint_complete`` commits; ``initialize_state`` hands a restored state back
(``writer.restore(state)``), or, when the parallelism changed, every old subtask's state
(``writer.restore_rescaled([...])``, see :mod:`streamkernel.runtime.sinks.base`).
"""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.graph.operator_specs import SinkSpec
from streamkernel.runtime.operators.base import OperatorContext, Output, StreamOperator
from streamkernel.runtime.sinks import create_sink_writer
from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["SinkOperator"]


class SinkOperator(StreamOperator):
    """Writes every batch it receives with the writer of ``spec.sink``."""

    def __init__(self, spec: SinkSpec) -> None:
        super().__init__(spec)
        self.sink = spec.sink
        self.writer: Optional[BatchSinkWriter] = None

    def setup(self, context: OperatorContext, output: Output) -> None:
        """Create the sink writer for this subtask."""
        super().setup(context, output)
        self.writer = create_sink_writer(self.sink, context)

    def initialize_state(self) -> None:
        """Give the writer the state of the checkpoint being restored, if any."""
        restored = self.context.restored_state
        if restored is None:
            return
        if "raw_all" in restored:
            states = [(raw or {}).get("writer") for raw in restored["raw_all"]]
            self.writer.restore_rescaled(states)  # type: ignore[union-attr]
        elif restored.get("writer") is not None:
            self.writer.restore(restored["writer"])  # type: ignore[union-attr]

    def open(self) -> None:
        """Open the writer."""
        writer = self.writer
        writer.open()  # type: ignore[union-attr]
        self._write = writer.write_batch  # type: ignore[union-attr]
        self._metrics = self.context.metrics

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Write the batch (one writer call per batch)."""
        if values:
            self._metrics.records_in += len(values)
            self._write(values, timestamps)

    def process_watermark(self, timestamp: int) -> None:
        """Remember the watermark and tell the writer; nothing is forwarded (a sink has no output)."""
        self.current_watermark = timestamp
        self.writer.write_watermark(timestamp)  # type: ignore[union-attr]

    def process_watermark_status(self, idle: bool) -> None:
        """Nothing to forward."""

    def process_latency_marker(self, marker: Any) -> float:
        """The end-to-end latency (ms) a LatencyMarker measured; the task records it in its metrics."""
        return float(self.context.processing_time.current_processing_time() - marker.marked_time)

    def finish(self) -> None:
        """End of input: the writer flushes and commits everything."""
        self.writer.finish()  # type: ignore[union-attr]

    def close(self) -> None:
        """Close the writer (also after a failure; nothing is committed then)."""
        if self.writer is not None:
            self.writer.close()

    def snapshot_state(self, checkpoint_id: int) -> dict:
        """``{"writer": ...}``: what the writer prepared for checkpoint ``checkpoint_id``."""
        return {"writer": self.writer.prepare_commit(checkpoint_id)}  # type: ignore[union-attr]

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Publish what checkpoint ``checkpoint_id`` prepared."""
        self.writer.commit(checkpoint_id)  # type: ignore[union-attr]
