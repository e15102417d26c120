"""What the shell commands ask of a highly available cluster: whether its configuration is one, and
where its leading JobManager's REST API is (followed through ZooKeeper while a command waits).

Errors are :class:`~.jobmanager_rest.StandaloneClusterError` with one line naming the
configuration key or the cluster id.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from streamkernel.runtime.entrypoint.jobmanager_rest import StandaloneClusterError, registered_ids

__all__ = ["high_availability_configured", "LeaderRest"]

_HA_PREFIX = "high-availability"


def high_availability_configured(configuration: Mapping[str, Any]) -> bool:
    """Whether ``configuration`` selects ZooKeeper high availability; a StandaloneClusterError naming the
    key when its high-availability keys are incomplete or wrong (checked before anything starts)."""
    from streamkernel.common.options.high_availability import (
        HighAvailabilityOptions,
        check_high_availability_options,
        is_zookeeper,
    )

    try:
        check_high_availability_options(configuration)
        zookeeper = is_zookeeper(configuration)
    except ValueError as error:
        raise StandaloneClusterError(str(error).splitlines()[0]) from None
    if not zookeeper:
        mode_keys = {HighAvailabilityOptions.HA_MODE.key(), _HA_PREFIX}
        given = sorted(key for key in configuration if key.startswith(_HA_PREFIX + ".") and key not in mode_keys)
        if given:
            raise StandaloneClusterError(
                f"{', '.join(given)} given without '{HighAvailabilityOptions.HA_MODE.key()}=zookeeper': set it (and "
                f"high-availability.zookeeper.quorum, high-availability.storageDir, high-availability.cluster-id)")
    return zookeeper


class LeaderRest:
    """The REST URL of the leading JobManager of the cluster ``configuration`` names (ZooKeeper HA);
    connects to ZooKeeper at once (one line naming the quorum when it cannot). Close it when done."""

    def __init__(self, configuration: Mapping[str, Any]) -> None:
        from streamkernel.runtime.highavailability import REST_SERVER, create_ha_services
        from streamkernel.runtime.highavailability.leader_follower import LeaderFollower

        try:
            self.services: Any = create_ha_services(configuration)
        except Exception as error:  # noqa: BLE001 - ZooKeeperConnectionError (naming the quorum) or a bad key
            raise StandaloneClusterError(str(error).splitlines()[0] if str(error) else type(error).__name__) from None
        self.cluster_id = str(getattr(self.services, "cluster_id", ""))
        self._follower = LeaderFollower()
        self._retriever = self.services.leader_retriever(REST_SERVER)
        self._retriever.start(self._follower)

    def rest_url(self, timeout: float) -> str:
        """The leader's REST URL, waiting up to ``timeout`` s; the error names the cluster id when none shows."""
        from streamkernel.runtime.highavailability import REST_SERVER
        from streamkernel.runtime.highavailability.leader_follower import NoLeaderError, retrieve_leader

        try:
            return retrieve_leader(self.services, REST_SERVER, timeout).address
        except NoLeaderError as error:
            raise StandaloneClusterError(str(error)) from None

    @property
    def current_rest_url(self) -> Optional[str]:
        """The REST URL of the leader right now (None while there is none)."""
        leader = self._follower.leader
        return leader.address if leader is not None else None

    def registered_ids(self) -> set[str]:
        """The TaskManagers registered with the current leader (none while there is no leader or it does
        not answer: a leader that just died)."""
        url = self.current_rest_url
        if url is None:
            return set()
        try:
            return registered_ids(url)
        except StandaloneClusterError:
            return set()

    def close(self) -> None:
        """Stop following and close the ZooKeeper connection."""
        self._retriever.stop()
        self.services.close()
