"""The high-availability services of a cluster process (Flink's ``HighAvailabilityServices``) and
:func:`create_ha_services`, which picks them from the configuration (Flink's
``HighAvailabilityServicesUtils``)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Optional

from streamkernel.runtime.highavailability.leader import (
    DISPATCHER,
    RESOURCE_MANAGER,
    REST_SERVER,
    DefaultLeaderElectionService,
    LeaderElection,
    LeaderRetrievalService,
)
from streamkernel.runtime.highavailability.stores import CheckpointRecoveryFactory, ExecutionPlanStore, JobResultStore

__all__ = ["HighAvailabilityServices", "create_ha_services"]


class HighAvailabilityServices(ABC):
    """Everything a JobManager (and the TaskManagers and clients finding it) needs for high availability.

    A JobManager process runs ONE election (:meth:`leader_election_service`) whose leadership its
    ``dispatcher``, ``resource_manager`` and ``rest_server`` share (:meth:`leader_election`);
    anyone finds a component's leader through :meth:`leader_retriever`. The stores keep what a
    new leader recovers.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._election_service: Optional[DefaultLeaderElectionService] = None
        self._elections: dict[str, LeaderElection] = {}

    # leader election ---------------------------------------------------------------------------
    def leader_election_service(self) -> DefaultLeaderElectionService:
        """The process's one election (started on first use)."""
        with self._lock:
            if self._election_service is None:
                service = DefaultLeaderElectionService()
                service.start(self._create_leader_election_driver(service))
                self._election_service = service
            return self._election_service

    def leader_election(self, component: str) -> LeaderElection:
        """``component``'s part of the process's election (one per component)."""
        service = self.leader_election_service()
        with self._lock:
            if component not in self._elections:
                self._elections[component] = service.create_leader_election(component)
            return self._elections[component]

    def get_dispatcher_leader_election(self) -> LeaderElection:
        """The dispatcher's :class:`LeaderElection`."""
        return self.leader_election(DISPATCHER)

    def get_resource_manager_leader_election(self) -> LeaderElection:
        """The resource manager's :class:`LeaderElection`."""
        return self.leader_election(RESOURCE_MANAGER)

    def get_cluster_rest_endpoint_leader_election(self) -> LeaderElection:
        """The REST endpoint's :class:`LeaderElection`."""
        return self.leader_election(REST_SERVER)

    @abstractmethod
    def _create_leader_election_driver(self, service: DefaultLeaderElectionService) -> Any:
        """The driver that runs this process's election and calls ``service`` back."""

    # leader retrieval --------------------------------------------------------------------------
    @abstractmethod
    def leader_retriever(self, component: str) -> LeaderRetrievalService:
        """A (not yet started) retrieval service for ``component``'s leader."""

    def get_dispatcher_leader_retriever(self) -> LeaderRetrievalService:
        """Retrieval of the dispatcher's leader."""
        return self.leader_retriever(DISPATCHER)

    def get_resource_manager_leader_retriever(self) -> LeaderRetrievalService:
        """Retrieval of the resource manager's leader (what TaskManagers follow)."""
        return self.leader_retriever(RESOURCE_MANAGER)

    def get_cluster_rest_endpoint_leader_retriever(self) -> LeaderRetrievalService:
        """Retrieval of the REST endpoint's leader (what clients follow)."""
        return self.leader_retriever(REST_SERVER)

    # stores ------------------------------------------------------------------------------------
    @abstractmethod
    def execution_plan_store(self) -> ExecutionPlanStore:
        """The job graphs a new leader recovers."""

    @abstractmethod
    def job_result_store(self) -> JobResultStore:
        """The jobs that terminated (never recovered again)."""

    @abstractmethod
    def checkpoint_recovery_factory(self) -> CheckpointRecoveryFactory:
        """Makes each job's checkpoint id counter and completed checkpoint store."""

    # lifecycle ---------------------------------------------------------------------------------
    def _close_election(self) -> None:
        with self._lock:
            service, self._election_service = self._election_service, None
            self._elections.clear()
        if service is not None:
            service.close()

    def close(self) -> None:
        """Leave the election (revoking this process's contenders) and release the services;
        the persisted data stays for the next leader."""
        self._close_election()

    def cleanup_all_data(self) -> None:
        """Delete everything the cluster persisted (its ZooKeeper nodes and storage files): the
        cluster is shut down for good. Leaves the election first (as Flink's
        ``closeWithOptionalClean(true)`` does); call :meth:`close` afterwards."""
        self._close_election()
        self._cleanup_all_data()

    @abstractmethod
    def _cleanup_all_data(self) -> None:
        """Delete the persisted data (the election is closed)."""

    def __enter__(self) -> "HighAvailabilityServices":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def create_ha_services(configuration: Mapping[str, Any]) -> HighAvailabilityServices:
    """The services ``high-availability.type`` selects: NONE (in this process's memory) or
    ZooKeeper (connects to the quorum now: one clear error naming the quorum if it cannot).
    Bad configuration fails first, naming the key (:func:`check_high_availability_options`)."""
    from streamkernel.common.options.high_availability import check_high_availability_options, is_zookeeper

    check_high_availability_options(configuration)
    if is_zookeeper(configuration):
        from streamkernel.runtime.highavailability.zookeeper_services import ZooKeeperHaServices

        return ZooKeeperHaServices(configuration)
    from streamkernel.runtime.highavailability.standalone import EmbeddedHaServices

    return EmbeddedHaServices()
