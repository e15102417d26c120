"""Leader election and retrieval through ZooKeeper (Flink's ``ZooKeeperLeaderElectionDriver`` and
``ZooKeeperLeaderRetrievalDriver``), on kazoo's recipes.

The election is kazoo's ``Lock`` recipe on ``leader/latch``: every process creates an ephemeral
sequential node there and the lowest one holds the latch (ZooKeeper's own leader-election
recipe). Leadership is granted once the latch is held AND the client is connected, and is
revoked the moment the client's connection is SUSPENDED or LOST (kazoo's connection-state
listener) or the latch node disappears: a leader stops before its session can expire on the
server, which is what frees the latch for another process. After a suspension that the session
survives, the latch node is still ours and leadership is granted again with a new session id;
after a LOST session a new latch node joins the queue.

Retrieval watches ``leader/<component>/connection_info`` (kazoo's ``DataWatch``); the node is
ephemeral, so it disappears with its leader's session and listeners hear (None, None).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Optional

from streamkernel.runtime.highavailability.leader import (
    DefaultLeaderElectionService,
    LeaderInformation,
    LeaderRetrievalListener,
    LeadershipLostError,
)
from streamkernel.runtime.highavailability.zookeeper_utils import ZooKeeperPaths, commit_as_leader

__all__ = ["ZooKeeperLeaderElectionDriver", "ZooKeeperLeaderRetrievalService"]

LOG = logging.getLogger(__name__)


class ZooKeeperLeaderElectionDriver:
    """This process's place in the election on ``leader/latch`` (kazoo's Lock recipe)."""

    def __init__(self, client: Any, paths: ZooKeeperPaths, service: DefaultLeaderElectionService,
                 identifier: str) -> None:
        from kazoo.protocol.states import KazooState

        self._states = KazooState
        self._client = client
        self._paths = paths
        self._service = service
        self._identifier = identifier
        self._mutex = threading.Lock()
        self._wake = threading.Condition(self._mutex)
        self._leading = False
        self._owned: Optional[str] = None  # our latch node while we hold the latch
        self._connected = client.connected
        self._latch_lost = False
        self._closed = False
        self._kazoo_lock: Any = None
        client.add_listener(self._on_connection_state)
        self._thread = threading.Thread(target=self._run, name="zookeeper-leader-latch", daemon=True)
        self._thread.start()

    # state -------------------------------------------------------------------------------------
    def has_leadership(self) -> bool:
        """Whether this process leads now (latch held, connection not suspended)."""
        with self._mutex:
            return self._leading

    def latch_node(self) -> str:
        """Our latch node, for writes that must fail once we no longer lead; raises
        :class:`LeadershipLostError` when this process does not lead."""
        with self._mutex:
            if not self._leading or self._owned is None:
                raise LeadershipLostError("This process is not the leader (it does not hold the leader latch "
                                          f"{self._paths.latch})")
            return self._owned

    def _revoke(self) -> None:
        """Called with the mutex held."""
        if self._leading:
            self._leading = False
            self._service.on_revoke_leadership()

    def _on_connection_state(self, state: str) -> None:
        """kazoo's connection-state listener (kazoo's thread: must not block)."""
        with self._mutex:
            if state in (self._states.SUSPENDED, self._states.LOST):
                self._connected = False
                LOG.warning("ZooKeeper connection %s: leadership revoked", state)
                self._revoke()
                if state == self._states.LOST:
                    self._latch_lost = True
            else:
                self._connected = True
            self._wake.notify_all()

    def _on_latch_node_event(self, event: Any) -> None:
        """A watch on our latch node fired (deleted: the latch is gone)."""
        if event is not None and event.type == "DELETED":
            with self._mutex:
                self._latch_lost = True
                self._revoke()
                self._wake.notify_all()

    # the latch thread --------------------------------------------------------------------------
    def _run(self) -> None:
        """Queue for the latch, lead while holding it, queue again: until :meth:`close`.

        One kazoo ``Lock`` stands for one place in the queue. A failure while waiting (the
        connection went, a request timed out while ZooKeeper is away) keeps that place: the same
        ``Lock`` is acquired again once connected, and finds its node by its prefix (or makes a new
        one if the session that held it expired). A new ``Lock`` would leave the old node queued
        without anyone watching it, in front of every contender behind it. Whatever fails, this
        thread stays in the race (Curator's ``LeaderLatch`` re-creates its node after a reconnect)."""
        from kazoo.exceptions import CancelledError

        lock: Any = None
        while True:
            with self._mutex:
                while not self._closed and not self._connected:
                    self._wake.wait()
                if self._closed:
                    return
                self._latch_lost = False
                if lock is None:
                    lock = self._kazoo_lock = self._client.Lock(self._paths.latch, self._identifier)
            try:
                lock.acquire()
            except CancelledError:
                lock = None
                continue
            except Exception as error:  # noqa: BLE001 - ConnectionLoss, kazoo's timeout ...: keep our place
                LOG.info("Waiting for the leader latch failed (%s: %s); waiting again once connected",
                         type(error).__name__, error)
                with self._mutex:  # not a busy loop while the listener has not heard of the loss yet
                    self._wake.wait(0.2)
                continue
            node = f"{self._paths.latch}/{lock.node}"
            self._hold(node)
            try:
                lock.release()
            except Exception:  # noqa: BLE001 - the node goes with the session anyway
                LOG.debug("Could not release the leader latch %s", node, exc_info=True)
            lock = None

    def _hold(self, node: str) -> None:
        """Lead while ``node`` is ours: grant when connected, wait for loss or close."""
        while True:
            with self._mutex:
                while not self._closed and not self._latch_lost and (self._leading or not self._connected):
                    self._wake.wait()
                if self._closed or self._latch_lost:
                    self._revoke()
                    self._owned = None
                    return
            try:  # (re)connected: is the latch still ours?
                stat = self._client.exists(node, watch=self._on_latch_node_event)
            except Exception:  # noqa: BLE001 - ConnectionLoss, or kazoo's timeout while ZooKeeper is away
                with self._mutex:  # the connection went: wait for the listener's news, or a moment
                    self._wake.wait(0.2)
                continue
            with self._mutex:
                if stat is None:
                    self._latch_lost = True
                    continue
                if self._connected and not self._closed and not self._latch_lost:
                    self._owned = node
                    self._leading = True
                    LOG.info("Holding the leader latch %s", node)
                    self._service.on_grant_leadership()

    # leader information ------------------------------------------------------------------------
    def publish_leader_information(self, component: str, info: LeaderInformation) -> None:
        """Write ``component``'s ``connection_info`` (ephemeral), only while holding the latch."""
        from kazoo.exceptions import NodeExistsError

        path = self._paths.connection_info(component)
        self._client.ensure_path(path.rsplit("/", 1)[0])
        data = info.to_bytes()
        try:
            commit_as_leader(self._client, self.latch_node,
                             lambda t: t.create(path, data, ephemeral=True), f"publish the leader of {component}")
        except NodeExistsError:  # an earlier session's node (ours or a former leader's): replace it
            def replace(transaction: Any) -> None:
                transaction.delete(path)
                transaction.create(path, data, ephemeral=True)

            commit_as_leader(self._client, self.latch_node, replace, f"publish the leader of {component}")

    def delete_leader_information(self, component: str) -> None:
        """Delete ``component``'s ``connection_info`` if this process leads (a former leader never
        deletes its successor's; its own node went with its session)."""
        from kazoo.exceptions import NoNodeError

        path = self._paths.connection_info(component)
        try:
            commit_as_leader(self._client, self.latch_node, lambda t: t.delete(path),
                             f"delete the leader of {component}")
        except (NoNodeError, LeadershipLostError):
            pass

    def close(self) -> None:
        """Leave the election: revoke, stop waiting for the latch, release it."""
        with self._mutex:
            self._closed = True
            self._revoke()
            lock = self._kazoo_lock
            self._wake.notify_all()
        if lock is not None:
            lock.cancel()
        self._client.remove_listener(self._on_connection_state)
        self._thread.join(timeout=30)


class ZooKeeperLeaderRetrievalService:
    """Tells a listener who leads ``component`` (kazoo's DataWatch on its ``connection_info``)."""

    def __init__(self, client: Any, paths: ZooKeeperPaths, component: str) -> None:
        self._client = client
        self._path = paths.connection_info(component)
        self._listener: Optional[LeaderRetrievalListener] = None
        self._last: Optional[LeaderInformation] = None
        self._notified = False
        self._lock = threading.Lock()
        self._stopped = False

    def start(self, listener: LeaderRetrievalListener) -> None:
        """Watch the component's leader; ``listener`` hears the current one first, then every change.
        While the connection is suspended or lost the leader is unknown: (None, None)."""
        from kazoo.recipe.watchers import DataWatch

        self._listener = listener
        self._client.add_listener(self._on_connection_state)
        DataWatch(self._client, self._path, self._on_data)

    def _notify(self, info: Optional[LeaderInformation]) -> None:
        with self._lock:
            if self._stopped or (self._notified and info == self._last):
                return
            self._last, self._notified = info, True
            listener = self._listener
        if listener is not None:
            try:
                listener.notify_leader_address(info.address if info else None, info.session_id if info else None)
            except Exception:  # noqa: BLE001 - a listener's failure must not end the watch
                LOG.exception("A leader retrieval listener failed")

    def _on_data(self, data: Optional[bytes], stat: Any) -> Optional[bool]:
        if self._stopped:
            return False  # ends kazoo's DataWatch
        self._notify(LeaderInformation.from_bytes(data) if data else None)
        return None

    def _on_connection_state(self, state: str) -> None:
        from kazoo.protocol.states import KazooState

        if state in (KazooState.SUSPENDED, KazooState.LOST):
            threading.Thread(target=self._notify, args=(None,), daemon=True).start()
        elif state == KazooState.CONNECTED and not self._stopped:
            threading.Thread(target=self._reread, daemon=True).start()

    def _reread(self) -> None:
        try:
            data, _ = self._client.get(self._path)
        except Exception:  # noqa: BLE001 - ConnectionLoss, or kazoo's timeout (not a KazooException)
            data = None
        self._notify(LeaderInformation.from_bytes(data) if data else None)

    def stop(self) -> None:
        """Stop watching."""
        with self._lock:
            self._stopped = True
        self._client.remove_listener(self._on_connection_state)
