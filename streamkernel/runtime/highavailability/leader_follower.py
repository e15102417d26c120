"""Following a component's leader: what TaskManagers and clients of a highly available cluster use.

:class:`LeaderFollower` is a :class:`~.leader.LeaderRetrievalListener` that remembers the
latest leader and lets a thread wait for one (or for a leader other than the one it knows):

    >>> follower = LeaderFollower()                                  # doctest: +SKIP
    >>> services.leader_retriever(REST_SERVER).start(follower)       # doctest: +SKIP
    >>> follower.wait_for_leader(timeout=30).address                 # doctest: +SKIP
    'http://127.0.0.1:40123'

:func:`retrieve_leader` does that once, and raises :class:`NoLeaderError` naming the cluster when
no leader shows within the timeout.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any, Callable, Optional

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.highavailability.leader import LeaderInformation

__all__ = ["LeaderFollower", "NoLeaderError", "retrieve_leader"]


class NoLeaderError(StreamKernelError):
    """No leader of the component showed up within the time allowed."""


class LeaderFollower:
    """Remembers the latest leader a retrieval service reported; ``on_change(info or None)`` is
    called (on the service's thread) for every change."""

    def __init__(self, on_change: Optional[Callable[[Optional[LeaderInformation]], None]] = None) -> None:
        self._changed = threading.Condition()
        self._leader: Optional[LeaderInformation] = None
        self._on_change = on_change
        self.error: Optional[Exception] = None

    @property
    def leader(self) -> Optional[LeaderInformation]:
        """The current leader, None while there is none (or the connection to ZooKeeper is suspended)."""
        with self._changed:
            return self._leader

    def notify_leader_address(self, address: Optional[str], session_id: Optional[uuid.UUID]) -> None:
        """The retrieval service's callback."""
        info = LeaderInformation(session_id, address) if address and session_id is not None else None
        with self._changed:
            if info == self._leader:
                return
            self._leader = info
            self._changed.notify_all()
        if self._on_change is not None:
            self._on_change(info)

    def handle_error(self, error: Exception) -> None:
        """Retrieval failed: remembered, and waiters wake up."""
        with self._changed:
            self.error = error
            self._changed.notify_all()

    def wait_for_leader(self, timeout: Optional[float] = None,
                        other_than: Optional[uuid.UUID] = None) -> Optional[LeaderInformation]:
        """The leader once there is one whose session id is not ``other_than`` (None: any), or
        None after ``timeout`` seconds (None: wait as long as it takes)."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._leader is not None and self._leader.session_id != other_than, timeout)
            leader = self._leader
            return leader if leader is not None and leader.session_id != other_than else None


def retrieve_leader(services: Any, component: str, timeout: float) -> LeaderInformation:
    """The current leader of ``component`` through ``services`` (a HighAvailabilityServices), waiting
    up to ``timeout`` seconds for one; :class:`NoLeaderError` names the cluster otherwise."""
    follower = LeaderFollower()
    retriever = services.leader_retriever(component)
    retriever.start(follower)
    try:
        leader = follower.wait_for_leader(timeout)
    finally:
        retriever.stop()
    if leader is None:
        where = getattr(services, "cluster_id", "")
        raise NoLeaderError(f"no leading JobManager{f' of cluster {where!r}' if where else ''} within {timeout:g} s: "
                            f"start one (`streamkernel jobmanager start -D high-availability.type=zookeeper ...`) or "
                            f"check high-availability.zookeeper.quorum and high-availability.cluster-id")
    return leader
