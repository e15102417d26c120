"""Leader election and leader retrieval: Flink 2.x's ``leaderelection`` and ``leaderretrieval`` contracts.

One :class:`DefaultLeaderElectionService` per JobManager process runs ONE election (a
:class:`LeaderElectionDriver`: ZooKeeper's latch, or the embedded one of the NONE services) for
all its components (``dispatcher``, ``resource_manager``, ``rest_server``). When the driver is
granted, every component's :class:`LeaderContender` gets ``grant_leadership(session_id)`` with
one fresh leader session id (a UUID); when it is revoked (lost latch, suspended or lost
ZooKeeper connection), every contender gets ``revoke_leadership()``. A contender that is ready
calls :meth:`LeaderElection.confirm_leadership` with the session id and its address, which the
driver publishes (ZooKeeper: ``leader/<component>/connection_info``) for the retrieval services.

Events reach contenders in order on one thread of the service, never on the driver's (kazoo's)
threads, so a contender may call back into the service.
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional, Protocol

__all__ = ["DISPATCHER", "RESOURCE_MANAGER", "REST_SERVER", "COMPONENTS", "LeaderInformation", "LeaderContender",
           "LeaderRetrievalListener", "LeaderRetrievalService", "LeaderElectionDriver", "LeaderElection",
           "DefaultLeaderElectionService", "LeadershipLostError"]

LOG = logging.getLogger(__name__)

#: The components of a JobManager process that share its leadership (Flink 2.x's component ids).
DISPATCHER = "dispatcher"
RESOURCE_MANAGER = "resource_manager"
REST_SERVER = "rest_server"
COMPONENTS = (DISPATCHER, RESOURCE_MANAGER, REST_SERVER)


class LeadershipLostError(RuntimeError):
    """A write to the high-availability stores from a process that is not (or no longer) the leader."""


@dataclass(frozen=True)
class LeaderInformation:
    """Who leads a component: its address and the leader session id (Flink's ``LeaderInformation``)."""

    session_id: uuid.UUID
    address: str

    def to_bytes(self) -> bytes:
        """The form stored in ``connection_info``: ``{"address": ..., "session_id": ...}`` as JSON."""
        import json

        return json.dumps({"address": self.address, "session_id": str(self.session_id)}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Optional["LeaderInformation"]:
        """Parse :meth:`to_bytes`; None for empty or unreadable data (no leader)."""
        import json

        try:
            value = json.loads(data.decode())
            return cls(uuid.UUID(value["session_id"]), str(value["address"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


class LeaderContender(Protocol):
    """A component that can lead (Flink's ``LeaderContender``)."""

    def grant_leadership(self, session_id: uuid.UUID) -> None:
        """This process leads now, under ``session_id``; confirm once ready."""

    def revoke_leadership(self) -> None:
        """This process no longer leads: stop acting as leader at once."""

    def handle_error(self, error: Exception) -> None:
        """The election failed in a way the contender must hear about (e.g. it could not be started)."""


class LeaderRetrievalListener(Protocol):
    """Told where a component's leader is (Flink's ``LeaderRetrievalListener``)."""

    def notify_leader_address(self, address: Optional[str], session_id: Optional[uuid.UUID]) -> None:
        """The leader changed: its address and session id, or (None, None) while there is none."""

    def handle_error(self, error: Exception) -> None:
        """Retrieval failed."""


class LeaderRetrievalService(Protocol):
    """Watches one component's leader (Flink's ``LeaderRetrievalService``)."""

    def start(self, listener: LeaderRetrievalListener) -> None:
        """Start telling ``listener`` about leader changes (the current leader first)."""

    def stop(self) -> None:
        """Stop watching; the listener hears nothing more."""


class LeaderElectionDriver(Protocol):
    """One election for a whole process (Flink's ``LeaderElectionDriver``): it calls the service's
    ``on_grant_leadership`` / ``on_revoke_leadership`` and publishes leader information."""

    def has_leadership(self) -> bool:
        """Whether this process holds the leadership right now."""

    def publish_leader_information(self, component: str, info: LeaderInformation) -> None:
        """Publish ``info`` as ``component``'s leader (only while leading)."""

    def delete_leader_information(self, component: str) -> None:
        """Remove ``component``'s published leader (best effort)."""

    def close(self) -> None:
        """Leave the election (releases the leadership if held)."""


class LeaderElection:
    """One component's part of the process's election (Flink 2.x's ``LeaderElection``)."""

    def __init__(self, service: "DefaultLeaderElectionService", component: str) -> None:
        self._service = service
        self.component = component

    def start_leader_election(self, contender: LeaderContender) -> None:
        """Register ``contender``; it is granted at once if the process leads already."""
        self._service._register(self.component, contender)

    def confirm_leadership(self, session_id: uuid.UUID, address: str) -> None:
        """The contender is ready to lead under ``session_id`` at ``address``: publish it.
        Ignored (logged) when ``session_id`` is not the current one: leadership moved on."""
        self._service._confirm(self.component, session_id, address)

    def has_leadership(self, session_id: uuid.UUID) -> bool:
        """Whether the process still leads under ``session_id``."""
        return self._service.has_leadership(session_id)

    def close(self) -> None:
        """Withdraw the contender (revoking it if it leads) and delete its published address."""
        self._service._unregister(self.component)


class DefaultLeaderElectionService:
    """The process's election shared by its components (Flink 2.x's ``DefaultLeaderElectionService``).

    Call :meth:`start` with the driver once (the driver calls back :meth:`on_grant_leadership` and
    :meth:`on_revoke_leadership`, from any thread); components join with :meth:`create_leader_election`.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._events = ThreadPoolExecutor(max_workers=1, thread_name_prefix="leader-election-events")
        self._driver: Optional[LeaderElectionDriver] = None
        self._contenders: dict[str, LeaderContender] = {}
        self._confirmed: dict[str, LeaderInformation] = {}
        self._session_id: Optional[uuid.UUID] = None  # set while the driver holds the leadership
        self._granted: dict[str, uuid.UUID] = {}  # component -> session id its contender was granted with
        self._closed = False

    def start(self, driver: LeaderElectionDriver) -> None:
        """Run the election through ``driver``."""
        with self._lock:
            self._driver = driver

    def create_leader_election(self, component: str) -> LeaderElection:
        """The :class:`LeaderElection` of ``component`` (one contender per component)."""
        return LeaderElection(self, component)

    @property
    def leader_session_id(self) -> Optional[uuid.UUID]:
        """The current leader session id, None while this process does not lead."""
        return self._session_id

    def has_leadership(self, session_id: uuid.UUID) -> bool:
        """Whether this process leads under ``session_id`` right now."""
        with self._lock:
            driver = self._driver
            current = self._session_id is not None and session_id == self._session_id
        # the driver is asked outside the lock: it calls this service back holding its own lock
        return current and driver is not None and driver.has_leadership()

    # called by the driver (any thread) --------------------------------------------------------------
    def on_grant_leadership(self) -> None:
        """The driver won: a new leader session starts and every contender is granted."""
        with self._lock:
            if self._closed:
                return
            session_id = uuid.uuid4()
            self._session_id = session_id
            self._confirmed.clear()
            contenders = dict(self._contenders)
        LOG.info("Granted leadership with session %s", session_id)
        for component, contender in contenders.items():
            self._dispatch_grant(component, contender, session_id)

    def on_revoke_leadership(self) -> None:
        """The driver lost the leadership: every contender is revoked (before anything else happens)."""
        with self._lock:
            if self._session_id is None:
                return
            LOG.info("Leadership with session %s revoked", self._session_id)
            self._session_id = None
            self._confirmed.clear()
            granted = [(c, self._contenders[c]) for c in list(self._granted) if c in self._contenders]
            self._granted.clear()
        for _, contender in granted:
            self._submit(contender.revoke_leadership)

    def on_error(self, error: Exception) -> None:
        """The driver failed: every contender hears it."""
        with self._lock:
            contenders = list(self._contenders.values())
        for contender in contenders:
            self._submit(contender.handle_error, error)

    # called by LeaderElection -------------------------------------------------------------------
    def _register(self, component: str, contender: LeaderContender) -> None:
        with self._lock:
            if component in self._contenders:
                raise ValueError(f"A contender for component {component!r} is registered already")
            self._contenders[component] = contender
            session_id = self._session_id
        if session_id is not None:
            self._dispatch_grant(component, contender, session_id)

    def _dispatch_grant(self, component: str, contender: LeaderContender, session_id: uuid.UUID) -> None:
        def grant() -> None:
            with self._lock:  # still the current session? (a revoke may have come in between)
                if self._session_id != session_id or self._contenders.get(component) is not contender:
                    return
                self._granted[component] = session_id
            contender.grant_leadership(session_id)

        self._submit(grant)

    def _unregister(self, component: str) -> None:
        with self._lock:
            contender = self._contenders.pop(component, None)
            was_granted = self._granted.pop(component, None) is not None
            self._confirmed.pop(component, None)
            driver = self._driver
        if contender is not None and was_granted:
            self._submit(contender.revoke_leadership)
        if driver is not None and contender is not None:
            try:
                driver.delete_leader_information(component)
            except Exception:  # noqa: BLE001 - best effort: the node goes with the session anyway
                LOG.debug("Could not delete the leader information of %s", component, exc_info=True)

    def _confirm(self, component: str, session_id: uuid.UUID, address: str) -> None:
        with self._lock:
            if session_id != self._session_id or self._driver is None:
                LOG.warning("Ignoring the confirmation of %s with session %s: the current session is %s",
                            component, session_id, self._session_id)
                return
            info = LeaderInformation(session_id, address)
            self._confirmed[component] = info
            driver = self._driver
        driver.publish_leader_information(component, info)

    def confirmed_leader_information(self, component: str) -> Optional[LeaderInformation]:
        """What ``component`` confirmed in the current session, or None."""
        with self._lock:
            return self._confirmed.get(component)

    def _submit(self, fn: object, *args: object) -> None:
        def run() -> None:
            try:
                fn(*args)  # type: ignore[operator]
            except Exception:  # noqa: BLE001 - a contender's failure must not stop the event thread
                LOG.exception("A leader election callback failed")

        try:
            self._events.submit(run)
        except RuntimeError:  # closed
            pass

    def close(self) -> None:
        """Revoke every granted contender, close the driver, and stop the event thread."""
        with self._lock:
            self._closed = True
            driver, self._driver = self._driver, None
        self.on_revoke_leadership()
        if driver is not None:
            driver.close()
        self._events.shutdown(wait=True)
