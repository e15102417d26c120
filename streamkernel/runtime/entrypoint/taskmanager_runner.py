"""One TaskManager process of a standalone cluster (Flink's TaskManagerRunner).

``python -m streamkernel.runtime.entrypoint.taskmanager_runner --jobmanager HOST:PORT
--taskmanager-id ID --slots S [-D key=value ...]`` is what ``streamkernel taskmanager start``
runs, detached: it connects to the JobManager's RPC listener with the cluster secret (hex, from
the :data:`~streamkernel.runtime.rpc.transport.AUTHKEY_ENV` environment variable, never the
command line), registers its slots (and its log file, ``log.file``, which the REST API
serves) and serves until

* the JobManager tells it to shut down (``cluster stop``): exit code 0;
* SIGTERM (``taskmanager stop``): its tasks end, exit code 0;
* the JobManager is gone (its connection closed: the process died): one line in the log,
  exit code 1.

With high availability (``-D high-availability.type=zookeeper`` and the other HA keys) it takes
no ``--jobmanager`` and no secret from the environment: it reads the cluster's secret from
``high-availability.storageDir`` and follows the leading JobManager through ZooKeeper, staying
alive across leader changes (:mod:`.taskmanager_leader`).

Unlike a ``process`` backend's child it does not watch its parent: it outlives the shell
that started it. Its prints go to its ``.out`` file (``taskmanager.forward-output`` is false
unless set), as a Flink TaskManager's do.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Mapping, Optional, Sequence

from streamkernel.runtime.core.engine_log import configure_process_log
from streamkernel.runtime.entrypoint.cluster_dir import parse_dynamic_properties
from streamkernel.runtime.metrics.reporter_setup import ReporterStartError
from streamkernel.runtime.rpc.transport import AUTHKEY_ENV, ConnectionRefusedByPeerError
from streamkernel.runtime.taskmanager.worker import (
    ENDED_CONNECTION_LOST,
    FORWARD_OUTPUT_KEY,
    LOG_FILE_KEY,
    run_taskmanager,
    taskmanager_arguments,
    use_switch_interval,
)

__all__ = ["main", "EXIT_JOBMANAGER_LOST"]

_LOG = logging.getLogger(__name__)
#: The exit code of a TaskManager whose JobManager is gone.
EXIT_JOBMANAGER_LOST = 1


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    return taskmanager_arguments("python -m streamkernel.runtime.entrypoint.taskmanager_runner",
                                 "Run one TaskManager of a standalone cluster in this process.",
                                 jobmanager_required=False).parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the TaskManager; returns the exit code (1: the JobManager is unreachable or gone; 2: no secret,
    no JobManager address, or a bad high-availability configuration)."""
    from streamkernel.common.options.high_availability import is_zookeeper

    args = _parse(argv)
    secret_hex = os.environ.pop(AUTHKEY_ENV, "")
    configuration = parse_dynamic_properties(args.dynamic)
    configuration.setdefault(FORWARD_OUTPUT_KEY, "false")
    following = not args.jobmanager and is_zookeeper(configuration)
    if not args.jobmanager and not following:
        print("streamkernel taskmanager: --jobmanager HOST:PORT is needed unless -D high-availability.type=zookeeper "
              "(and the other high-availability keys) is given", file=sys.stderr)
        return 2
    if not secret_hex and not following:
        print(f"streamkernel taskmanager: the cluster secret is missing: set ${AUTHKEY_ENV} (hex)", file=sys.stderr)
        return 2
    if configuration.get(LOG_FILE_KEY):
        configure_process_log(configuration[LOG_FILE_KEY])  # everything of this process, at INFO
    logging.getLogger().setLevel(logging.INFO)
    use_switch_interval(configuration)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if following:
        return _follow_leader(args, configuration, bytes.fromhex(secret_hex) if secret_hex else None, stop)
    host, _, port = args.jobmanager.rpartition(":")
    address = (host, int(port))
    _LOG.info("TaskManager %s (pid %d) connecting to the JobManager at %s:%d", args.taskmanager_id, os.getpid(),
              *address)
    try:
        ended = run_taskmanager(address, bytes.fromhex(secret_hex), args.taskmanager_id, args.slots,
                                configuration, stop_event=stop)
    except ConnectionRefusedByPeerError as error:
        _LOG.error("TaskManager %s cannot reach the JobManager at %s:%d: %s", args.taskmanager_id, *address, error)
        print(f"streamkernel taskmanager {args.taskmanager_id}: {error}", file=sys.stderr)
        return 1
    except ReporterStartError as error:  # every port of metrics.reporter.<name>.port taken
        _LOG.error("TaskManager %s cannot start its metric reporter: %s", args.taskmanager_id, error)
        print(f"streamkernel taskmanager {args.taskmanager_id}: {error}", file=sys.stderr)
        return 1
    if ended != ENDED_CONNECTION_LOST:
        _LOG.info("TaskManager %s stopped (%s)", args.taskmanager_id, ended)
        return 0
    _LOG.error("The JobManager at %s:%d is gone (its connection closed); TaskManager %s exits",
               address[0], address[1], args.taskmanager_id)
    return EXIT_JOBMANAGER_LOST


def _follow_leader(args: argparse.Namespace, configuration: Mapping[str, str], secret: Optional[bytes],
                   stop: threading.Event) -> int:
    """The high-availability path: serve whichever JobManager leads until shutdown or SIGTERM."""
    from streamkernel.runtime.entrypoint.taskmanager_leader import serve_following_leader
    from streamkernel.runtime.highavailability import create_ha_services
    from streamkernel.runtime.highavailability.cluster_secret import read_ha_secret

    try:
        services = create_ha_services(configuration)  # checks the HA keys first, naming the wrong one
    except Exception as error:  # noqa: BLE001 - one line for the starting command, the trace in the log
        _LOG.exception("TaskManager %s cannot use the high-availability services", args.taskmanager_id)
        print(f"streamkernel taskmanager {args.taskmanager_id}: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    try:
        if secret is None:
            try:
                secret = read_ha_secret(configuration)
            except Exception as error:  # noqa: BLE001 - SecretError or an unreadable storage directory
                print(f"streamkernel taskmanager {args.taskmanager_id}: {error}", file=sys.stderr)
                return 2
        ended = serve_following_leader(services, secret, args.taskmanager_id, args.slots, configuration, stop)
        _LOG.info("TaskManager %s stopped (%s)", args.taskmanager_id, ended)
        return 0
    finally:
        services.close()

if __name__ == "__main__":  # pragma: no cover - run as a process by `streamkernel taskmanager start`
    sys.exit(main())
