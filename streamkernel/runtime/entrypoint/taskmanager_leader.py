"""A TaskManager process that follows the leading JobManager of a highly available cluster.

With ``high-availability.type: zookeeper`` a TaskManager process (:mod:`.taskmanager_runner`)
is given no JobManager address: :func:`serve_following_leader` follows the ``resource_manager``
leader through ZooKeeper (Flink's ``ResourceManagerLeaderListener`` of the TaskExecutor),
connects to the RPC listener the leader published (``HOST:PORT``) and registers there. Then

* the leader's connection closes (its process died): the TaskManager waits for a leader with
  another session id and registers there, with the same id, slots and process;
* a leader with another session id is published while it serves one (FENCING: the JobManager it
  serves no longer leads): it closes the connection at once (its tasks end) and registers with the
  new leader. ``(None, None)`` (no leader published, or this process's own ZooKeeper connection is
  suspended) fences nothing: the old leader is revoked by its own election and stops its jobs;
* while there is no leader it waits as long as it takes (as Flink's TaskManagers do), saying so
  once in its log.

It ends only when the JobManager tells it to shut down or on ``stop`` (SIGTERM).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from typing import Any, Mapping, Optional

from streamkernel.runtime.highavailability.leader import RESOURCE_MANAGER, LeaderInformation
from streamkernel.runtime.highavailability.leader_follower import LeaderFollower
from streamkernel.runtime.rpc.transport import ConnectionRefusedByPeerError
from streamkernel.runtime.taskmanager.worker import (
    ENDED_CONNECTION_LOST,
    ENDED_DISCONNECTED,
    ENDED_STOPPED,
    run_taskmanager,
)

__all__ = ["serve_following_leader", "LeaderFence"]

_LOG = logging.getLogger(__name__)
#: How often the waits look at ``stop`` (SIGTERM).
_POLL_S = 0.2
#: How long a refused connection waits for another leader before it tries the same one again.
_RETRY_S = 1.0


class LeaderFence:
    """Sets :attr:`event` (``run_taskmanager``'s ``disconnect_event``) once a leader whose session id
    differs from the one being served is published. Its :meth:`on_change` is a LeaderFollower's."""

    def __init__(self, follower: Optional[LeaderFollower] = None) -> None:
        self.event = threading.Event()
        #: Whose current leader :meth:`serve` checks (set it once the follower exists).
        self.follower = follower
        self._lock = threading.Lock()
        self._served: Optional[uuid.UUID] = None

    def serve(self, session_id: uuid.UUID) -> None:
        """From now on the leader of ``session_id`` is served (fenced at once if it no longer leads)."""
        with self._lock:
            self._served = session_id
            self.event.clear()
            current = self.follower.leader if self.follower is not None else None
            if current is not None and current.session_id != session_id:
                self.event.set()

    def on_change(self, leader: Optional[LeaderInformation]) -> None:
        """The follower's callback (on the retrieval service's thread)."""
        with self._lock:
            if leader is not None and self._served is not None and leader.session_id != self._served:
                self.event.set()


def _rpc_address(leader: LeaderInformation) -> tuple[str, int]:
    host, _, port = leader.address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"the leading JobManager published {leader.address!r} as its RPC address (expected HOST:PORT)")
    return host, int(port)


def _session_timeout_s(configuration: Mapping[str, str]) -> float:
    from streamkernel.common.options.high_availability import HighAvailabilityOptions

    return HighAvailabilityOptions.ZOOKEEPER_SESSION_TIMEOUT.get(configuration).to_milliseconds() / 1000


