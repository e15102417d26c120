"""High availability (Flink's ``org.apache.flink.runtime.highavailability``): leader election among
JobManager processes, leader retrieval for whoever needs the leader, and the stores a new leader
recovers jobs from (job graphs, checkpoint ids, completed checkpoints, job results).

:func:`create_ha_services` picks the services from ``high-availability.type``: NONE (this
process only, in memory: :mod:`.standalone`) or ZooKeeper (:mod:`.zookeeper_services`, on
kazoo, imported only then). ``docs/high-availability.md`` describes the design and what is
guaranteed. The package sits above ``checkpoint`` and below ``jobmaster`` and ``dispatcher``.
"""

from __future__ import annotations

from streamkernel.runtime.highavailability.leader import (
    COMPONENTS,
    DISPATCHER,
    RESOURCE_MANAGER,
    REST_SERVER,
    DefaultLeaderElectionService,
    LeaderContender,
    LeaderElection,
    LeaderInformation,
    LeaderRetrievalListener,
    LeaderRetrievalService,
    LeadershipLostError,
)
from streamkernel.runtime.highavailability.services import HighAvailabilityServices, create_ha_services
from streamkernel.runtime.highavailability.stores import (
    CheckpointIDCounter,
    CheckpointRecoveryFactory,
    CompletedCheckpointPointer,
    CompletedCheckpointStore,
    ExecutionPlanRecoveryError,
    ExecutionPlanStore,
    JobResult,
    JobResultEntry,
    JobResultStore,
)

__all__ = [
    "COMPONENTS", "DISPATCHER", "RESOURCE_MANAGER", "REST_SERVER", "DefaultLeaderElectionService", "LeaderContender",
    "LeaderElection", "LeaderInformation", "LeaderRetrievalListener", "LeaderRetrievalService", "LeadershipLostError",
    "HighAvailabilityServices", "create_ha_services", "CheckpointIDCounter", "CheckpointRecoveryFactory",
    "CompletedCheckpointPointer", "CompletedCheckpointStore", "ExecutionPlanRecoveryError", "ExecutionPlanStore",
    "JobResult", "JobResultEntry", "JobResultStore",
]
