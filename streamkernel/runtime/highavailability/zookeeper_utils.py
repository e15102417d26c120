"""ZooKeeper plumbing of the HA services (Flink's ``ZooKeeperUtils``): the client, the node layout,
and writes that succeed only while this process holds the leader latch.

The layout under ``<path.root>/<cluster-id>/`` (Flink 2.x's)::

    leader/latch/<lock nodes>                 the election (kazoo's Lock recipe)
    leader/<component>/connection_info        the leader's address and session id (JSON, ephemeral)
    execution-plans/<job-id>                  pointer to the job graph file in storageDir (JSON)
    jobs/<job-id>/checkpoint_id_counter       the next checkpoint id (versioned, compare-and-set)
    jobs/<job-id>/checkpoints/<id>            pointer to a completed checkpoint (JSON)

kazoo is imported here only when a client is made: ``import streamkernel`` never imports it.
While a client makes its first connection, kazoo's log records are held back (:class:`_HeldBackLog`):
a quorum that cannot be reached is one :class:`ZooKeeperConnectionError` line, not kazoo's
"Connecting to ..." / "Connection dropped: ..." per attempt; once connected they are logged as usual.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional

from streamkernel.common.options.high_availability import HighAvailabilityOptions
from streamkernel.errors import IllegalConfigurationError, StreamKernelError
from streamkernel.runtime.highavailability.leader import LeadershipLostError

__all__ = ["ZooKeeperConnectionError", "ZooKeeperPaths", "start_zookeeper_client", "commit_as_leader",
           "checkpoint_node_name"]


class ZooKeeperConnectionError(StreamKernelError):
    """The ZooKeeper quorum could not be reached; names the key and the address."""


class ZooKeeperPaths:
    """Where a cluster's nodes are: ``<path.root>/<cluster-id>/...``."""

    def __init__(self, root: str, cluster_id: str) -> None:
        self.base = "/" + "/".join(p for p in (root.strip("/"), cluster_id.strip("/")) if p)

    @property
    def leader(self) -> str:
        """The parent of the latch and of the components' connection info."""
        return self.base + "/leader"

    @property
    def latch(self) -> str:
        """The election's lock nodes."""
        return self.leader + "/latch"

    def connection_info(self, component: str) -> str:
        """Where ``component``'s leader publishes its address."""
        return f"{self.leader}/{component}/connection_info"

    @property
    def execution_plans(self) -> str:
        """The parent of the job graph pointers."""
        return self.base + "/execution-plans"

    def job(self, job_id: str) -> str:
        """The nodes of one job."""
        return f"{self.base}/jobs/{job_id}"

    def checkpoint_id_counter(self, job_id: str) -> str:
        """The job's checkpoint id counter."""
        return self.job(job_id) + "/checkpoint_id_counter"

    def checkpoints(self, job_id: str) -> str:
        """The parent of the job's completed checkpoint pointers."""
        return self.job(job_id) + "/checkpoints"


def checkpoint_node_name(checkpoint_id: int) -> str:
    """A checkpoint's node name: the id zero-padded to 19 digits, so names sort as ids (Flink's)."""
    return f"{checkpoint_id:019d}"


def start_zookeeper_client(configuration: Mapping[str, Any]) -> Any:
    """A started ``KazooClient`` for the configured quorum, or :class:`ZooKeeperConnectionError`
    naming ``high-availability.zookeeper.quorum`` and its value when no connection is made within
    ``high-availability.zookeeper.client.connection-timeout``."""
    options = HighAvailabilityOptions
    try:
        from kazoo.client import KazooClient
        from kazoo.retry import KazooRetry
    except ImportError:
        raise IllegalConfigurationError(
            f"'{options.HA_MODE.key()}: zookeeper' needs the kazoo package: pip install 'streamkernel[ha]'") from None
    quorum = str(options.HA_ZOOKEEPER_QUORUM.get(configuration))
    session_s = options.ZOOKEEPER_SESSION_TIMEOUT.get(configuration).to_milliseconds() / 1000
    connect_s = options.ZOOKEEPER_CONNECTION_TIMEOUT.get(configuration).to_milliseconds() / 1000
    wait_s = options.ZOOKEEPER_RETRY_WAIT.get(configuration).to_milliseconds() / 1000
    attempts = options.ZOOKEEPER_MAX_RETRY_ATTEMPTS.get(configuration)
    log = _HeldBackLog()
    client = KazooClient(
        hosts=quorum, timeout=session_s, handler=_bounded_wait_handler(min(session_s, connect_s)),
        connection_retry=KazooRetry(max_tries=-1, delay=min(wait_s, 1.0), max_delay=wait_s),
        command_retry=KazooRetry(max_tries=attempts, delay=wait_s, max_delay=wait_s * 8), logger=log)
    try:
        client.start(timeout=connect_s)
    except Exception as error:  # noqa: BLE001 - kazoo's timeout or a resolver error: one message either way
        try:
            client.stop()
            client.close()
        except Exception:  # noqa: BLE001 - nothing more to release
            pass
        finally:
            log.release(replay=False)  # the error below says it all
        raise ZooKeeperConnectionError(
            f"Could not connect to the ZooKeeper quorum {quorum!r} ('{options.HA_ZOOKEEPER_QUORUM.key()}') within "
            f"{connect_s:g} s ('{options.ZOOKEEPER_CONNECTION_TIMEOUT.key()}'): "
            f"{log.last_problem or f'{type(error).__name__}: {error}'}") from None
    log.release(replay=True)
    return client


