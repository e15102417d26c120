"""A REST client that follows the leading JobManager of a highly available cluster (Flink's
``RestClusterClient`` on a ``LeaderRetrievalService``).

:class:`LeaderRestClient` is a :class:`~.client.RestClusterClient` whose address is the current
leader of ``rest_server`` (through :class:`~streamkernel.runtime.highavailability.leader_follower.LeaderFollower`):
after a takeover its requests go to the new leader; while there is none a request raises
:class:`~streamkernel.runtime.highavailability.leader_follower.NoLeaderError` (one line).
:func:`rest_jobs_overview` names the jobs a leader's REST API knows (for ``%flink ha``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.runtime.highavailability.leader import REST_SERVER, LeaderInformation
from streamkernel.runtime.highavailability.leader_follower import LeaderFollower, NoLeaderError
from streamkernel.runtime.rest.client import RestClusterClient, parse_address

__all__ = ["LeaderRestClient", "rest_jobs_overview"]


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
        try:
            host, port = _host_port(leader)
        except ValueError:
            self._retriever.stop()
            raise
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
                headers: Optional[dict[str, str]] = None, *, decode: bool = True) -> tuple[int, Any]:
        """As :meth:`RestClusterClient.request`, to the current leader; NoLeaderError while there is none."""
        if self._follower.leader is None:
            raise NoLeaderError(f"no leading JobManager of cluster {self.services.cluster_id!r} right now (ZooKeeper "
                                f"{self.services.connection_state}; the last leader was {self.url}); a standby "
                                f"takes over once elected")
        return super().request(method, path, body, headers, decode=decode)

    def close(self) -> None:
        """Stop following the leader (the services stay open: their owner closes them)."""
        self._retriever.stop()


def rest_jobs_overview(rest_url: str, timeout: float = 2.0) -> dict[str, tuple[str, str]]:
    """``{job id: (name, status)}`` from ``GET rest_url/jobs/overview`` ({} when it does not answer)."""
    from streamkernel.errors import StreamKernelError

    try:
        host, port = parse_address(rest_url)
        overview = RestClusterClient(host, port, timeout=timeout).get("/jobs/overview")
    except (ValueError, StreamKernelError):
        return {}
    return {str(j.get("jid")): (str(j.get("name", "")), str(j.get("state", ""))) for j in overview.get("jobs", [])}
