"""The JobManager process of a standalone session cluster (Flink's StandaloneSessionClusterEntrypoint).

``python -m streamkernel.runtime.entrypoint.cluster_entrypoint --dir DIR [--backend process|spark]
[--taskmanagers T] [--slots S] [-D key=value ...]`` is what ``streamkernel cluster start`` /
``streamkernel jobmanager start`` run, detached. It starts a :class:`StandaloneSessionCluster`:
the in-kernel :class:`~streamkernel.runtime.minicluster.MiniCluster` (the same Dispatcher,
ResourceManager, JobMasters and REST endpoint), whose TaskManagers are

* ``process`` (the default): none launched here; TaskManager processes started by
  ``streamkernel taskmanager start`` register by themselves
  (:class:`~streamkernel.runtime.resourcemanager.standalone.StandaloneTaskManagers`);
* ``spark``: ``T`` TaskManagers in Spark tasks of the Spark application this process drives
  (``-D spark.master=...`` and the other ``spark.*`` keys, as the spark backend reads them).

It holds the directory's JobManager lock (``DIR/standalonesession.lock``, handed over by the
starting command with ``--lock-fd``) while it runs: one JobManager per directory.
The cluster secret is read from ``DIR/cluster.secret``; once the REST API serves, the
process writes ``DIR/jobmanager.json`` (pid, REST URL, RPC address) and the secret is in the
user's registry for the REST address (:mod:`~streamkernel.runtime.rest.cluster_secret`). It
runs until SIGTERM (``streamkernel cluster stop``) or ``DELETE /cluster``, then stops the
cluster (its TaskManagers are told to shut down) and removes ``jobmanager.json``. Its log
goes to ``log.file``; stdout and stderr to the ``.out`` file next to it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from typing import Any, Mapping, Optional, Sequence

from streamkernel.runtime.entrypoint.cluster_dir import (
    JOBMANAGER,
    LOG_DIR_KEY,
    LOG_FILE_KEY,
    ClusterDir,
    parse_dynamic_properties,
)
from streamkernel.runtime.core.engine_log import configure_process_log
from streamkernel.runtime.entrypoint.directory_lock import FileLock
from streamkernel.runtime.minicluster.minicluster import MiniCluster

__all__ = ["StandaloneSessionCluster", "main", "STANDALONE_BACKENDS"]

_LOG = logging.getLogger(__name__)

#: Where a standalone cluster's TaskManagers run.
STANDALONE_BACKENDS = ("process", "spark")

class StandaloneSessionCluster(MiniCluster):
    """The MiniCluster of a standalone JobManager process: TaskManagers come from outside (``process``)
    or from Spark (``spark``), and they authenticate with ``secret`` (the cluster directory's)."""

    def __init__(self, secret: bytes, backend: str = "process", taskmanagers: int = 1, slots: int = 1,
                 configuration: Optional[Mapping[str, Any]] = None) -> None:
        if backend not in STANDALONE_BACKENDS:
            raise ValueError(f"--backend {backend!r}: a standalone cluster runs TaskManagers as "
                             f"{' or '.join(STANDALONE_BACKENDS)}")
        # the process backend's size checks apply to what `taskmanager start` adds; none is launched here
        super().__init__(taskmanagers=taskmanagers, slots_per_taskmanager=slots, backend=backend,
                         configuration=configuration, rest=True)
        if backend == "process":
            self.number_of_taskmanagers = 0
        self._secret = secret

    def _create_taskmanager_backend(self) -> Any:
        if self.backend == "process":
            from streamkernel.runtime.resourcemanager.standalone import StandaloneTaskManagers

            taskmanagers = StandaloneTaskManagers(self.configuration, self._secret)
            # with high availability a stopping JobManager leaves its TaskManagers to the next leader
            taskmanagers.shuts_down_taskmanagers = self.ha_services is None and not self._high_availability
            return taskmanagers
        taskmanagers = super()._create_taskmanager_backend()
        taskmanagers.secret = self._secret  # before start(): what the Spark tasks authenticate with
        return taskmanagers

    @property
    def rpc_address(self) -> tuple[str, int]:
        """The (host, port) TaskManagers connect to."""
        host, port = self.taskmanager_backend.address
        return str(host), int(port)


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m streamkernel.runtime.entrypoint.cluster_entrypoint",
                                     description="Run a standalone session cluster's JobManager in this process.")
    parser.add_argument("--dir", required=True, help="the cluster's directory (secret, pid files, logs)")
    parser.add_argument("--backend", default="process", choices=STANDALONE_BACKENDS)
    parser.add_argument("--taskmanagers", type=int, default=1, help="TaskManagers to start (spark backend)")
    parser.add_argument("--slots", type=int, default=1, help="slots per TaskManager")
    parser.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--lock-fd", type=int, default=None,
                        help="a descriptor holding the directory's JobManager lock, handed over by the starting "
                             "command (default: take the lock here)")
    return parser.parse_args(argv)