#: How kazoo's last warning of a failed start begins; the one before it says what went wrong.
_GAVE_UP = "Failed connecting to Zookeeper"


class _HeldBackLog(logging.LoggerAdapter):
    """The logger one kazoo client logs to (``kazoo.client``'s): while the client makes its first
    connection its records are held back, then :meth:`release` logs them (connected) or drops them
    (the connection failed: one ZooKeeperConnectionError instead, quoting :attr:`last_problem`).
    Afterwards records pass straight through; other kazoo clients are never affected."""

    def __init__(self) -> None:
        super().__init__(logging.getLogger("kazoo.client"), {})
        self._lock = threading.Lock()
        self._held: Optional[list[tuple[int, object, tuple, dict]]] = []  # guarded by _lock; None: released
        #: the last problem kazoo reported while connecting ("Connection dropped: ... Connection refused")
        self.last_problem = ""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        """Hold the record back until :meth:`release`, or log it once released."""
        with self._lock:
            if self._held is not None:
                if level >= logging.WARNING and not str(msg).startswith(_GAVE_UP):
                    self.last_problem = _formatted(msg, args)
                if self.isEnabledFor(level):
                    if kwargs.get("exc_info") is True:  # the exception being handled now, not at replay
                        kwargs["exc_info"] = sys.exc_info()
                    self._held.append((level, msg, args, kwargs))
                return
        super().log(level, msg, *args, **kwargs)

    def release(self, replay: bool) -> None:
        """Stop holding back; ``replay``: log what was held (in order), else drop it."""
        with self._lock:
            held, self._held = self._held or [], None
            if replay:
                for level, msg, args, kwargs in held:
                    self.logger.log(level, msg, *args, **kwargs)


def _formatted(msg: object, args: tuple) -> str:
    try:
        return str(msg) % args if args else str(msg)
    except (TypeError, ValueError):
        return str(msg)


def _bounded_wait_handler(timeout_s: float) -> Any:
    """kazoo's threading handler whose results, waited for without a timeout, wait ``timeout_s`` at
    most and then raise kazoo's ``KazooTimeoutError``. kazoo queues a request while its connection is
    down and its synchronous calls wait for the answer forever; a JobMaster completing a checkpoint
    while ZooKeeper is gone must not hang (the checkpoint fails, the revocation that follows
    suspends the job)."""
    from kazoo.handlers.threading import AsyncResult, SequentialThreadingHandler

    class BoundedAsyncResult(AsyncResult):
        def get(self, block: bool = True, timeout: Optional[float] = None) -> Any:
            return super().get(block, timeout_s if block and timeout is None else timeout)

    class BoundedWaitHandler(SequentialThreadingHandler):
        def async_result(self) -> Any:
            return BoundedAsyncResult(self)

    return BoundedWaitHandler()


def commit_as_leader(client: Any, latch_node: Callable[[], str], build: Callable[[Any], None], what: str) -> None:
    """Run the operations ``build`` adds to a transaction, together with a check that this process's
    latch node (``latch_node()``) still exists: if its session or leadership is gone, nothing is
    written and :class:`LeadershipLostError` says ``what`` was refused. Another failure of an
    operation raises that operation's error (kazoo's ``NodeExistsError``, ``BadVersionError`` ...)."""
    from kazoo.exceptions import NoNodeError, RolledBackError

    node = latch_node()
    transaction = client.transaction()
    transaction.check(node, 0)  # lock nodes are never written: version 0 as long as it exists
    build(transaction)
    results = transaction.commit()
    # A failed transaction reports the failing operation's error and RolledBackError for the others.
    failures = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
    if isinstance(results[0], NoNodeError):
        raise LeadershipLostError(f"Refused to {what}: this process no longer holds the leader latch ({node})")
    if failures:
        raise failures[0]
