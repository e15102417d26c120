"""The runtime side of a sink: a :class:`BatchSinkWriter` per sink subtask.

The SinkOperator turns its ``sink`` param into a writer (``create_sink_writer``) and calls,
in the task's thread:

``open()`` -> ``write_batch(values, timestamps)`` per batch (the hot path: one call per
batch) and ``write_watermark(ts)`` -> ``finish()`` once at the end of a bounded input
(flush everything and commit) -> ``close()`` (always, also after a failure: release
resources, commit nothing).

Checkpoints (two-phase commit, as Flink's TwoPhaseCommittingSink): ``prepare_commit(id)``
flushes and returns this writer's state for checkpoint ``id`` (e.g. the part files it will
commit); ``commit(id)`` runs when that checkpoint completed everywhere;
``restore(state)`` gets the state of the checkpoint a job restarts from (and commits what
that checkpoint had prepared, since it completed). Restored at another parallelism, every
new subtask gets ``restore_rescaled(states)`` with every old subtask's state (None where
one had none), in old subtask order; a writer that can recover them takes its share (old
subtask *j* belongs to new subtask ``j % parallelism``: :meth:`BatchSinkWriter.owned_states`),
one that cannot refuses clearly (the default).

Exactly-once sinks (FileSink, CollectSink, PandasSink) stage what they write and make it
visible only when the covering checkpoint completes, when the job checkpoints
(:func:`checkpointing_enabled`); without checkpointing they publish at once, so a
restarted job (which replays its sources from the beginning) may publish records twice.
"""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.common.options import CheckpointingOptions
from streamkernel.datastream.connectors.sink_writer import SinkContext
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.operators.base import OperatorContext

__all__ = ["BatchSinkWriter", "checkpointing_enabled"]


def checkpointing_enabled(configuration: Any) -> bool:
    """True if the job checkpoints (``execution.checkpointing.interval`` set and > 0)."""
    interval = CheckpointingOptions.CHECKPOINTING_INTERVAL.get(configuration)
    return interval is not None and interval.to_milliseconds() > 0


class BatchSinkWriter:
    """Writes the batches of one sink subtask somewhere outside the dataflow."""

    def __init__(self, sink: Any, context: OperatorContext) -> None:
        self.sink = sink
        self.context = context
        self.subtask_index = context.task_info.subtask_index
        self.parallelism = context.task_info.parallelism
        #: shared with SinkFunction / SinkWriter calls (one object, updated per record)
        self.sink_context = SinkContext(context.processing_time.current_processing_time)

    @property
    def input_type(self) -> Any:
        """The declared TypeInformation of the records written (None when not declared)."""
        operator = getattr(self.context.node, "operator", None)
        return getattr(operator, "input_type", None)

    def open(self) -> None:
        """Acquire resources (files, buffers)."""

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Write a batch of records (``timestamps`` None when they have none)."""
        raise NotImplementedError

    def write_watermark(self, timestamp: int) -> None:
        """The input watermark advanced."""
        self.sink_context._watermark = timestamp

    def finish(self) -> None:
        """The bounded input ended: flush and commit everything."""

    def prepare_commit(self, checkpoint_id: int) -> Any:
        """Flush for checkpoint ``checkpoint_id``; the state to store with it (None: nothing)."""
        return None

    def commit(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: make its prepared output visible."""

    def restore(self, state: Any) -> None:
        """Restart from a completed checkpoint whose ``prepare_commit`` returned ``state``."""

    def restore_rescaled(self, states: list) -> None:
        """Restart at another parallelism from every old subtask's ``prepare_commit`` state
        (None entries: no state). By default only possible when there is no state at all."""
        if any(state is not None for state in states):
            raise InvalidProgramError(
                f"sink {self.context.node.name!r} ({type(self.sink).__name__}) cannot be restored at another "
                f"parallelism ({len(states)} -> {self.parallelism}): its writer keeps per-subtask state it cannot "
                f"redistribute; restore at parallelism {len(states)}")

    def owned_states(self, states: list) -> dict[int, Any]:
        """Old subtask index -> state, for the old subtasks this subtask recovers (``j % parallelism``)."""
        return {j: state for j, state in enumerate(states)
                if state is not None and j % self.parallelism == self.subtask_index}

    def close(self) -> None:
        """Release resources; called last, also after a failure."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.subtask_index + 1}/{self.parallelism})"
