"""Writer of a PandasSink: records kept in memory per subtask, a DataFrame after the job.

Each sink subtask owns one part of the sink's store. A fresh start begins an empty part;
a restart from a checkpoint cuts the part back to the records it held at that checkpoint
(the sources replay the rest), so the frame holds every record exactly once.
"""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["PandasSinkWriter"]


class PandasSinkWriter(BatchSinkWriter):
    """Appends each batch to this subtask's part of the PandasSink's store."""

    _restored_count: Optional[int] = None

    def restore(self, state: Any) -> None:
        """Remember how many records this subtask had at the restored checkpoint."""
        self._restored_count = int(state["records"])

    def open(self) -> None:
        """Start this subtask's part (or cut it back to the restored checkpoint)."""
        store = self.sink.store
        if self._restored_count is not None:
            self._part = store.resume(self.subtask_index, self._restored_count)
        else:
            self._part = store.start(self.subtask_index)
        self._extend = self._part.extend

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Keep the records."""
        self._extend(values)

    def prepare_commit(self, checkpoint_id: int) -> dict:
        """``{"records": n}``: how many records this subtask holds at the checkpoint."""
        return {"records": len(self._part)}
