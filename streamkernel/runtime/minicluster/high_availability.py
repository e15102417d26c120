"""A MiniCluster's high availability: its ZooKeeper services, its place in the leader election, and
what its REST front answers while it does not lead.

:class:`ClusterHighAvailability` is created before anything of the cluster starts (an unreachable
quorum or a bad key fails first), gives the cluster its secret (every JobManager's, from the
storage directory) and its HA services (the Dispatcher persists and recovers jobs through them),
and :meth:`~ClusterHighAvailability.join` s the election once every component runs
(:mod:`.leadership`). While the JobManager does not lead, its REST front forwards to the leader
(Flink's standby handlers ask the leader) or answers 503 while none leads.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from streamkernel.runtime.minicluster.leadership import ClusterLeadership, leader_addresses

__all__ = ["ClusterHighAvailability", "is_highly_available"]


def is_highly_available(configuration: Mapping[str, str]) -> bool:
    """Whether ``configuration`` asks for ZooKeeper high availability; a bad ``high-availability.*``
    value (a missing quorum, an unwritable storage directory) raises naming the key, at once."""
    if not any(key.startswith("high-availability") for key in configuration):
        return False
    from streamkernel.common.options.high_availability import check_high_availability_options, is_zookeeper

    check_high_availability_options(configuration)
    return is_zookeeper(configuration)


class ClusterHighAvailability:
    """The HA services (connected to ZooKeeper) and secret of one MiniCluster, and its leadership once
    it joined the election (see the module)."""

    def __init__(self, configuration: Mapping[str, str]) -> None:
        from streamkernel.runtime.highavailability import create_ha_services
        from streamkernel.runtime.checkpoint import filesystem as fs
        from streamkernel.runtime.highavailability.cluster_secret import ha_secret_path, read_or_create_ha_secret

        self.services: Any = create_ha_services(configuration)
        try:
            self.secret: bytes = read_or_create_ha_secret(configuration)
            #: where every JobManager of the cluster reads the secret (and records accepted submissions)
            self.secret_directory: str = fs.dirname(ha_secret_path(configuration))
        except BaseException:
            self.services.close()
            raise
        self.leadership: Optional[ClusterLeadership] = None
        self._rest: Any = None
        self._rpc_address: Optional[tuple[str, int]] = None

    def join(self, dispatcher: Any, rest: Any, taskmanagers: Any) -> None:
        """Join the election (every component runs): ``rest`` is the REST endpoint (or None),
        ``taskmanagers`` the TaskManagers' backend (its RPC listener is what TaskManagers follow)."""
        self._rest = rest
        address = getattr(taskmanagers, "address", None)
        if isinstance(address, tuple) and len(address) == 2:
            self._rpc_address = (str(address[0]), int(address[1]))
        self._follow_leader(False, None)  # 503 while the election runs
        rest_url = rest.rest_url if rest is not None else None
        if rest_url and isinstance(getattr(self.services, "contender_info", None), dict):
            self.services.contender_info["rest_url"] = rest_url  # what `%flink ha` lists
        self.leadership = ClusterLeadership(self.services, dispatcher,
                                            lambda: leader_addresses(rest_url, self._rpc_address),
                                            self._follow_leader).start()

    def _follow_leader(self, leading: bool, leader_rest_url: Optional[str]) -> None:
        rest = self._rest
        front = rest.front if rest is not None else None
        if rest is None or front is None:
            return
        if leading:
            front.forward_home()
        else:
            front.forward_to(leader_rest_url if leader_rest_url != rest.rest_url else None)

    def close(self, cleanup_data: bool = False) -> None:
        """Leave the election (the JobManager's jobs were suspended before) and close the services;
        ``cleanup_data``: delete the cluster's persisted data too (the cluster is shut down for good)."""
        leadership, self.leadership = self.leadership, None
        if leadership is not None:
            leadership.close()
        try:
            if cleanup_data:
                self.services.cleanup_all_data()
        finally:
            self.services.close()
