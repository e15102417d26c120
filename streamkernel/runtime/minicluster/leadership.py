"""The JobManager as a leader contender (Flink's ``DefaultDispatcherRunner`` and the leadership of
its ResourceManager and REST endpoint, which all lead together in one process).

With ``high-availability.type: zookeeper`` every JobManager process (a ``streamkernel jobmanager``,
an in-kernel ``%flink start --ha``) runs its Dispatcher, ResourceManager and REST endpoint from the
start, and joins the election. The one elected:

1. recovers the persisted jobs (:meth:`Dispatcher.grant_leadership`: each from its latest completed
   checkpoint);
2. publishes where it is: the REST URL for ``rest_server`` and ``dispatcher`` (what clients
   follow), the RPC listener's ``HOST:PORT`` for ``resource_manager`` (what TaskManagers follow).

When it loses the leadership (its ZooKeeper connection suspended or lost, its latch gone) its
Dispatcher suspends every job at once and refuses submissions, naming the leader; it stays a
contender and leads again (recovering the jobs anew) if it is elected again. A standby's
Dispatcher does nothing but refuse submissions.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any, Callable, Optional

from streamkernel.runtime.highavailability.leader import DISPATCHER, RESOURCE_MANAGER, REST_SERVER
from streamkernel.runtime.highavailability.leader_follower import LeaderFollower

__all__ = ["ClusterLeadership"]

_LOG = logging.getLogger(__name__)


class ClusterLeadership:
    """The leader contender of one JobManager (see the module).

    ``addresses()`` returns ``{component: address}`` to publish once leading (computed at each grant:
    the REST and RPC ports are bound by then). ``on_change(leading, leader_rest_url)`` is told of every
    grant, revocation (after the Dispatcher acted) and change of the leader's published REST URL.
    """

    def __init__(self, services: Any, dispatcher: Any, addresses: Callable[[], dict[str, str]],
                 on_change: Optional[Callable[[bool, Optional[str]], None]] = None) -> None:
        self.services = services
        self.dispatcher = dispatcher
        self._addresses = addresses
        self._on_change = on_change
        self._lock = threading.Lock()
        self._session_id: Optional[uuid.UUID] = None
        self.recovered_jobs: list[str] = []
        self._leader = LeaderFollower(on_change=self._leader_changed)
        self._retriever: Any = None

    def start(self) -> "ClusterLeadership":
        """Join the election, and follow whoever leads (what a standby tells submitters)."""
        self._retriever = self.services.leader_retriever(REST_SERVER)
        self._retriever.start(self._leader)
        self.services.leader_election(DISPATCHER).start_leader_election(self)
        return self

    @property
    def session_id(self) -> Optional[uuid.UUID]:
        """The leader session id while this JobManager leads, else None."""
        with self._lock:
            return self._session_id

    def wait_for_leader(self, timeout: float) -> Any:
        """The leader's REST :class:`~streamkernel.runtime.highavailability.LeaderInformation` once one
        is published (this JobManager, once it recovered its jobs, or another), None after ``timeout`` s."""
        return self._leader.wait_for_leader(timeout)

    @property
    def leader(self) -> Any:
        """The current leader's :class:`~streamkernel.runtime.highavailability.LeaderInformation` (REST), or None."""
        return self._leader.leader

    # LeaderContender --------------------------------------------------------------------------------
    def grant_leadership(self, session_id: uuid.UUID) -> None:
        """Elected: recover the jobs, then publish the addresses (clients and TaskManagers come)."""
        _LOG.info("This JobManager leads now (leader session %s): recovering the persisted jobs", session_id)
        with self._lock:
            self._session_id = session_id
        self.recovered_jobs = self.dispatcher.grant_leadership()
        if self.recovered_jobs:
            _LOG.info("recovered %d job(s): %s", len(self.recovered_jobs), ", ".join(self.recovered_jobs))
        election = self.services.leader_election(DISPATCHER)
        if not election.has_leadership(session_id):
            return  # revoked meanwhile: the revocation follows on this thread
        for component, address in self._addresses().items():
            self.services.leader_election(component).confirm_leadership(session_id, address)
        self._changed()

    def revoke_leadership(self) -> None:
        """No longer elected: suspend every job at once and refuse submissions."""
        with self._lock:
            was, self._session_id = self._session_id, None
        if was is None:
            return
        _LOG.warning("This JobManager lost its leadership (session %s): its jobs are suspended", was)
        self.dispatcher.revoke_leadership()
        self._changed()

    def handle_error(self, error: Exception) -> None:
        """The election failed: logged (the services' connection handling revokes if it must)."""
        _LOG.error("leader election error: %s", error)

    def _leader_changed(self, info: Any) -> None:
        self.dispatcher.leader_hint = info.address if info is not None else ""
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            leader = self._leader.leader
            self._on_change(self.session_id is not None, leader.address if leader is not None else None)

    def close(self) -> None:
        """Stop following the leader (the election is left by closing the services)."""
        if self._retriever is not None:
            self._retriever.stop()
            self._retriever = None


def leader_addresses(rest_url: Optional[str], rpc_address: Optional[tuple[str, int]]) -> dict[str, str]:
    """What a leading JobManager publishes: its REST URL (``rest_server``, ``dispatcher``) and its RPC
    listener (``resource_manager``), those it has."""
    addresses: dict[str, str] = {}
    if rest_url:
        addresses[REST_SERVER] = rest_url
        addresses[DISPATCHER] = rest_url
    if rpc_address is not None:
        addresses[RESOURCE_MANAGER] = f"{rpc_address[0]}:{rpc_address[1]}"
    return addresses
