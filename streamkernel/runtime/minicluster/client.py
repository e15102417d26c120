"""What ``env.execute()``, ``env.execute_async()`` and ``execute_and_collect()`` call: the client.

Flink's client prepares a job and hands it to a JobManager; attached, it then waits for
the result. Here the JobManager is the process's current :class:`MiniCluster` if one was
started, and otherwise a *transient* local cluster sized for the job (one TaskManager with
as many slots as the job needs), started for this job and stopped when the job ends, as
PyFlink's local mode starts a fresh cluster per ``execute()``. ``execute()`` and the end
(or close) of ``execute_and_collect()``'s iterator stop it in the caller's thread, so it is
gone when they return; a transient cluster whose results were not read to the end stops
when its job ends, at the latest when the interpreter exits (:mod:`.exit`).

Waiting is interruptible: a KeyboardInterrupt (interrupting a notebook cell) cancels the
job, waits briefly for it to stop, and is re-raised.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Optional, Union

from streamkernel.common.futures import result_within
from streamkernel.common.job_execution_result import JobExecutionResult
from streamkernel.common.job_status import JobStatus
from streamkernel.common.options import MiniClusterOptions, TaskManagerOptions, validate_configuration
from streamkernel.common.options.rest import rest_explicitly_configured
from streamkernel.graph.execution_graph import fit_slots
from streamkernel.graph.job_graph import JobGraph, build_job_graph
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.runtime.jobmaster.job_status import JobResult
from streamkernel.runtime.minicluster.minicluster import MiniCluster, current_cluster
from streamkernel.runtime.minicluster.limits import check_cluster_size
from streamkernel.runtime.minicluster.taskmanagers import resolve_backend
from streamkernel.runtime.minicluster.job_client import (
    MiniClusterJobClient,
    to_job_execution_result,
)

__all__ = ["execute_stream_graph", "submit_stream_graph", "execute_and_collect", "transient_cluster_for",
           "CANCEL_WAIT_SECONDS"]

#: How long a KeyboardInterrupt or a closed result iterator waits for the cancelled job to stop.
CANCEL_WAIT_SECONDS = 5.0
_POLL_SECONDS = 0.2


def transient_cluster_for(stream_graph: StreamGraph) -> MiniCluster:
    """A (not yet started) local cluster sized for the job.

    One TaskManager (``minicluster.number-of-taskmanagers`` if configured) with the slots
    the job needs with slot sharing (``taskmanager.numberOfTaskSlots`` if configured).
    Raises NotEnoughSlotsError at once when configured sizes cannot fit the job: nothing
    would ever free slots on a cluster made for one job, and IllegalConfigurationError for
    the first declared key whose value does not fit its option.
    """
    return _transient_cluster(stream_graph)[0]


def _transient_cluster(stream_graph: StreamGraph) -> tuple[MiniCluster, JobGraph]:
    """:func:`transient_cluster_for`, and the JobGraph it built to size the cluster: built once
    per submission, it is handed on to the job's JobMaster."""
    conf = {k: str(v) for k, v in stream_graph.configuration.items()}
    validate_configuration(conf)
    job_graph = build_job_graph(stream_graph)
    tm_option, slots_option = MiniClusterOptions.NUM_TASK_MANAGERS, TaskManagerOptions.NUM_TASK_SLOTS
    taskmanagers = tm_option.get(conf)
    slots = slots_option.get(conf, None)  # None: sized to fit the job
    # Configured counts are checked first, naming their keys (not MiniCluster's arguments).
    check_cluster_size(resolve_backend(None, conf), taskmanagers, slots or 1, conf,
                       taskmanagers_from=f"configuration key {tm_option.key()}",
                       slots_from=f"configuration key {slots_option.key()}")
    slots_per_taskmanager = fit_slots(job_graph, taskmanagers, slots)  # raises NotEnoughSlotsError
    from streamkernel.runtime.operators.external_sorter import check_sort_memory

    check_sort_memory(job_graph, conf, slots_per_taskmanager)  # a BATCH sorter's share of its slot
    # as PyFlink's local execution, no Web UI unless the job asks for one (rest.port / rest.bind-port)
    return MiniCluster(taskmanagers, slots_per_taskmanager, configuration=conf,
                       rest=rest_explicitly_configured(conf)), job_graph


