"""What clients of a highly available cluster need of it (``%flink connect zookeeper://...``,
``streamkernel run -D high-availability...``); the REST client that follows the leader is
:class:`streamkernel.runtime.rest.leader_client.LeaderRestClient`.

* :class:`ZooKeeperClientServices`: a ZooKeeper session, the node layout and leader retrieval,
  without joining the election and without needing ``high-availability.storageDir`` (which only
  the job result store and the secret read).
* :func:`ha_secret_for_client`: the cluster's secret as a client of a HA cluster takes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from streamkernel.errors import IllegalConfigurationError

__all__ = ["ZooKeeperClientServices", "client_ha_services", "ha_secret_for_client", "leader_wait_seconds"]

_STORAGE = "high-availability.storageDir"


class ZooKeeperClientServices:
    """A read-only view of a ZooKeeper HA cluster for clients: ``client`` (kazoo), ``paths``,
    ``cluster_id``, ``quorum``, ``job_result_store_dir`` (None without a storage directory),
    :meth:`leader_retriever`, ``connection_state``, :meth:`close`."""

    def __init__(self, configuration: Mapping[str, Any]) -> None:
        from streamkernel.common.options.high_availability import HighAvailabilityOptions as options
        from streamkernel.runtime.checkpoint import filesystem as fs
        from streamkernel.runtime.highavailability.zookeeper_utils import ZooKeeperPaths, start_zookeeper_client

        self.cluster_id = str(options.HA_CLUSTER_ID.get(configuration)).strip("/")
        self.quorum = str(options.HA_ZOOKEEPER_QUORUM.get(configuration, "") or "")
        self.paths = ZooKeeperPaths(str(options.HA_ZOOKEEPER_ROOT.get(configuration)), self.cluster_id)
        storage = options.HA_STORAGE_PATH.get(configuration, None)
        self.job_result_store_dir: Optional[str] = (
            fs.join(fs.normalize(str(storage)), "job-result-store", *self.cluster_id.split("/")) if storage else None)
        self.client = start_zookeeper_client(configuration)

    def leader_retriever(self, component: str) -> Any:
        """A (not yet started) retrieval service for ``component``'s leader."""
        from streamkernel.runtime.highavailability.zookeeper_leader import ZooKeeperLeaderRetrievalService

        return ZooKeeperLeaderRetrievalService(self.client, self.paths, component)

    @property
    def connection_state(self) -> str:
        """kazoo's view of the ZooKeeper session: CONNECTED, SUSPENDED or LOST."""
        return str(self.client.state)

    def close(self) -> None:
        """Close the ZooKeeper session."""
        try:
            self.client.stop()
        finally:
            self.client.close()


def client_ha_services(configuration: Mapping[str, Any]) -> ZooKeeperClientServices:
    """Client services of the ZooKeeper HA cluster ``configuration`` describes. Checks the keys first
    (every key, and the storage directory when it is given: :func:`check_high_availability_options`),
    then connects (:class:`~.zookeeper_utils.ZooKeeperConnectionError` naming the quorum)."""
    from streamkernel.common.options.high_availability import check_high_availability_options, is_zookeeper

    if not is_zookeeper(configuration):
        raise IllegalConfigurationError("finding the leading JobManager needs 'high-availability.type: zookeeper'")
    try:
        check_high_availability_options(configuration)
    except IllegalConfigurationError as error:
        # a client may go without the storage directory: its absence is the last thing checked
        if configuration.get(_STORAGE) or _STORAGE not in str(error):
            raise
    return ZooKeeperClientServices(configuration)


def leader_wait_seconds(configuration: Mapping[str, Any]) -> float:
    """How long a client waits for a leader: ``high-availability.zookeeper.client.connection-timeout``."""
    from streamkernel.common.options.high_availability import HighAvailabilityOptions as options

    return options.ZOOKEEPER_CONNECTION_TIMEOUT.get(configuration).to_milliseconds() / 1000


def ha_secret_for_client(configuration: Mapping[str, Any], secret_file: Optional[str]) -> Optional[bytes]:
    """The secret a client of the HA cluster signs with: None when ``secret_file`` is given (the
    client reads it) or when there is no storage directory (the registry by the leader's address
    then); else ``<storageDir>/<cluster-id>/cluster.secret`` (SecretError naming it if missing)."""
    if secret_file or not configuration.get(_STORAGE):
        return None
    from streamkernel.runtime.highavailability.cluster_secret import read_ha_secret

    return read_ha_secret(configuration)
