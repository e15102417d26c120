"""Proxies: the gateways of a peer process, with exactly the methods of the component's gateway.

On the JobManager's side a TaskManager is a ``TaskExecutorProxy``
(:mod:`streamkernel.runtime.taskmanager.proxy`); on a TaskManager's side its ResourceManager
is a ``ResourceManagerProxy`` (:mod:`streamkernel.runtime.resourcemanager.proxy`) and each
job's JobMaster a ``JobMasterProxy`` (:mod:`streamkernel.runtime.jobmaster.proxy`). This
module holds what they share: :class:`RemoteProxy` and the references on the wire. Every
method goes over the :class:`~.connection.RpcConnection` as a *call* (waits for the answer,
re-raises the remote error) or, where the protocol says the caller must not block and
nothing is answered, as a *tell* (ordered, one-way):

* tells: ``update_task_execution_state``, ``acknowledge_checkpoint``, ``decline_checkpoint``
  (task threads reporting) and ``trigger_checkpoint``, ``notify_checkpoint_complete``
  (the JobMaster's checkpoint messages, which "return at once");
* calls: everything else.

A gateway passed as an argument becomes a :class:`~.connection.GatewayRef` on the wire
(:func:`export_reference`) and a proxy on the other side.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

from streamkernel.runtime.rpc.connection import GatewayRef, RpcConnection

__all__ = ["RemoteProxy", "PROXY_CLASSES", "export_reference", "gateway_kind", "proxy_for"]

# The methods that tell a gateway kind apart (checked once per type).
_KIND_MARKERS = (
    ("TaskExecutorGateway", ("submit_task", "heartbeat", "cancel_task", "release_job")),
    ("JobMasterGateway", ("update_task_execution_state", "acknowledge_checkpoint", "disconnect_taskmanager")),
    ("ResourceManagerGateway", ("register_task_executor", "request_slots", "release_slots")),
)
_kinds: dict[type, Optional[str]] = {}


#: gateway kind -> "module:Class" of its proxy, beside the component's gateway (imported on first use, so
#: that the RPC layer sits below the components it connects).
PROXY_CLASSES = {
    "TaskExecutorGateway": "streamkernel.runtime.taskmanager.proxy:TaskExecutorProxy",
    "JobMasterGateway": "streamkernel.runtime.jobmaster.proxy:JobMasterProxy",
    "ResourceManagerGateway": "streamkernel.runtime.resourcemanager.proxy:ResourceManagerProxy",
}


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
        attributes = {"taskmanager_id": value.taskmanager_id, "data_address": _data_address(value),
                      "log_file": getattr(value, "log_file", None)}
    elif kind == "JobMasterGateway":
        attributes = {"job_id": value.job_id}
    else:
        attributes = {}
    return rpc.export(value, kind, attributes)


def proxy_for(rpc: RpcConnection, ref: GatewayRef) -> "RemoteProxy":
    """The proxy class for ``ref.kind`` bound to ``rpc``."""
    target = PROXY_CLASSES.get(ref.kind)
    if target is None:
        return RemoteProxy(rpc, ref)
    module_name, class_name = target.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
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
