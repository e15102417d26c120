"""Application mode on Spark, the driver's side: the program spark-submit runs (:mod:`.spark_application`).

``spark-submit ... spark_application_driver.py --taskmanagers T --slots S --configuration JSON
SCRIPT -- ARGS`` in the Spark driver:

1. takes the SparkContext spark-submit configured (master, ``--conf`` keys): the only one of
   the process, which the ``spark`` backend reuses (it never makes a second one);
2. starts the application's cluster: a MiniCluster with backend ``spark`` (the JobManager
   here, T TaskManagers of S slots as Spark tasks) serving Flink's REST API, and prints
   ``streamkernel application driver: pid N, JobManager REST API at URL ...`` on stderr;
3. runs SCRIPT as ``__main__`` with ARGS, the configuration as every environment's context
   configuration (so ``get_execution_environment()`` needs no change): its ``execute()``
   calls go to that cluster;
4. stops the cluster, then the Spark application, and exits with the script's status (1
   when it raised: the traceback is printed; 143 on SIGTERM, after the cluster stopped).

If spark-submit's JVM disappears (killed), the JVM leaves this process running: a watchdog
notices that the parent changed and stops the driver as SIGTERM would.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from typing import Any, Optional, Sequence

__all__ = ["main"]

#: How often the watchdog checks that spark-submit's JVM (the parent) still runs.
ORPHAN_CHECK_S = 0.5


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark_application_driver.py")
    parser.add_argument("--taskmanagers", type=int, required=True)
    parser.add_argument("--slots", type=int, required=True)
    parser.add_argument("--configuration", required=True, help="the context configuration (a JSON object)")
    parser.add_argument("script")
    parser.add_argument("arguments", nargs=argparse.REMAINDER)
    return parser


def _stop_when_orphaned() -> None:
    """SIGTERM to this process once its parent (spark-submit's JVM) is gone."""
    parent = os.getppid()
    stopped = threading.Event()

    def watch() -> None:
        while not stopped.wait(ORPHAN_CHECK_S):
            if os.getppid() != parent:
                # the output went through the JVM: writing to it now fails (BrokenPipeError), so it goes nowhere
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                os.close(devnull)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="spark-submit watchdog", daemon=True).start()


def _start_cluster(configuration: dict[str, str], taskmanagers: int, slots: int) -> tuple[Any, Any]:
    from pyspark.sql import SparkSession

    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    session = SparkSession.builder.getOrCreate()  # spark-submit's configuration: master, --conf keys
    cluster = MiniCluster(taskmanagers, slots, backend="spark", configuration=configuration, spark_session=session,
                          rest=True)
    try:
        cluster.start()
    except BaseException:
        session.stop()
        raise
    context = session.sparkContext
    print(f"streamkernel application driver: pid {os.getpid()}, JobManager REST API at {cluster.rest_url}, "
          f"Spark application {context.applicationId} on {context.master}, {taskmanagers} TaskManager(s) x "
          f"{slots} slot(s)", file=sys.stderr, flush=True)
    return session, cluster


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Start the application's cluster, run the script, stop everything; returns the exit status."""
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # spark-submit put this package's directory first: its modules are not top-level ones
    from streamkernel.sigterm import exit_on_sigterm

    args = _parser().parse_args(argv)
    arguments = args.arguments[1:] if args.arguments[:1] == ["--"] else args.arguments
    configuration = {str(k): str(v) for k, v in json.loads(args.configuration).items()}
    restore = exit_on_sigterm()
    _stop_when_orphaned()
    session = cluster = None
    try:
        session, cluster = _start_cluster(configuration, args.taskmanagers, args.slots)
        from streamkernel.run_command import _run_script

        return _run_script(argparse.Namespace(script=args.script, arguments=arguments), configuration)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # noqa: BLE001 - the cluster did not start: shown as Python shows it
        traceback.print_exc()
        return 1
    finally:
        if cluster is not None:
            cluster.stop()
        if session is not None:
            session.stop()
        if restore is not None:
            restore()


if __name__ == "__main__":
    sys.exit(main())
