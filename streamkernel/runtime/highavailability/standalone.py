"""The NONE services: everything in this process's memory (Flink's ``EmbeddedHaServices`` and
``Standalone*`` stores). The process is always the leader; nothing survives it."""

from __future__ import annotations

import threading
import uuid
from typing import Any, Optional

from streamkernel.runtime.highavailability.job_result_store import EmbeddedJobResultStore
from streamkernel.runtime.highavailability.leader import (
    DefaultLeaderElectionService,
    LeaderInformation,
    LeaderRetrievalListener,
)
from streamkernel.runtime.highavailability.services import HighAvailabilityServices
from streamkernel.runtime.highavailability.stores import (
    GLOBALLY_TERMINAL,
    INITIAL_CHECKPOINT_ID,
    CheckpointIDCounter,
    CheckpointRecoveryFactory,
    CompletedCheckpointPointer,
    CompletedCheckpointStore,
    ExecutionPlanStore,
    JobResultStore,
)

__all__ = ["EmbeddedHaServices", "EmbeddedLeaderElectionDriver", "EmbeddedLeaderRetrievalService",
           "StandaloneExecutionPlanStore", "StandaloneCheckpointIDCounter", "StandaloneCompletedCheckpointStore",
           "StandaloneCheckpointRecoveryFactory"]


class _Published:
    """Leader information of this process's components, and who listens to it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.info: dict[str, LeaderInformation] = {}
        self.listeners: dict[str, list[LeaderRetrievalListener]] = {}

    def set(self, component: str, info: Optional[LeaderInformation]) -> None:
        with self.lock:
            if info is None:
                self.info.pop(component, None)
            else:
                self.info[component] = info
            listeners = list(self.listeners.get(component, ()))
        for listener in listeners:
            listener.notify_leader_address(info.address if info else None, info.session_id if info else None)


class EmbeddedLeaderElectionDriver:
    """The election of a single process: it leads from the start until closed."""

    def __init__(self, service: DefaultLeaderElectionService, published: _Published) -> None:
        self._published = published
        self._leading = True
        service.on_grant_leadership()

    def has_leadership(self) -> bool:
        return self._leading

    def publish_leader_information(self, component: str, info: LeaderInformation) -> None:
        self._published.set(component, info)

    def delete_leader_information(self, component: str) -> None:
        self._published.set(component, None)

    def close(self) -> None:
        self._leading = False
        for component in list(self._published.info):
            self._published.set(component, None)


class EmbeddedLeaderRetrievalService:
    """Retrieval of a component's leader within this process."""

    def __init__(self, published: _Published, component: str) -> None:
        self._published = published
        self._component = component
        self._listener: Optional[LeaderRetrievalListener] = None

    def start(self, listener: LeaderRetrievalListener) -> None:
        with self._published.lock:
            self._published.listeners.setdefault(self._component, []).append(listener)
            info = self._published.info.get(self._component)
        self._listener = listener
        listener.notify_leader_address(info.address if info else None, info.session_id if info else None)

    def stop(self) -> None:
        with self._published.lock:
            listeners = self._published.listeners.get(self._component, [])
            if self._listener in listeners:
                listeners.remove(self._listener)


class StandaloneExecutionPlanStore(ExecutionPlanStore):
    """Job graphs in memory: recoverable by another leader of this process only."""

    def __init__(self) -> None:
        self._plans: dict[str, Any] = {}

    def put_execution_plan(self, job_id: str, plan: Any) -> None:
        self._plans[job_id] = plan

    def recover_execution_plan(self, job_id: str) -> Optional[Any]:
        return self._plans.get(job_id)

    def get_job_ids(self) -> list[str]:
        return sorted(self._plans)

    def global_cleanup(self, job_id: str) -> None:
        self._plans.pop(job_id, None)


class StandaloneCheckpointIDCounter(CheckpointIDCounter):
    """A checkpoint id counter in memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = INITIAL_CHECKPOINT_ID

    def get_and_increment(self) -> int:
        with self._lock:
            value, self._next = self._next, self._next + 1
            return value

    def get(self) -> int:
        return self._next

    def set_count(self, count: int) -> None:
        with self._lock:
            self._next = count

    def shutdown(self, job_status: str) -> None:
        pass


class StandaloneCompletedCheckpointStore(CompletedCheckpointStore):
    """The latest ``max_retained`` completed checkpoints in memory."""

    def __init__(self, max_retained: int) -> None:
        super().__init__(max_retained)
        self._checkpoints: list[CompletedCheckpointPointer] = []

    def add_checkpoint_and_subsume_oldest_one(self, checkpoint: Any) -> list[CompletedCheckpointPointer]:
        self._checkpoints.append(self._pointer(checkpoint))
        self._checkpoints.sort(key=lambda p: p.checkpoint_id)
        dropped = self._checkpoints[:-self.max_retained]
        del self._checkpoints[:-self.max_retained]
        return dropped

    def get_all_checkpoints(self) -> list[CompletedCheckpointPointer]:
        return list(self._checkpoints)

    def shutdown(self, job_status: str) -> None:
        if job_status in GLOBALLY_TERMINAL:
            self._checkpoints.clear()


class StandaloneCheckpointRecoveryFactory(CheckpointRecoveryFactory):
    """Counters and stores in memory, kept per job for the life of the services."""

    def __init__(self) -> None:
        self._counters: dict[str, StandaloneCheckpointIDCounter] = {}
        self._stores: dict[str, StandaloneCompletedCheckpointStore] = {}

    def create_checkpoint_id_counter(self, job_id: str) -> CheckpointIDCounter:
        return self._counters.setdefault(job_id, StandaloneCheckpointIDCounter())

    def create_completed_checkpoint_store(self, job_id: str, max_retained: int) -> CompletedCheckpointStore:
        store = self._stores.get(job_id)
        if store is None or store.max_retained != max_retained:
            store = StandaloneCompletedCheckpointStore(max_retained)
            for pointer in (self._stores[job_id].get_all_checkpoints() if job_id in self._stores else []):
                store.add_checkpoint_and_subsume_oldest_one(pointer)
            self._stores[job_id] = store
        return store


class EmbeddedHaServices(HighAvailabilityServices):
    """``high-availability.type: NONE``: one process, always its own leader, stores in memory."""

    def __init__(self) -> None:
        super().__init__()
        self._published = _Published()
        self._plans = StandaloneExecutionPlanStore()
        self._results = EmbeddedJobResultStore()
        self._recovery = StandaloneCheckpointRecoveryFactory()
        self.cluster_id = str(uuid.uuid4())

    def _create_leader_election_driver(self, service: DefaultLeaderElectionService) -> EmbeddedLeaderElectionDriver:
        return EmbeddedLeaderElectionDriver(service, self._published)

    def leader_retriever(self, component: str) -> EmbeddedLeaderRetrievalService:
        return EmbeddedLeaderRetrievalService(self._published, component)

    def execution_plan_store(self) -> ExecutionPlanStore:
        return self._plans

    def job_result_store(self) -> JobResultStore:
        return self._results

    def checkpoint_recovery_factory(self) -> CheckpointRecoveryFactory:
        return self._recovery

    def _cleanup_all_data(self) -> None:
        self._plans = StandaloneExecutionPlanStore()
        self._results = EmbeddedJobResultStore()
        self._recovery = StandaloneCheckpointRecoveryFactory()
