"""A task's part in checkpoints: snapshot its operators, store the snapshot, pass the barrier on.

When a barrier is aligned (or, in a source task, when the JobMaster triggers a checkpoint
between two batches) the task thread — so no record is processed meanwhile — snapshots
every operator of its chain, writes the snapshot to checkpoint storage, forwards the
barrier on every output channel and acknowledges to the JobMaster. It restores the same
structure when it is deployed with restored state.

A task snapshot maps each operator's key (its uid, or ``node-<generated id>`` without one) to::

    {"keyed": keyed-backend snapshot or None, "timers": [timer-service snapshots],
     "operator": operator-state snapshot, "raw": what operator.snapshot_state returned}

and restored state comes in the same shape, except that ``keyed`` and ``timers`` are lists
of snapshots (after rescaling, a subtask's key groups may come from several old subtasks)
and ``raw_all`` may hold every old subtask's raw state when the parallelism changed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.graph.stream_graph import StreamNode
from streamkernel.runtime.checkpoint.metadata import operator_key
from streamkernel.runtime.core.records import CheckpointBarrier

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.operators.base import OperatorContext, StreamOperator
    from streamkernel.runtime.tasks.stream_task import StreamTask

__all__ = ["TaskCheckpointer"]

_log = logging.getLogger(__name__)


class TaskCheckpointer:
    """Snapshots, stores and restores the state of one task's operator chain."""

    def __init__(self, task: "StreamTask") -> None:
        self.task = task
        self.contexts: dict[int, "OperatorContext"] = {}

    # ---------------------------------------------------------------- restore
    def restored_for(self, node: StreamNode) -> Optional[dict]:
        """The restored state of ``node`` from the deployment descriptor, or None."""
        restored = self.task.tdd.restored_state
        return None if not restored else restored.get(operator_key(node))

    def restore_before_open(self, node: StreamNode, context: "OperatorContext") -> None:
        """Keyed and operator state go back in before ``open()`` (operators read them there)."""
        restored = self.restored_for(node)
        if not restored:
            return
        if context.keyed_backend is not None and restored.get("keyed"):
            context.keyed_backend.restore([s for s in restored["keyed"] if s])
        if restored.get("operator"):
            context.operator_state.restore(restored["operator"])

    def restore_after_open(self, node: StreamNode, operator: "StreamOperator") -> None:
        """Timer services exist once operators opened: restore their timers now."""
        restored = self.restored_for(node)
        if not restored or not restored.get("timers"):
            return
        backend = self.contexts[node.id].keyed_backend if node.id in self.contexts else None
        key_groups = backend.key_group_range if backend is not None else range(0)
        for service in operator._timer_services:
            service.restore(restored["timers"], key_groups, node.max_parallelism)

    # --------------------------------------------------------------- snapshot
    def snapshot(self, checkpoint_id: int) -> dict:
        """Every operator's state now (the caller is the task thread, between batches)."""
        chain = self.task.chain
        result: dict[str, dict] = {}
        for node, operator in chain.in_order():  # type: ignore[union-attr]
            context = self.contexts[node.id]
            result[operator_key(node)] = {
                "keyed": context.keyed_backend.snapshot() if context.keyed_backend is not None else None,
                "timers": [service.snapshot() for service in operator._timer_services],
                "operator": context.operator_state.snapshot(),
                "raw": operator.snapshot_state(checkpoint_id),
            }
        return result

    def perform(self, barrier: CheckpointBarrier) -> None:
        """Snapshot, store, forward the barrier, acknowledge (or decline on failure)."""
        task = self.task
        responder = task.services.checkpoint_responder
        try:
            snapshot = self.snapshot(barrier.checkpoint_id)
            handle = self._store(barrier, snapshot)
        except Exception as exc:  # noqa: BLE001 - a failed snapshot declines, it does not kill the job
            _log.warning("%s: checkpoint %d failed: %s", task.tdd.name_with_subtask, barrier.checkpoint_id, exc)
            for writer in task.writers:
                writer.broadcast_event(barrier)
            if responder is not None:
                responder.decline(task.tdd.attempt_id, barrier.checkpoint_id, f"{type(exc).__name__}: {exc}")
            return
        for writer in task.writers:
            writer.broadcast_event(barrier)
        if responder is not None:
            responder.acknowledge(task.tdd.attempt_id, barrier.checkpoint_id, handle)

    def _store(self, barrier: CheckpointBarrier, snapshot: dict) -> Any:
        """Write the snapshot to checkpoint storage when the job has one; else hand it over as is."""
        storage = self.task.services.checkpoint_storage
        if storage is None:
            return snapshot
        tdd = self.task.tdd
        return storage(tdd.job_id, tdd.configuration).write_task_state(
            barrier.checkpoint_id, tdd.job_vertex.id, tdd.subtask_index, snapshot)

    def notify_complete(self, checkpoint_id: int) -> None:
        """The checkpoint completed everywhere: let operators commit (two-phase-commit sinks)."""
        for _, operator in self.task.chain.in_order():  # type: ignore[union-attr]
            operator.notify_checkpoint_complete(checkpoint_id)