def submit_stream_graph(env: Any, stream_graph: StreamGraph) -> MiniClusterJobClient:
    """Submit the job to the current cluster (or a transient one) and return its JobClient at once.

    A transient cluster stops by itself once the job reaches a terminal state (and at the
    latest when the interpreter exits: :mod:`.exit`).
    """
    remote = _remote_client(stream_graph)
    if remote is not None:
        from streamkernel.runtime.rest.remote_execution import submit_remote

        return submit_remote(remote, stream_graph)  # type: ignore[return-value]
    return _submit(stream_graph)[0]


def _remote_client(stream_graph: StreamGraph) -> Any:
    """The REST client when the job goes to a running cluster (``execution.target: remote``), else None."""
    if str(stream_graph.configuration.get("execution.target", "")).strip().lower() != "remote":
        return None  # no import of the REST client for local execution
    from streamkernel.runtime.rest.remote_execution import remote_client_for

    return remote_client_for(stream_graph.configuration)


def _submit(stream_graph: StreamGraph) -> tuple[MiniClusterJobClient, Optional[MiniCluster]]:
    """Submit to the current cluster or a transient one; returns the JobClient and the transient cluster."""
    validate_configuration(stream_graph.configuration)
    cluster = current_cluster()
    if cluster is not None:
        return cluster.submit(stream_graph), None
    cluster, job_graph = _transient_cluster(stream_graph)
    cluster.start(make_current=False)
    try:
        client = cluster.submit(stream_graph, job_graph=job_graph)
    except BaseException:
        cluster.stop()
        raise
    _stop_when_terminal(cluster, client)
    return client, cluster


def _stop_when_terminal(cluster: MiniCluster, client: MiniClusterJobClient) -> None:
    """Stop a transient cluster once its job ended (from a short-lived thread: the JobMaster's
    own thread cannot join itself). Whoever waits for the job may stop it sooner (stop is
    idempotent); a stop still under way at interpreter exit is waited for there."""
    def stop_later(_: Any) -> None:
        threading.Thread(target=cluster.stop, name="streamkernel transient cluster stop", daemon=True).start()

    cluster.dispatcher.job_result_future(client.get_job_id()).add_done_callback(stop_later)


def _wait_for_result(cluster: MiniCluster, client: MiniClusterJobClient) -> JobResult:
    """Wait for the job's end; a KeyboardInterrupt cancels the job and is re-raised."""
    future = cluster.dispatcher.job_result_future(client.get_job_id())
    try:
        while True:
            try:
                return result_within(future, _POLL_SECONDS)
            except TimeoutError:
                continue
    except KeyboardInterrupt:
        client.cancel()
        try:
            result_within(future, CANCEL_WAIT_SECONDS)
        except BaseException:  # noqa: BLE001 - a second interrupt, or a slow task: give up waiting
            pass
        raise


def execute_stream_graph(env: Any, stream_graph: StreamGraph) -> JobExecutionResult:
    """Run the job to its end and return its JobExecutionResult (``env.execute()``).

    Raises :class:`~streamkernel.errors.JobExecutionError` if the job FAILED (message naming
    the failing subtask and cause; ``raise ... from`` the cause) or was CANCELED, and
    IllegalConfigurationError, before anything starts, for a declared key whose value does
    not fit its option (:mod:`streamkernel.common.options`).
    """
    validate_configuration(stream_graph.configuration)
    remote = _remote_client(stream_graph)
    if remote is not None:
        from streamkernel.runtime.rest.remote_execution import execute_remote

        return execute_remote(remote, stream_graph)
    cluster = current_cluster()
    transient = cluster is None
    job_graph: Optional[JobGraph] = None  # built by the JobMaster unless sizing a transient cluster did
    if cluster is None:
        cluster, job_graph = _transient_cluster(stream_graph)
        cluster.start(make_current=False)
    try:
        client = cluster.submit(stream_graph, job_graph=job_graph)
        result = _wait_for_result(cluster, client)
    finally:
        if transient:
            cluster.stop()
    return to_job_execution_result(result)