def _hold_directory_lock(directory: ClusterDir, fd: Optional[int]) -> FileLock:
    """The directory's JobManager lock, held until this process ends: the descriptor the starting command
    handed over (kept from the processes this one spawns), else taken here (refused while another runs)."""
    lock = directory.lock(JOBMANAGER)
    if fd is not None:
        os.set_inheritable(fd, False)
        lock.fd = fd
    elif not lock.try_acquire():
        raise RuntimeError(f"another JobManager runs in {directory.path}: it holds {lock.path}")
    return lock


def _ha_role(cluster: StandaloneSessionCluster, configuration: Mapping[str, str], wait: bool) -> dict[str, Any]:
    """``{"cluster_id", "role": "leader" | "standby", "leader": REST URL}``; ``wait``: until the election
    is decided (this process leads, or another one is known to), at most the ZooKeeper session timeout."""
    from streamkernel.common.options.high_availability import HighAvailabilityOptions

    leadership = cluster.leadership
    if wait:  # until this process leads (its jobs recovered) or another is known; else a standby with no leader yet
        leadership.wait_for_leader(HighAvailabilityOptions.ZOOKEEPER_SESSION_TIMEOUT.get(configuration)
                                   .to_milliseconds() / 1000)
    leader = leadership.leader
    return {"cluster_id": str(HighAvailabilityOptions.HA_CLUSTER_ID.get(configuration)),
            "role": "leader" if cluster.is_leading else "standby",
            "leader": leader.address if leader is not None else None}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the JobManager until SIGTERM or ``DELETE /cluster``; returns the exit code (1: it could not start)."""
    from streamkernel.sigterm import exit_on_sigterm

    args = _parse(argv)
    try:
        configuration = parse_dynamic_properties(args.dynamic)
        directory = ClusterDir(args.dir, configuration)
        _hold_directory_lock(directory, args.lock_fd)  # released when this process ends
        configuration.setdefault(LOG_DIR_KEY, str(directory.log_dir))
        configuration.setdefault(LOG_FILE_KEY, str(directory.log_file(JOBMANAGER, 0)))
        configure_process_log(configuration[LOG_FILE_KEY])  # everything of this process, at INFO
        # keep the restorer: dropping it would close the signal's wakeup socket, whose fd number an RPC
        # connection then reuses, and SIGTERM's wakeup byte would land in that connection's stream
        restore_sigterm = exit_on_sigterm()
        cluster = StandaloneSessionCluster(directory.read_secret(), args.backend, args.taskmanagers, args.slots,
                                           configuration)
        cluster.start(make_current=False)
    except Exception as error:  # noqa: BLE001 - one line for the starting command, the trace in the log
        _LOG.exception("the JobManager could not start")
        print(str(error).splitlines()[0] if str(error) else type(error).__name__, file=sys.stderr, flush=True)
        return 1
    try:
        host, port = cluster.rpc_address
        # /jobmanager/config shows them: `taskmanager start -m REST` finds the RPC listener there
        cluster.configuration["jobmanager.rpc.address"] = host
        cluster.configuration["jobmanager.rpc.port"] = str(port)
        info: dict[str, Any] = {"pid": os.getpid(), "rest_url": cluster.rest_url, "rpc_address": host, "rpc_port": port,
                "backend": cluster.backend, "log_file": configuration[LOG_FILE_KEY]}
        if cluster.leadership is not None:
            info["high_availability"] = _ha_role(cluster, configuration, wait=True)
        directory.write_jobmanager_info(info)
        _LOG.info("standalone session cluster running: REST %s, RPC %s:%s, backend %s", cluster.rest_url, host,
                  port, cluster.backend)
        idle = threading.Event()
        while cluster.is_running:  # DELETE /cluster stops it from a thread of the REST endpoint
            idle.wait(0.5)
            if cluster.leadership is not None and cluster.is_running:  # jobmanager.json tells the current role
                role = _ha_role(cluster, configuration, wait=False)
                if role != info.get("high_availability"):
                    info["high_availability"] = role
                    directory.write_jobmanager_info(info)
        _LOG.info("the cluster was shut down through the REST API")
    finally:
        cluster.stop()
        mine = directory.jobmanager_info()
        if mine is not None and mine.get("pid") == os.getpid():
            directory.remove_jobmanager_info()
        _LOG.info("JobManager stopped")
        if restore_sigterm is not None:
            restore_sigterm()
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a process by `streamkernel cluster start`
    sys.exit(main())
