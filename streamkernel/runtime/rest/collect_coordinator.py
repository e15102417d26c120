"""The JobManager's side of a remote ``execute_and_collect()``: Flink's CollectSinkOperatorCoordinator.

A job submitted through the REST API carries its collect sink pickled as a token: the
program that iterates over the results runs elsewhere (``streamkernel run -m``, a notebook
with ``execution.target: remote``). At submission the cluster gives each such sink a
:class:`CollectSinkCoordinator` (:func:`install_collect_coordinators`): the sink subtasks
write into it (in this process, or from a TaskManager process through
:class:`~streamkernel.runtime.taskmanager.driver_services.DriverServices`), and the client
fetches the results in batches with ``POST /jobs/:jobid/coordinators/:operatorid``
(:mod:`.handlers.coordination`), Flink's CollectCoordinationRequest/Response semantics:

* every result has an offset (its position in the sink's output). A request carries the
  coordinator's ``version`` and the client's ``offset``: the number of results it has
  received. That acknowledges (and drops) every result before ``offset`` and answers the
  results from ``offset`` on. A response lost in transit is fetched again with the same
  offset and gives the same results: none is skipped or delivered twice;
* results are held only until acknowledged, at most ``capacity`` of them: a full
  coordinator blocks the sink subtasks (backpressure) instead of growing;
* a client that went away (no request for ``collect-sink.client-timeout``) does not keep
  the job from finishing: blocked writers are released and what comes is dropped; the
  coordinator of an ended job is forgotten after that time, or at once when the client
  releases it (:meth:`CollectSinkCoordinator.release`);
* with checkpointing the sink writer hands results over only when their checkpoint
  completed, each transaction once (:mod:`streamkernel.runtime.sinks.collect`): a restarted
  job never shows the client a result twice.

The operator id the client names is the sink's buffer id (32 hex digits, as Flink's OperatorID):
the client created the sink, so it knows it without asking.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from typing import Any, Optional

from streamkernel.common.options import RestOptions

__all__ = ["CLIENT_TIMEOUT", "CollectSinkCoordinator", "CoordinationError", "install_collect_coordinators",
           "watch_collect_coordinators", "coordinator_for", "release_coordinators"]

#: How long results wait for a client that stopped fetching before they are dropped (streamkernel's key).
CLIENT_TIMEOUT = RestOptions.COLLECT_CLIENT_TIMEOUT

_LOCK = threading.Lock()  # guards _COORDINATORS
_COORDINATORS: dict[tuple[str, str], "CollectSinkCoordinator"] = {}


class CoordinationError(Exception):
    """A coordination request the coordinator refuses (answered 400 with the message)."""


class CollectSinkCoordinator:
    """The results of one collect sink of one job, held until the client acknowledged them.

    Writer methods are CollectBuffer's (``expect_writers``, ``put_batch``,
    ``put_transaction``, ``writer_finished``); the job's status ends it (:meth:`close`,
    :meth:`fail`); the client reads with :meth:`fetch` and lets go with :meth:`release`.
    """

    def __init__(self, operator_id: str, capacity: int, client_timeout_s: float) -> None:
        import uuid

        self.operator_id = operator_id
        self.job_id = ""  # set once the dispatcher accepted the job
        self.version = uuid.uuid4().hex  # names this coordinator: a request for another one is refused
        self.capacity = max(1, int(capacity))
        self.client_timeout_s = client_timeout_s
        # Guarded by _cond: _results holds the results from _offset on, unacknowledged;
        # _ended / _failure / _gone, once set, stay set.
        self._cond = threading.Condition()
        self._results: collections.deque = collections.deque()
        self._offset = 0
        self._transactions: set[str] = set()
        self._expected_writers: Optional[int] = None
        self._finished_writers: set[int] = set()
        self._ended = False
        self._failure: Optional[str] = None
        self._gone = False
        self._last_request = time.monotonic()

    # ------------------------------------------------------------------ writers
    def expect_writers(self, parallelism: int) -> None:
        """How many sink subtasks write (first call wins)."""
        with self._cond:
            if self._expected_writers is None:
                self._expected_writers = parallelism

    def put_batch(self, values: list, timeout: Optional[float] = None) -> bool:
        """Hold a batch for the client, blocking while ``capacity`` results wait (backpressure).

        False if ``timeout`` s passed while full; True once taken, or dropped (ended, client gone)."""
        return self._put(values, timeout, None)

    def put_transaction(self, transaction_id: str, values: list, timeout: Optional[float] = None) -> bool:
        """A committed transaction's results, unless ``transaction_id`` was taken before (a restarted
        job commits its restored transactions again); blocks like :meth:`put_batch`."""
        return self._put(values, timeout, transaction_id)

    def _put(self, values: list, timeout: Optional[float], transaction_id: Optional[str]) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            if transaction_id is not None and transaction_id in self._transactions:
                return True
            while self._results and len(self._results) + len(values) > self.capacity and not self._dropping():
                waited = self._client_deadline() - time.monotonic()
                if deadline is not None:
                    if deadline <= time.monotonic():
                        return False
                    waited = min(waited, deadline - time.monotonic())
                self._cond.wait(max(waited, 0.0))
                if time.monotonic() >= self._client_deadline():
                    self._gone = True  # nobody fetched for client_timeout_s: let the job go on
                    self._results.clear()
                    self._cond.notify_all()
            if self._dropping():
                return True
            self._results.extend(values)
            if transaction_id is not None:
                self._transactions.add(transaction_id)
            self._cond.notify_all()
        return True

    def _dropping(self) -> bool:
        # the client went away, or the job failed: late writes are dropped (the results held stay)
        return self._gone or self._failure is not None

    def _client_deadline(self) -> float:
        return self._last_request + self.client_timeout_s

    def writer_finished(self, subtask_index: int) -> None:
        """Sink subtask ``subtask_index`` wrote everything; after the last one no more results come."""
        with self._cond:
            self._finished_writers.add(subtask_index)
            if len(self._finished_writers) >= (self._expected_writers or 1):
                self._ended = True
                self._cond.notify_all()

    # --------------------------------------------------------------------- the job
    def close(self) -> None:
        """The job FINISHED: no more results come."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def fail(self, message: str) -> None:
        """The job failed or was cancelled: the results held are still fetched, nothing more comes."""
        with self._cond:
            if self._failure is None:
                self._failure = message
            self._ended = True
            self._cond.notify_all()

    @property
    def ended(self) -> bool:
        """True once no more results will come."""
        return self._ended

    def idle_for(self) -> float:
        """Seconds since the client's last request."""
        return time.monotonic() - self._last_request

    # --------------------------------------------------------------------- client
    def fetch(self, version: str, offset: int, max_results: int, wait_s: float = 0.0) -> dict[str, Any]:
        """Acknowledge the results before ``offset``, answer those from ``offset`` on (at most
        ``max_results``), waiting up to ``wait_s`` s for some while there are none.

        ``version``: "" on the first request, then the one answered. The answer:
        ``{"version", "offset", "results", "end", "failure"}``; ``end`` is true when the
        results answered are the last ones. CoordinationError for another coordinator's
        version or an offset outside what was held.
        """
        with self._cond:
            self._last_request = time.monotonic()
            if version and version != self.version:
                raise CoordinationError(f"version {version[:40]!r} is not the collect sink's ({self.version}): the "
                                        f"results were fetched from another coordinator")
            if self._gone:
                raise CoordinationError(f"the results of operator {self.operator_id} were dropped: no request came "
                                        f"for {self.client_timeout_s:g} s ({CLIENT_TIMEOUT.key()}), or the client "
                                        f"released them")
            held_until = self._offset + len(self._results)
            if not self._offset <= offset <= held_until:
                raise CoordinationError(f"offset {offset} is outside the results held ({self._offset} to "
                                        f"{held_until}): results before {self._offset} were acknowledged already")
            for _ in range(offset - self._offset):
                self._results.popleft()
            if offset > self._offset:
                self._offset = offset
                self._cond.notify_all()  # room for the writers
            deadline = time.monotonic() + max(0.0, wait_s)
            while not self._results and not self._ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            self._last_request = time.monotonic()
            results = list(itertools.islice(self._results, 0, max(1, max_results)))
            end = self._ended and len(results) == len(self._results)
            return {"version": self.version, "offset": offset, "results": results, "end": end,
                    "failure": self._failure if end else None}

    def release(self) -> None:
        """The client is done (read to the end, or closed its iterator): drop everything, never block again."""
        with self._cond:
            self._gone = True
            self._results.clear()
            self._cond.notify_all()
        with _LOCK:
            _COORDINATORS.pop((self.job_id, self.operator_id), None)

    def __repr__(self) -> str:
        return (f"CollectSinkCoordinator({self.operator_id[:8]} of job {self.job_id}, {len(self._results)}/"
                f"{self.capacity} held from offset {self._offset}{', ended' if self._ended else ''})")


