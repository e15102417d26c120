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

Unaligned checkpoints (``execution.checkpointing.unaligned.enabled``, EXACTLY_ONCE, not for
savepoints): barriers go out ahead of queued output (``broadcast_unaligned_barrier``); a task
with inputs snapshots on the first barrier (:meth:`TaskCheckpointer.start_unaligned`, the
snapshot is frozen at once) and stores it when every input barrier was seen, with the
in-flight records as the head operator's ``"channel_state"``
(:mod:`streamkernel.runtime.checkpoint.channel_state`), fed back first on restore.
"""

from __future__ import annotations

import logging
import pickle
import time
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.common.options import CheckpointingOptions
from streamkernel.graph.stream_graph import StreamNode
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.checkpoint.channel_state import has_channel_state, make_channel_state
from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics
from streamkernel.runtime.checkpoint.metadata import operator_key
from streamkernel.runtime.core.records import CheckpointBarrier, DataBuffer

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
        config = task.tdd.configuration
        #: barriers of checkpoints (not savepoints) overtake queued output; inputs need not align
        self.unaligned = (CheckpointingOptions.ENABLE_UNALIGNED.get(config)
                          and CheckpointingOptions.CHECKPOINTING_MODE.get(config) == "EXACTLY_ONCE")
        # the unaligned checkpoint in progress: (checkpoint id, pickled snapshot or the error)
        self._frozen: Optional[tuple[int, Any]] = None
        self._frozen_sync_ns = 0  # how long taking that snapshot took (its sync part)

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
        if has_channel_state(restored) and node is not self.task.tdd.nodes[0]:
            raise InvalidProgramError(
                f"operator {node.name!r} holds in-flight records of an unaligned checkpoint but is no longer the "
                "first operator of its task (its chaining changed); restore with the chaining it had, or from a "
                "savepoint or an aligned checkpoint")
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
        """Snapshot, store, forward the barrier, acknowledge (or decline on failure). A
        synchronous barrier (stop-with-savepoint) then stops the task: it waits for the
        savepoint's outcome; with ``drain`` its operators end their input before the snapshot."""
        task = self.task
        responder = task.services.checkpoint_responder
        task.metrics.checkpoint_started(barrier.checkpoint_id, barrier.timestamp)
        if barrier.synchronous and barrier.drain:
            task.drain_for_savepoint()
        try:
            started = time.perf_counter_ns()
            snapshot = self.snapshot(barrier.checkpoint_id)
            taken = time.perf_counter_ns()
            handle = self._store(barrier, snapshot)
            measured = self._measured(taken - started, time.perf_counter_ns() - taken)
        except Exception as exc:  # noqa: BLE001 - a failed snapshot declines, it does not kill the job
            _log.warning("%s: checkpoint %d failed: %s", task.tdd.name_with_subtask, barrier.checkpoint_id, exc)
            for writer in task.writers:
                writer.broadcast_event(barrier)
            self._forward(barrier)
            if responder is not None:
                responder.decline(task.tdd.attempt_id, barrier.checkpoint_id, f"{type(exc).__name__}: {exc}")
            if barrier.synchronous and barrier.drain:
                task.stop_at(barrier)  # drained: only the savepoint's end (its abort) lets it go on
            return
        self._forward(barrier)
        if responder is not None:
            responder.acknowledge(task.tdd.attempt_id, barrier.checkpoint_id, handle, measured)
        if barrier.synchronous:
            task.stop_at(barrier)

    def _measured(self, sync_ns: int, async_ns: int) -> CheckpointMetrics:
        """What the task measured of its part in the checkpoint it just took (Flink's CheckpointMetrics)."""
        metrics = self.task.metrics
        return CheckpointMetrics(sync_ms=sync_ns // 1_000_000, async_ms=async_ns // 1_000_000,
                                 alignment_ms=metrics.checkpoint_alignment_ns // 1_000_000,
                                 start_delay_ms=metrics.checkpoint_start_delay_ns // 1_000_000)

    def _forward(self, barrier: CheckpointBarrier) -> None:
        """The barrier to every output channel: ahead of queued output when unaligned."""
        unaligned = self.unaligned and not barrier.is_savepoint
        for writer in self.task.writers:
            if unaligned:
                writer.broadcast_unaligned_barrier(barrier)
            else:
                writer.broadcast_event(barrier)

    # --------------------------------------------------------------- unaligned
    def start_unaligned(self, barrier: CheckpointBarrier) -> None:
        """First barrier of an unaligned checkpoint: snapshot now (frozen), forward the barrier."""
        self.task.metrics.checkpoint_started(barrier.checkpoint_id, barrier.timestamp)
        started = time.perf_counter_ns()
        try:
            frozen: Any = pickle.dumps(self.snapshot(barrier.checkpoint_id), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - declined when the checkpoint finishes
            frozen = exc
        self._frozen = (barrier.checkpoint_id, frozen)
        self._frozen_sync_ns = time.perf_counter_ns() - started
        self._forward(barrier)

    def finish_unaligned(self, barrier: CheckpointBarrier, in_flight: list[tuple[int, DataBuffer]]) -> None:
        """Every input barrier of an unaligned checkpoint was seen: store the snapshot taken at
        its start with the in-flight records, then acknowledge (or decline)."""
        task = self.task
        responder = task.services.checkpoint_responder
        frozen = self._frozen[1] if self._frozen is not None and self._frozen[0] == barrier.checkpoint_id else None
        self._frozen = None
        try:
            if frozen is None:
                raise RuntimeError("its snapshot was not taken (the checkpoint started before a restart)")
            if isinstance(frozen, Exception):
                raise frozen
            stored = time.perf_counter_ns()
            snapshot = pickle.loads(frozen)
            head = operator_key(task.tdd.nodes[0])
            snapshot[head]["channel_state"] = make_channel_state(in_flight)
            handle = self._store(barrier, snapshot)
            measured = self._measured(self._frozen_sync_ns, time.perf_counter_ns() - stored)
        except Exception as exc:  # noqa: BLE001 - a failed snapshot declines, it does not kill the job
            _log.warning("%s: checkpoint %d failed: %s", task.tdd.name_with_subtask, barrier.checkpoint_id, exc)
            if responder is not None:
                responder.decline(task.tdd.attempt_id, barrier.checkpoint_id, f"{type(exc).__name__}: {exc}")
            return
        if responder is not None:
            responder.acknowledge(task.tdd.attempt_id, barrier.checkpoint_id, handle, measured)

    def abort_unaligned(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` was overtaken by a newer one: drop its frozen snapshot."""
        if self._frozen is not None and self._frozen[0] == checkpoint_id:
            self._frozen = None

    def restored_in_flight(self) -> list[tuple[int, DataBuffer]]:
        """The in-flight records of the checkpoint this task restores from (fed first)."""
        restored = self.restored_for(self.task.tdd.nodes[0])
        channel_state = restored.get("channel_state") if restored else None
        return [] if not channel_state else [(i, DataBuffer(v, t)) for i, v, t in channel_state["buffers"]]

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
