"""Each component implements its gateway with the protocol's exact signatures, and so does its RPC proxy.

``isinstance`` against a runtime-checkable Protocol only checks that the methods exist; a
renamed or reordered parameter would still break a caller that goes through the gateway
(keyword arguments over RPC, the coming REST handlers). This compares the signatures.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from streamkernel.runtime.dispatcher.dispatcher import Dispatcher
from streamkernel.runtime.dispatcher.gateway import DispatcherGateway
from streamkernel.runtime.jobmaster.gateway import JobMasterGateway
from streamkernel.runtime.jobmaster.jobmaster import JobMaster
from streamkernel.runtime.jobmaster.proxy import JobMasterProxy
from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway
from streamkernel.runtime.resourcemanager.proxy import ResourceManagerProxy
from streamkernel.runtime.resourcemanager.resource_manager import ResourceManager
from streamkernel.runtime.taskmanager.gateway import TaskExecutorGateway
from streamkernel.runtime.taskmanager.proxy import TaskExecutorProxy
from streamkernel.runtime.taskmanager.task_executor import TaskExecutor

IMPLEMENTATIONS = [
    (DispatcherGateway, Dispatcher),
    (JobMasterGateway, JobMaster),
    (JobMasterGateway, JobMasterProxy),
    (ResourceManagerGateway, ResourceManager),
    (ResourceManagerGateway, ResourceManagerProxy),
    (TaskExecutorGateway, TaskExecutor),
    (TaskExecutorGateway, TaskExecutorProxy),
]


def _protocol_methods(protocol: type) -> dict[str, Any]:
    return {name: member for name, member in vars(protocol).items()
            if not name.startswith("_") and (callable(member) or isinstance(member, property))}


def _parameters(function: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values() if p.name != "self"]


def _mismatches(protocol: type, implementation: type) -> list[str]:
    found = []
    for name, member in _protocol_methods(protocol).items():
        implemented = inspect.getattr_static(implementation, name, None)
        if implemented is None:
            found.append(f"{implementation.__name__} lacks {name}")
        elif isinstance(member, property):
            if not isinstance(implemented, property):
                found.append(f"{implementation.__name__}.{name} is not a property")
        elif _parameters(member) != _parameters(implemented)[:len(_parameters(member))]:
            found.append(f"{implementation.__name__}.{name}{inspect.signature(implemented)} "
                         f"!= {protocol.__name__}.{name}{inspect.signature(member)}")
    return found


@pytest.mark.parametrize("protocol, implementation", IMPLEMENTATIONS,
                         ids=[f"{i.__name__}" for _, i in IMPLEMENTATIONS])
def test_the_implementation_has_the_gateways_signatures(protocol: type, implementation: type) -> None:
    assert _mismatches(protocol, implementation) == []


def test_the_check_sees_a_renamed_parameter() -> None:
    class Renamed:
        def cancel_job(self, job: str) -> None:
            """Wrong parameter name."""

    assert any("cancel_job" in m for m in _mismatches(DispatcherGateway, Renamed))