class _Waiter:
    def __init__(self, follower: LeaderFollower, stop: threading.Event, taskmanager_id: str, cluster: str) -> None:
        self.follower, self.stop, self.taskmanager_id, self.cluster = follower, stop, taskmanager_id, cluster

    def leader_other_than(self, session_id: Optional[uuid.UUID],
                          timeout: Optional[float] = None) -> Optional[LeaderInformation]:
        """A leader whose session is not ``session_id``; None on stop or after ``timeout`` (None: no limit)."""
        waited, said = 0.0, False
        while not self.stop.is_set():
            leader = self.follower.wait_for_leader(_POLL_S, other_than=session_id)
            if leader is not None:
                return leader
            waited += _POLL_S
            if timeout is not None and waited >= timeout:
                return None
            if not said and timeout is None and self.follower.leader is None:
                said = True
                _LOG.info("TaskManager %s waits for a leading JobManager of cluster %r", self.taskmanager_id,
                          self.cluster)
        return None


def serve_following_leader(services: Any, secret: bytes, taskmanager_id: str, slots: int,
                           configuration: Mapping[str, str], stop: threading.Event) -> str:
    """Serve the leading JobManager of ``services``' cluster, following it on every leader change,
    until it shuts this TaskManager down (returns :data:`~.worker.ENDED_SHUTDOWN`) or ``stop`` is set
    (:data:`~.worker.ENDED_STOPPED`). ``services`` are the cluster's HighAvailabilityServices (the caller
    closes them); ``secret`` the cluster's (:func:`~...highavailability.cluster_secret.read_ha_secret`)."""
    fence = LeaderFence()
    follower = fence.follower = LeaderFollower(on_change=fence.on_change)
    retriever = services.leader_retriever(RESOURCE_MANAGER)
    retriever.start(follower)
    wait = _Waiter(follower, stop, taskmanager_id, str(getattr(services, "cluster_id", "")))
    # a leader whose connection closed but that still leads after this long is alive (a dead one's node is gone)
    linger = 1.5 * _session_timeout_s(configuration)
    previous: Optional[LeaderInformation] = None  # the last leader served
    avoid: Optional[uuid.UUID] = None  # the session not to serve again (until it lingered)
    try:
        while not stop.is_set():
            leader = wait.leader_other_than(avoid, timeout=linger if avoid is not None else None)
            if leader is None:
                avoid = None  # the old leader still leads (registering again), or none does (waiting for any)
                continue
            try:
                address = _rpc_address(leader)
            except ValueError as error:  # a JobManager's bug: wait for the next leader (or the same, later)
                _LOG.error("TaskManager %s: %s", taskmanager_id, error)
                avoid = leader.session_id
                continue
            fence.serve(leader.session_id)
            if previous is None:
                _LOG.info("TaskManager %s (pid %d) joins the leading JobManager at %s (session %s)", taskmanager_id,
                          os.getpid(), leader.address, leader.session_id)
            elif previous.session_id == leader.session_id:
                _LOG.info("TaskManager %s (pid %d) registers again with the JobManager at %s (session %s): it still "
                          "leads", taskmanager_id, os.getpid(), leader.address, leader.session_id)
            else:
                _LOG.info("TaskManager %s (pid %d) left the JobManager at %s (session %s) and joins the leading "
                          "JobManager at %s (session %s)", taskmanager_id, os.getpid(), previous.address,
                          previous.session_id, leader.address, leader.session_id)
            try:
                ended = run_taskmanager(address, secret, taskmanager_id, slots, configuration,
                                        stop_event=stop, disconnect_event=fence.event)
            except (ConnectionRefusedByPeerError, OSError) as error:
                _LOG.warning("TaskManager %s cannot reach the leading JobManager at %s (session %s): %s; trying "
                             "again", taskmanager_id, leader.address, leader.session_id, error)
                follower.wait_for_leader(_RETRY_S, other_than=leader.session_id)
                continue
            if ended not in (ENDED_CONNECTION_LOST, ENDED_DISCONNECTED):
                return ended
            why = "it no longer leads (fenced)" if ended == ENDED_DISCONNECTED else "its connection closed"
            _LOG.warning("TaskManager %s left the JobManager at %s (session %s): %s", taskmanager_id, leader.address,
                         leader.session_id, why)
            previous, avoid = leader, leader.session_id
        return ENDED_STOPPED
    finally:
        retriever.stop()