def execute_and_collect(env: Any, data_stream: Any, job_execution_name: Optional[str] = None,
                        limit: Optional[int] = None) -> Union[Any, list]:
    """Run the job with a collect sink on ``data_stream``; an iterator over its records.

    Returns a :class:`~streamkernel.datastream.closeable_iterator.CloseableIterator` that
    yields records while the job runs, ends when the job finished and raises
    JobExecutionError if it failed; closing it cancels a still running job. With ``limit``,
    returns a list of at most ``limit`` records and cancels the rest of the job (PyFlink).
    A transient cluster is stopped before the iterator's last ``next()`` (or ``close()``)
    returns, so nothing of it is left once the results were read. Records come out as
    PyFlink's collect gives them (``typeinfo.collected``: FLOAT via Java's text).
    """
    from streamkernel.common.typeinfo.collected import collect_converter
    from streamkernel.datastream.closeable_iterator import CloseableIterator
    from streamkernel.datastream.connectors.collect import CollectSink

    sink = CollectSink()
    data_stream.sink_to(sink).name("Collect Sink").set_parallelism(1)  # one collector, as Flink's CollectSinkOperator
    stream_graph = env.get_stream_graph(job_execution_name, clear_transformations=True)
    remote = _remote_client(stream_graph)
    if remote is not None:  # the results come back from the cluster's collect sink coordinator
        from streamkernel.runtime.rest.remote_execution import collect_remote

        remote_results = collect_remote(remote, stream_graph, sink.buffer_id, collect_converter(data_stream.get_type()))
        return remote_results if limit is None else _first(remote_results, limit)
    client, transient = _submit(stream_graph)
    buffer = sink.buffer  # ended with the job by MiniCluster.submit (watch_collect_buffers)
    dispatcher = client._dispatcher  # the cluster the job runs on (current or transient)
    closed = threading.Event()

    def stop_transient(only_when_ended: bool = False) -> None:
        # here, in the caller's thread: nothing of the cluster is left once iteration ended
        if transient is not None and not (only_when_ended and not result_future.done()):
            transient.stop()

    def close() -> None:
        closed.set()
        buffer.discard()
        if not client.get_job_status().result().is_globally_terminal_state():
            try:
                result_within(client.cancel(), CANCEL_WAIT_SECONDS)
            except TimeoutError:
                pass
        stop_transient()

    result_future = dispatcher.job_result_future(client.get_job_id())

    def batches() -> Any:
        # Stops a transient cluster when the records end or fail and the job ended (another
        # branch of it may run on), not when the generator is merely closed or collected
        # (GeneratorExit; the garbage collector's thread is arbitrary).
        ended = False
        try:
            yield from job_batches()
            ended = True
        except Exception:
            ended = True
            raise
        finally:
            if ended:
                stop_transient(only_when_ended=True)

    convert = collect_converter(data_stream.get_type())

    def job_batches() -> Any:
        try:
            if convert is None:
                yield from buffer.batches()
            else:
                for batch in buffer.batches():
                    yield list(map(convert, batch))
        except Exception:
            if not closed.is_set():
                raise  # the JobExecutionError set by on_status, its cause chained
            return
        # Every sink subtask finished: the job ends in a moment (unless another branch of it
        # runs on); wait briefly so that a failure elsewhere in the job still surfaces here.
        try:
            result = result_within(result_future, CANCEL_WAIT_SECONDS)
        except TimeoutError:
            return
        if result.status is JobStatus.FAILED:
            to_job_execution_result(result)  # raises JobExecutionError from the cause

    iterator = CloseableIterator(close=close, batches=batches())
    return iterator if limit is None else _first(iterator, limit)


def _first(iterator: Any, limit: int) -> list:
    """``execute_and_collect(limit=N)``: the first ``limit`` records, then the iterator closed (the job cancelled)."""
    try:
        return list(itertools.islice(iterator, limit))
    finally:
        iterator.close()