def coordinator_for(job_id: str, operator_id: str) -> Optional[CollectSinkCoordinator]:
    """The coordinator of operator ``operator_id`` of job ``job_id`` in this process, or None."""
    with _LOCK:
        return _COORDINATORS.get((job_id.lower(), operator_id.lower()))


def install_collect_coordinators(stream_graph: Any, configuration: Any) -> list[CollectSinkCoordinator]:
    """Give every collect sink of a job submitted from elsewhere a coordinator (before it is submitted).

    The sink is pointed at the coordinator under a token of its own (so a program of this
    process with a buffer of the same id never gets the job's results); the coordinator keeps
    the sink's id as its operator id. Returns the coordinators (none: no collect sink).
    """
    from streamkernel.datastream.connectors.collect import CollectSink, register_collect_buffer

    timeout = CLIENT_TIMEOUT.get({**dict(configuration), **{k: str(v) for k, v in
                                                             stream_graph.configuration.items()}})
    coordinators = []
    for node in stream_graph.sinks:
        sink = getattr(node.operator, "sink", None)
        if not isinstance(sink, CollectSink):
            continue
        coordinator = CollectSinkCoordinator(str(sink.buffer_id).lower(), sink.capacity,
                                             timeout.to_milliseconds() / 1000.0)
        sink.buffer_id = register_collect_buffer(coordinator)  # held strongly by _COORDINATORS
        sink._buffer = coordinator  # type: ignore[assignment]
        coordinators.append(coordinator)
    return coordinators


