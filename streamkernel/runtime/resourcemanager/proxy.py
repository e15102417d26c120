"""The cluster's ResourceManager seen from a TaskManager process: the ResourceManagerGateway over RPC."""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.runtime.rpc.proxies import RemoteProxy
from streamkernel.runtime.rpc.serialization import portable_exception
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot, SlotReport, TaskExecutorRegistration

__all__ = ["ResourceManagerProxy"]


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

    def taskmanager_snapshots(self) -> tuple:
        """Every registered TaskManager as the ResourceManager last saw it."""
        return self._call("taskmanager_snapshots")
