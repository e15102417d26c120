"""``high-availability.type: zookeeper``: Flink's ``ZooKeeperLeaderElectionHaServices``.

One kazoo client per services instance (per process). Nodes live under
``<path.root>/<cluster-id>/`` (:class:`~.zookeeper_utils.ZooKeeperPaths`), job graph files under
``<storageDir>/<cluster-id>/``, the job result store under ``<storageDir>/job-result-store/<cluster-id>/``.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Mapping
from typing import Any, Optional

from streamkernel.common.options.high_availability import HighAvailabilityOptions
from streamkernel.runtime.checkpoint import filesystem as fs
from streamkernel.runtime.highavailability.job_result_store import FileSystemJobResultStore
from streamkernel.runtime.highavailability.leader import DefaultLeaderElectionService, LeadershipLostError
from streamkernel.runtime.highavailability.services import HighAvailabilityServices
from streamkernel.runtime.highavailability.stores import CheckpointRecoveryFactory, ExecutionPlanStore, JobResultStore
from streamkernel.runtime.highavailability.zookeeper_leader import (
    ZooKeeperLeaderElectionDriver,
    ZooKeeperLeaderRetrievalService,
)
from streamkernel.runtime.highavailability.zookeeper_stores import (
    ZooKeeperCheckpointRecoveryFactory,
    ZooKeeperExecutionPlanStore,
)
from streamkernel.runtime.highavailability.zookeeper_utils import ZooKeeperPaths, start_zookeeper_client

__all__ = ["ZooKeeperHaServices"]


class ZooKeeperHaServices(HighAvailabilityServices):
    """The HA services on a ZooKeeper quorum and a shared storage directory.

    Connects at construction (:class:`~.zookeeper_utils.ZooKeeperConnectionError` naming the quorum
    if it cannot). Stores write only while this process leads: join the election first
    (:meth:`leader_election` and a contender), and write once granted.
    """

    def __init__(self, configuration: Mapping[str, Any]) -> None:
        super().__init__()
        options = HighAvailabilityOptions
        self.cluster_id = str(options.HA_CLUSTER_ID.get(configuration)).strip("/")
        self.paths = ZooKeeperPaths(str(options.HA_ZOOKEEPER_ROOT.get(configuration)), self.cluster_id)
        storage = fs.normalize(str(options.HA_STORAGE_PATH.get(configuration)))
        self.storage_dir = fs.join(storage, *self.cluster_id.split("/"))
        self.job_result_store_dir = fs.join(storage, "job-result-store", *self.cluster_id.split("/"))
        self.client = start_zookeeper_client(configuration)
        self._driver: Optional[ZooKeeperLeaderElectionDriver] = None
        self._plans = ZooKeeperExecutionPlanStore(self.client, self.paths, self.storage_dir, self._latch_node)
        self._recovery = ZooKeeperCheckpointRecoveryFactory(self.client, self.paths, self._latch_node)
        self._results: Optional[FileSystemJobResultStore] = None
        #: What this process tells others about itself in its latch node (kazoo's lock identifier, JSON with
        #: ``hostname``, ``pid``, ``id`` and these keys, e.g. ``rest_url``): set before joining the election.
        self.contender_info: dict[str, Any] = {}

    def _latch_node(self) -> str:
        driver = self._driver
        if driver is None:
            raise LeadershipLostError("This process has not joined the leader election (call leader_election() "
                                      "and wait for grant_leadership before writing to the HA stores)")
        return driver.latch_node()

    def _create_leader_election_driver(self, service: DefaultLeaderElectionService) -> ZooKeeperLeaderElectionDriver:
        identifier = json.dumps({"hostname": socket.gethostname(), "pid": os.getpid(), "id": uuid.uuid4().hex[:8],
                                 **self.contender_info})
        self._driver = ZooKeeperLeaderElectionDriver(self.client, self.paths, service, identifier)
        return self._driver

    def leader_retriever(self, component: str) -> ZooKeeperLeaderRetrievalService:
        return ZooKeeperLeaderRetrievalService(self.client, self.paths, component)

    def execution_plan_store(self) -> ExecutionPlanStore:
        return self._plans

    def job_result_store(self) -> JobResultStore:
        if self._results is None:
            self._results = FileSystemJobResultStore(self.job_result_store_dir)
        return self._results

    def checkpoint_recovery_factory(self) -> CheckpointRecoveryFactory:
        return self._recovery

    @property
    def connection_state(self) -> str:
        """kazoo's view of the ZooKeeper session: CONNECTED, SUSPENDED or LOST."""
        return str(self.client.state)

    def close(self) -> None:
        """Leave the election and close the ZooKeeper session (its ephemeral nodes go with it)."""
        super().close()
        self._plans.stop()
        self._driver = None
        try:
            self.client.stop()
        finally:
            self.client.close()

    def _cleanup_all_data(self) -> None:
        """Delete the cluster's ZooKeeper nodes, its job graph files and its job result store."""
        from kazoo.exceptions import NoNodeError

        try:
            self.client.delete(self.paths.base, recursive=True)
        except NoNodeError:
            pass
        fs.rmtree(self.storage_dir)
        fs.rmtree(self.job_result_store_dir)