def watch_collect_coordinators(dispatcher: Any, job_id: str, coordinators: list[CollectSinkCoordinator]) -> None:
    """Register the job's coordinators for the REST API and end them with the job; an ended job's
    coordinator is forgotten once its client let go or stayed away ``client_timeout_s``."""
    from streamkernel.common.job_status import JobStatus

    for coordinator in coordinators:
        coordinator.job_id = str(job_id).lower()
        with _LOCK:
            _COORDINATORS[(coordinator.job_id, coordinator.operator_id)] = coordinator

    def on_status(details: Any) -> None:  # the JobMaster's thread: unblock the writers of an ending job
        if details.status in (JobStatus.FAILING, JobStatus.FAILED, JobStatus.CANCELLING, JobStatus.CANCELED):
            cause = details.failure_cause
            what = "cancelled" if details.status in (JobStatus.CANCELLING, JobStatus.CANCELED) else \
                f"failed: {type(cause).__name__}: {cause}" if cause is not None else "failed"
            for coordinator in coordinators:
                coordinator.fail(f"job {job_id} {what}")
        elif details.status is JobStatus.FINISHED:
            for coordinator in coordinators:
                coordinator.close()
        if details.status.is_globally_terminal_state():
            for coordinator in coordinators:
                _forget_when_idle(coordinator)

    dispatcher.add_job_status_listener(job_id, on_status)


def _forget_when_idle(coordinator: CollectSinkCoordinator) -> None:
    """Forget an ended job's coordinator once its client stayed away ``client_timeout_s`` (checked again
    as long as it keeps fetching)."""
    def check() -> None:
        if coordinator.idle_for() >= coordinator.client_timeout_s:
            coordinator.release()
        else:
            _forget_when_idle(coordinator)

    timer = threading.Timer(max(coordinator.client_timeout_s - coordinator.idle_for(), 0.05), check)
    timer.daemon = True
    timer.name = f"streamkernel collect coordinator expiry {coordinator.operator_id[:8]}"
    timer.start()


def release_coordinators(coordinators: list[CollectSinkCoordinator]) -> None:
    """Let go of coordinators whose job was never accepted."""
    for coordinator in coordinators:
        coordinator.release()
