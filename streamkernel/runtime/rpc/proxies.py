"""Proxies: the gateways of a peer process, with exactly the methods of :mod:`..taskmanager.gateway`.

On the JobManager's side a TaskManager is a :class:`TaskExecutorProxy`; on a TaskManager's
side its ResourceManager is a :class:`ResourceManagerProxy` and each job's JobMaster a
:class:`JobMasterProxy`. Every method goes over the :class:`~.connection.RpcConnection` as
a *call* (waits for the answer, re-raises the remote error) or, where the protocol says the
caller must not block and nothing is answered, as a *tell* (ordered, one-way):

* tells: ``update_task_execution_state``, ``acknowledge_checkpoint``, ``decline_checkpoint``
  (task threads reporting) and ``trigger_checkpoint``, ``notify_checkpoint_complete``
  (the JobMaster's checkpoint messages, which "return at once");
* calls: everything else.

A gateway passed as an argument becomes a :class:`~.connection.GatewayRef` on the wire
(:func:`export_reference`) and a proxy on the other side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from streamkernel.runtime.rpc.connection import GatewayRef, RpcConnection, RpcConnectionLostError
from streamkernel.runtime.rpc.serialization import portable_exception
from streamkernel.runtime.taskmanager.gateway import (
    AllocatedSlot,
    SlotReport,
    TaskExecutionState,
    TaskExecutorHeartbeat,
    TaskExecutorRegistration,
    TaskExecutorStoppedError,
)

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.deployment import ExecutionAttemptId, TaskDeploymentDescriptor
    from streamkernel.runtime.jobmanager.job_status import JobDetails

__all__ = ["RemoteProxy", "TaskExecutorProxy", "JobMasterProxy", "ResourceManagerProxy", "TaskManagerConnectionLostError",
           "export_reference", "gateway_kind", "proxy_for"]

# The methods that tell a gateway kind apart (checked once per type).
_KIND_MARKERS = (
    ("TaskExecutorGateway", ("submit_task", "heartbeat", "cancel_task", "release_job")),
    ("JobMasterGateway", ("update_task_execution_state", "acknowledge_checkpoint", "disconnect_taskmanager")),
    ("ResourceManagerGateway", ("register_task_executor", "request_slots", "release_slots")),
)
_kinds: dict[type, Optional[str]] = {}


class TaskManagerConnectionLostError(TaskExecutorStoppedError):
    """The connection to a TaskManager process is gone: the process died or stopped, for good."""


def gateway_kind(value: Any) -> Optional[str]:
    """The gateway protocol ``value`` implements ("TaskExecutorGateway", ...) or None for plain data."""
    cls = type(value)
    kind = _kinds.get(cls, "?")
    if kind == "?":
        kind = next((name for name, methods in _KIND_MARKERS
                     if all(callable(getattr(cls, m, None)) for m in methods)), None)
        _kinds[cls] = kind
    return kind


def _data_address(task_executor: Any) -> Optional[tuple[str, int]]:
    address = getattr(task_executor, "data_address", None)
    if address is None:
        address = getattr(getattr(getattr(task_executor, "services", None), "shuffle", None), "data_address", None)
    return tuple(address) if address is not None else None


def export_reference(rpc: RpcConnection, value: Any) -> Optional[GatewayRef]:
    """If ``value`` is a gateway, export it on ``rpc`` and return its reference; else None."""
    kind = gateway_kind(value)
    if kind is None:
        return None
    if kind == "TaskExecutorGateway":
        attributes = {"taskmanager_id": value.taskmanager_id, "data_address": _data_address(value)}
    elif kind == "JobMasterGateway":
        attributes = {"job_id": value.job_id}
    else:
        attributes = {}
    return rpc.export(value, kind, attributes)


def proxy_for(rpc: RpcConnection, ref: GatewayRef) -> "RemoteProxy":
    """The proxy class for ``ref.kind`` bound to ``rpc``."""
    cls = {"TaskExecutorGateway": TaskExecutorProxy, "JobMasterGateway": JobMasterProxy,
           "ResourceManagerGateway": ResourceManagerProxy}.get(ref.kind, RemoteProxy)
    return cls(rpc, ref)


class RemoteProxy:
    """An object of the peer process, reached by reference over one RPC connection."""

    def __init__(self, rpc: RpcConnection, ref: GatewayRef) -> None:
        self._rpc = rpc
        self._ref = ref
        self._attributes = dict(ref.attributes)

    @property
    def rpc(self) -> RpcConnection:
        """The connection this proxy calls over."""
        return self._rpc

    def _call(self, method: str, *args: Any, timeout: Optional[float] = -1.0, **kwargs: Any) -> Any:
        return self._rpc.call(self._ref.ref_id, method, args, kwargs, timeout=timeout)

    def _tell(self, method: str, *args: Any, **kwargs: Any) -> None:
        self._rpc.tell(self._ref.ref_id, method, args, kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._ref.ref_id} over {self._rpc.name})"


class TaskExecutorProxy(RemoteProxy):
    """A TaskManager in another process (a TaskExecutorGateway), seen from the JobManager.

    ``heartbeat_timeout`` (s) bounds a heartbeat call: a TaskManager that does not answer
    in time counts as silent for this round. A lost connection raises
    :class:`TaskManagerConnectionLostError` (a TaskExecutorStoppedError): the
    ResourceManager then unregisters it at once instead of waiting for ``heartbeat.timeout``.
    """

    heartbeat_timeout: float = 1.0

    @property
    def taskmanager_id(self) -> str:
        """The TaskManager's id."""
        return self._attributes["taskmanager_id"]

    @property
    def data_address(self) -> Optional[tuple[str, int]]:
        """The (host, port) of the TaskManager's data listener (its network shuffle), or None."""
        return self._attributes.get("data_address")

    def _lost(self, error: RpcConnectionLostError) -> TaskManagerConnectionLostError:
        return TaskManagerConnectionLostError(f"TaskManager {self.taskmanager_id!r} is unreachable: {error}")

    def submit_task(self, tdd: "TaskDeploymentDescriptor", slot: AllocatedSlot, job_master: Any) -> None:
        """Deploy a subtask (a call: deployment errors are raised here)."""
        self._call("submit_task", tdd, slot, job_master)

    def cancel_task(self, attempt_id: "ExecutionAttemptId") -> None:
        """Cancel a subtask."""
        self._call("cancel_task", attempt_id)

    def release_job(self, job_id: str) -> None:
        """Free the job's channels and forget its tasks."""
        self._call("release_job", job_id)

    def trigger_checkpoint(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int, timestamp: int,
                           is_savepoint: bool = False) -> None:
        """Trigger a checkpoint at a source subtask (a tell)."""
        self._tell("trigger_checkpoint", attempt_id, checkpoint_id, timestamp, is_savepoint)

    def notify_checkpoint_complete(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int) -> None:
        """Confirm a completed checkpoint to a subtask (a tell)."""
        self._tell("notify_checkpoint_complete", attempt_id, checkpoint_id)

    def heartbeat(self) -> TaskExecutorHeartbeat:
        """The TaskManager's slot report and live task metrics (waits ``heartbeat_timeout`` s at most)."""
        try:
            return self._call("heartbeat", timeout=self.heartbeat_timeout)
        except RpcConnectionLostError as error:
            raise self._lost(error) from error

    def inject_failure(self, attempt_id: "ExecutionAttemptId", error: BaseException) -> bool:
        """Make a running subtask fail with ``error`` (failure injection)."""
        return self._call("inject_failure", attempt_id, portable_exception(error))

    def peek(self, attempt_id: "ExecutionAttemptId", node_id: int, limit: int, seconds: float) -> list:
        """The last records an operator of a running subtask emits (``%flink peek``)."""
        return self._call("peek", attempt_id, node_id, limit, seconds, timeout=seconds + 30)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel every task and stop (the TaskManager's process then exits)."""
        self._call("shutdown", timeout, timeout=timeout + self._rpc.default_timeout)


class JobMasterProxy(RemoteProxy):
    """A job's JobMaster (a JobMasterGateway), seen from a TaskManager process."""

    @property
    def job_id(self) -> str:
        """The job's id."""
        return self._attributes["job_id"]

    def update_task_execution_state(self, update: TaskExecutionState) -> None:
        """Report a subtask's state change (a tell: order kept, never blocks on the JobMaster)."""
        error = portable_exception(update.error)
        if error is not update.error:
            update = TaskExecutionState(update.attempt_id, update.state, error, update.metrics)
        self._tell("update_task_execution_state", update)

    def acknowledge_checkpoint(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int, state_handle: Any) -> None:
        """A subtask stored its state for ``checkpoint_id`` (a tell)."""
        self._tell("acknowledge_checkpoint", attempt_id, checkpoint_id, state_handle)

    def decline_checkpoint(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int, reason: str) -> None:
        """A subtask could not take ``checkpoint_id`` (a tell)."""
        self._tell("decline_checkpoint", attempt_id, checkpoint_id, reason)

    def disconnect_taskmanager(self, taskmanager_id: str, cause: BaseException) -> None:
        """A TaskManager is gone."""
        self._call("disconnect_taskmanager", taskmanager_id, portable_exception(cause))

    def cancel(self) -> None:
        """Cancel the job."""
        self._call("cancel")

    def request_job_details(self) -> "JobDetails":
        """The job's latest status snapshot."""
        return self._call("request_job_details")


class ResourceManagerProxy(RemoteProxy):
    """The cluster's ResourceManager (a ResourceManagerGateway), seen from a TaskManager process."""

    def register_task_executor(self, gateway: Any, slot_report: SlotReport) -> TaskExecutorRegistration:
        """Join the cluster with ``gateway`` (sent by reference) and its slots."""
        return self._call("register_task_executor", gateway, slot_report)

    def unregister_task_executor(self, taskmanager_id: str, cause: Optional[BaseException] = None) -> None:
        """Leave the cluster."""
        self._call("unregister_task_executor", taskmanager_id, portable_exception(cause))

    def request_slots(self, job_id: str, count: int, timeout_ms: int, *, job_name: str = "",
                      job_master: Any = None) -> tuple[AllocatedSlot, ...]:
        """Allocate slots (waits up to ``timeout_ms`` at the ResourceManager, plus the call's own timeout)."""
        return self._call("request_slots", job_id, count, timeout_ms, job_name=job_name, job_master=job_master,
                          timeout=timeout_ms / 1000 + self._rpc.default_timeout)

    def cancel_slot_request(self, job_id: str) -> None:
        """Abort the job's pending slot request."""
        self._call("cancel_slot_request", job_id)

    def release_slots(self, job_id: str) -> None:
        """Return the job's slots."""
        self._call("release_slots", job_id)

    def task_executor_gateway(self, taskmanager_id: str) -> Any:
        """The gateway of a registered TaskManager (a proxy, or this process's own TaskExecutor)."""
        return self._call("task_executor_gateway", taskmanager_id)
