"""Clients of a highly available cluster: find the leading JobManager's REST API through ZooKeeper
and keep following it (Flink's ``RestClusterClient`` on a ``LeaderRetrievalService``).

* :class:`ZooKeeperClientServices`: what a client needs of the HA services (a ZooKeeper session,
  the node layout, leader retrieval), without joining the election and without needing
  ``high-availability.storageDir`` (which only the job result store and the secret read).
* :class:`LeaderRestClient`: a :class:`~streamkernel.runtime.rest.client.RestClusterClient` whose
  address is the current leader of ``rest_server``: after a takeover its requests go to the new
  leader; while there is none, a request raises :class:`~.leader_follower.NoLeaderError` (one line).
* :func:`ha_secret_for_client`: the cluster's secret as a client of a HA cluster takes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.highavailability.leader import REST_SERVER, LeaderInformation
from streamkernel.runtime.highavailability.leader_follower import LeaderFollower, NoLeaderError
from streamkernel.runtime.rest.client import RestClusterClient, parse_address

__all__ = ["ZooKeeperClientServices", "LeaderRestClient", "client_ha_services", "ha_secret_for_client",
           "leader_wait_seconds"]

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


def _host_port(leader: LeaderInformation) -> tuple[str, int]:
    return parse_address(leader.address, "the leader's REST address")


class LeaderRestClient(RestClusterClient):
    """A REST client that follows the leading JobManager (see the module's docstring).

    Built from ``services`` (started retrieval of ``rest_server``; waits up to ``timeout`` for a
    first leader: NoLeaderError). Without a fixed ``secret`` or ``secret_file``, the secret is found
    again for each new leader's address (the registry). ``on_change(client)`` is called after each
    change of leader (on the retrieval thread). :meth:`close` stops following.
    """

    def __init__(self, services: Any, timeout: float, secret: Optional[bytes] = None,
                 secret_file: Optional[str] = None, request_timeout: float = 5.0) -> None:
        self.services = services
        self._follows_secret = secret is None and secret_file is None
        self.listeners: list[Callable[["LeaderRestClient"], None]] = []
        self._follower = LeaderFollower(on_change=self._on_leader)
        self._retriever = services.leader_retriever(REST_SERVER)
        self._retriever.start(self._follower)
        leader = self._follower.wait_for_leader(timeout)
        if leader is None:
            self._retriever.stop()
            raise NoLeaderError(f"no leading JobManager of cluster {services.cluster_id!r} (ZooKeeper "
                                f"{services.quorum}) within {timeout:g} s: start one, or check the quorum and "
                                f"the cluster id")
        host, port = _host_port(leader)
        super().__init__(host, port, secret=secret, secret_file=secret_file, timeout=request_timeout)
        current = self._follower.leader  # a change while this was being built
        if current is not None:
            self._on_leader(current)

    @property
    def leader(self) -> Optional[LeaderInformation]:
        """The current leader of ``rest_server`` (None: none right now)."""
        return self._follower.leader

    def _on_leader(self, leader: Optional[LeaderInformation]) -> None:
        if leader is None or not hasattr(self, "port"):
            return  # no leader: requests say so; before __init__ ended: it takes the first leader itself
        host, port = _host_port(leader)
        if (host, port) != (self.host, self.port):
            self.host, self.port = host, port
            if self._follows_secret:
                self._secret = None
        for listener in list(self.listeners):
            listener(self)

    def request(self, method: str, path: str, body: Optional[bytes] = None,
                headers: Optional[dict[str, str]] = None) -> tuple[int, Any]:
        """As :meth:`RestClusterClient.request`, to the current leader; NoLeaderError while there is none."""
        if self._follower.leader is None:
            raise NoLeaderError(f"no leading JobManager of cluster {self.services.cluster_id!r} right now (ZooKeeper "
                                f"{self.services.connection_state}; the last leader was {self.url}); a standby "
                                f"takes over once elected")
        return super().request(method, path, body, headers)

    def close(self) -> None:
        """Stop following the leader (the services stay open: their owner closes them)."""
        self._retriever.stop()
