"""``streamkernel run job.py [options] [-- program arguments]``: run a job script from the shell, as ``flink run`` does.

The script is a PyFlink-style program (``env = StreamExecutionEnvironment.get_execution_environment()
... env.execute()``). It runs as ``__main__`` in this process with ``sys.argv = [script,
*arguments]``, and the options reach every environment it creates through the context
configuration (:data:`CONTEXT_CONFIGURATION_ENV`, read by ``StreamExecutionEnvironment``),
exactly as ``flink run`` hands its options to the program's context environment:

* ``-p N`` / ``--parallelism N``: ``parallelism.default`` (the program's own
  ``set_parallelism`` still wins, as in Flink);
* ``-D key=value``: any configuration key (repeatable), e.g. ``-D restart-strategy.type=none``;
* ``--backend local|process|spark``: where TaskManagers run (``streamkernel.backend``);
* ``--taskmanagers T --slots S``: start one cluster of that shape for the whole script (every
  ``execute()`` submits to it; stopped when the script ends) instead of a transient cluster
  per job;
* ``--detached`` / ``-d``: start the same command in a background process and return at
  once, printing its pid and the log file its output goes to (``--log FILE``).
* ``-m HOST:PORT`` / ``--jobmanager HOST:PORT``: submit every job of the script to the running
  cluster whose REST API is there, as ``flink run -m`` (:mod:`streamkernel.runtime.rest.remote_execution`):
  the script builds its jobs here, the cluster runs them. ``execute()`` follows the job to its
  end (Ctrl-C leaves it running); with ``--detached`` it returns once the job is submitted,
  printing ``Job has been submitted with JobID <id>``. Submission is signed with the cluster's
  secret: ``--secret-file FILE``, else ``$STREAMKERNEL_CLUSTER_SECRET`` (hex), else the file the
  cluster wrote for its address under ``$STREAMKERNEL_HOME`` (:mod:`streamkernel.runtime.rest.cluster_secret`).
* ``-D high-availability.type=zookeeper -D ...quorum -D ...cluster-id -D ...storageDir`` (and no
  ``--taskmanagers``/``--backend``), or ``-m zookeeper://HOST:PORT[,...]/CLUSTER-ID``: submit to the
  highly available cluster's current leader, found through ZooKeeper (as ``flink run`` does with HA
  configured), then exactly as ``-m``; signed with ``--secret-file``, else the secret in
  ``high-availability.storageDir``, else the one registered for the leader's address.
* ``--target spark-application [--master URL]``: application mode on Spark, as ``flink
  run-application -t ...``: Spark's ``spark-submit`` runs the script's main() in the Spark
  driver, with the JobManager there and the TaskManagers (``--taskmanagers``, default 1;
  ``--slots``, default ``-p``, else this machine's cores) as Spark tasks; without ``-p`` the
  default parallelism is the cluster's slots. The cluster lives and dies with
  the application (:mod:`streamkernel.runtime.deployment.spark_application`). ``--master``:
  ``spark://HOST:PORT``, ``local[N]``, ... (default: ``spark.master``, else a local master sized
  for the TaskManagers). ``--detached`` returns once the driver's cluster runs, printing the
  driver's pid and log file.

Exit status: 0 when the script ended normally (or ``sys.exit(0)``), the script's
``sys.exit`` code, 1 when it raised (the traceback is printed), 2 for bad options, 143 when
stopped by SIGTERM (``kill PID``; its clusters are stopped first, so nothing of them remains).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import subprocess
import sys
import traceback
from typing import Any, Optional, Sequence

__all__ = ["run_parser", "main", "run", "CONTEXT_CONFIGURATION_ENV"]

from streamkernel.arguments import positive_int
from streamkernel.sigterm import exit_on_sigterm
from streamkernel.datastream.env_settings import CONTEXT_CONFIGURATION_ENV, context_configuration
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError, StreamKernelError


def run_parser() -> argparse.ArgumentParser:
    """The parser of ``streamkernel run``."""
    parser = argparse.ArgumentParser(
        prog="streamkernel run", description=__doc__.split("\n\n")[0],
        usage="streamkernel run [OPTIONS] SCRIPT [OPTIONS] [-- SCRIPT ARGUMENTS]",
        epilog="Options may come before or after the script; arguments the options do not know, and "
               "everything after --, go to the script.")
    parser.add_argument("script", help="the job script (.py)")
    parser.add_argument("-p", "--parallelism", type=positive_int, default=None,
                        help="default parallelism of the script's jobs (parallelism.default)")
    parser.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration key for the script's jobs (repeatable)")
    parser.add_argument("--backend", "-b", choices=("local", "process", "spark"), default=None,
                        help="where TaskManagers run (default: $STREAMKERNEL_BACKEND, else local)")
    parser.add_argument("--taskmanagers", type=positive_int, default=None,
                        help="start one cluster with this many TaskManagers for the whole script")
    parser.add_argument("--slots", type=positive_int, default=None, help="slots per TaskManager of that cluster")
    parser.add_argument("--detached", "-d", action="store_true", help="run in a background process and return at once")
    parser.add_argument("--log", default=None, help="with --detached: the file for the script's output")
    parser.add_argument("-m", "--jobmanager", default=None, metavar="HOST:PORT",
                        help="submit the jobs to the running cluster whose REST API is at HOST:PORT (as flink run "
                             "-m), or to the leader of the HA cluster zookeeper://HOST:PORT[,...]/CLUSTER-ID")
    parser.add_argument("--secret-file", default=None, metavar="FILE",
                        help="with -m: the file holding the cluster's secret (hex, readable by you only)")
    parser.add_argument("-t", "--target", default=None, metavar="TARGET",
                        help="where the script's main() and its cluster run: local (this process, the default) or "
                             "spark-application (the driver of a Spark application, through spark-submit)")
    parser.add_argument("--master", default=None, metavar="URL",
                        help="with --target spark-application: the Spark master (spark://HOST:PORT, local[N], ...)")
    return parser


def main(argv: Sequence[str]) -> int:
    """``streamkernel run ARGV``: parse, then run the script (or start it detached)."""
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, unknown = run_parser().parse_known_args(argv[:cut])
    args.arguments = unknown + argv[cut + 1:]
    return run(args, argv)


def _context_configuration(args: argparse.Namespace) -> dict[str, str]:
    conf = context_configuration()  # an outer `streamkernel run` (or the user) may have set some
    for entry in args.dynamic:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"-D {entry!r}: expected KEY=VALUE")
        conf[key.strip()] = value.strip()
    if args.parallelism is not None:
        conf["parallelism.default"] = str(args.parallelism)
    if args.backend is not None:
        conf["streamkernel.backend"] = args.backend
    return conf


def run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Carry out parsed ``streamkernel run`` arguments (``argv``: the command's own, for --detached)."""
    if not os.path.isfile(args.script):
        print(f"streamkernel run: no such script: {args.script}", file=sys.stderr)
        return 2
    if args.slots is not None and args.taskmanagers is None:
        args.taskmanagers = 1
    try:
        conf = _context_configuration(args)
    except (ValueError, IllegalConfigurationError) as error:
        print(f"streamkernel run: {error}", file=sys.stderr)
        return 2
    target_error = _check_target(args)
    if target_error is not None:
        print(f"streamkernel run: {target_error}", file=sys.stderr)
        return 2
    if args.target == "spark-application":
        return _run_spark_application(args, conf)
    if args.jobmanager is not None or _submits_to_ha_leader(args, conf):
        return _run_remote(args, conf)
    if args.secret_file is not None:
        print("streamkernel run: --secret-file needs -m HOST:PORT (the cluster to submit to) or the "
              "high-availability keys", file=sys.stderr)
        return 2
    cluster = None
    if args.taskmanagers is not None:
        from streamkernel.runtime.minicluster.minicluster import MiniCluster

        try:  # sizes are checked against the backend before anything starts (also before --detached)
            cluster = MiniCluster(args.taskmanagers, args.slots, backend=args.backend, configuration=conf)
        except (InvalidProgramError, IllegalConfigurationError) as error:
            print(f"streamkernel run: {error}", file=sys.stderr)
            return 2
    if args.detached:
        return _detach(args, argv)
    if cluster is not None:
        cluster.start()
        if cluster.rest_url is not None:
            print(f"streamkernel run: Flink's REST API and Web UI at {cluster.rest_url}", file=sys.stderr)
    try:
        return _run_script(args, conf)
    finally:
        if cluster is not None:
            cluster.stop()


def _check_target(args: argparse.Namespace) -> Optional[str]:
    """What is wrong with ``--target`` / ``--master`` and the options they exclude, or None."""
    from streamkernel.runtime.deployment.spark_application import SPARK_APPLICATION_TARGET, TARGETS

    if args.target is not None and args.target not in TARGETS:
        return f"unknown --target {args.target!r} (known: {', '.join(TARGETS)})"
    if args.target != SPARK_APPLICATION_TARGET:
        if args.master is not None:
            return f"--master {args.master} needs --target {SPARK_APPLICATION_TARGET} (the Spark master to submit to)"
        return None
    if args.jobmanager is not None:
        return f"--target {SPARK_APPLICATION_TARGET} starts a cluster for the application; -m submits to a running " \
               f"one (use one or the other)"
    if args.backend not in (None, "spark"):
        return f"--target {SPARK_APPLICATION_TARGET} runs TaskManagers as Spark tasks; --backend {args.backend} " \
               f"does not fit"
    if args.master is not None and not args.master.strip():
        return "--master: empty Spark master URL"
    return None


def _run_spark_application(args: argparse.Namespace, conf: dict[str, str]) -> int:
    """``--target spark-application``: hand the script to spark-submit (attached or detached)."""
    from streamkernel.runtime.deployment.spark_application import (SparkApplication, SparkApplicationError,
                                                                    run_attached, run_detached)

    conf["streamkernel.backend"] = "spark"
    taskmanagers = args.taskmanagers or 1
    try:
        parallelism = int(conf.get("parallelism.default", "0"))
    except ValueError:
        print(f"streamkernel run: configuration key parallelism.default: expected a positive integer, got "
              f"{conf['parallelism.default']!r}", file=sys.stderr)
        return 2
    slots = args.slots or parallelism or os.cpu_count() or 1
    conf.setdefault("parallelism.default", str(taskmanagers * slots))  # a job of the default parallelism fits
    try:
        application = SparkApplication(args.script, list(args.arguments), conf, taskmanagers=taskmanagers,
                                       slots=slots, master=args.master)
        from streamkernel.runtime.minicluster.minicluster import MiniCluster

        # the sizes against the master (local[N] hosts N TaskManagers) and the cluster's keys, before spark-submit
        MiniCluster(taskmanagers, slots, backend="spark", configuration=conf, spark_master=application.master)
    except (SparkApplicationError, IllegalConfigurationError, InvalidProgramError) as error:
        print(f"streamkernel run: {error}", file=sys.stderr)
        return 2
    if args.detached:
        log = args.log or f"{os.path.splitext(os.path.basename(args.script))[0]}.{os.getpid()}.log"
        return run_detached(application, log)
    return run_attached(application)


def _run_remote(args: argparse.Namespace, conf: dict[str, str]) -> int:
    """``-m HOST:PORT``: check the address, the cluster and its secret before the script runs, then run
    the script with every environment submitting to that cluster."""
    from streamkernel.runtime.rest.client import (ClusterUnreachableError, RestClientError, RestClusterClient,
                                                  parse_address)
    from streamkernel.runtime.rest.cluster_secret import SECRET_ENV, SECRET_FILE_ENV, SecretError

    if args.taskmanagers is not None or args.backend is not None:
        print("streamkernel run: -m submits to a running cluster; --taskmanagers, --slots and --backend start one "
              "(use one or the other)", file=sys.stderr)
        return 2
    from streamkernel.runtime.highavailability.leader_follower import NoLeaderError
    from streamkernel.runtime.highavailability.zookeeper_url import is_zookeeper_url

    ha_secret = None
    try:
        if args.jobmanager is None or is_zookeeper_url(args.jobmanager):
            client, ha_secret = _ha_leader_client(args, conf)
        else:
            host, port = parse_address(args.jobmanager, "-m")
            client = RestClusterClient(host, port, secret_file=args.secret_file)
    except (ValueError, IllegalConfigurationError) as error:
        print(f"streamkernel run: {error}", file=sys.stderr)
        return 2
    except (SecretError, StreamKernelError) as error:  # no secret, ZooKeeper unreachable, no leader
        print(f"streamkernel run: {error}", file=sys.stderr)
        return 1
    host, port = client.host, client.port
    try:
        client.secret()  # no secret: say where we looked, before the script builds anything
        client.check_reachable()
    except (SecretError, ClusterUnreachableError) as error:
        print(f"streamkernel run: {error}", file=sys.stderr)
        return 1
    if args.secret_file is not None:
        os.environ[SECRET_FILE_ENV] = os.path.abspath(os.path.expanduser(args.secret_file))
    elif ha_secret is not None:  # the HA cluster's secret (storageDir) signs every submission of the script
        os.environ[SECRET_ENV] = ha_secret.hex()
    conf.update({"execution.target": "remote", "rest.address": host, "rest.port": str(port),
                 "execution.attached": "false" if args.detached else "true"})
    return _run_script(args, conf,
                       one_line_errors=(SecretError, ClusterUnreachableError, RestClientError, NoLeaderError))


def _submits_to_ha_leader(args: argparse.Namespace, conf: dict[str, str]) -> bool:
    """With ``high-availability.type: zookeeper`` and no cluster of its own to start (no
    ``--taskmanagers``, ``--backend`` or ``--target``), ``run`` submits to the current leader, as
    ``flink run`` does with HA configured."""
    from streamkernel.common.options.high_availability import is_zookeeper

    try:
        zookeeper = is_zookeeper(conf)
    except (ValueError, IllegalConfigurationError):
        return False  # the cluster's own checks name the key
    return zookeeper and args.taskmanagers is None and args.backend is None and args.target is None


def _ha_leader_client(args: argparse.Namespace, conf: dict[str, str]) -> tuple[Any, Optional[bytes]]:
    """The REST client of the HA cluster's current leader (``-m zookeeper://...`` or the ``-D`` keys),
    and the secret of ``high-availability.storageDir`` (None: ``--secret-file``'s, or the registry's)."""
    from streamkernel.runtime.highavailability.ha_client import (client_ha_services, ha_secret_for_client,
                                                                   leader_wait_seconds)
    from streamkernel.runtime.highavailability.leader import REST_SERVER
    from streamkernel.runtime.highavailability.leader_follower import retrieve_leader
    from streamkernel.runtime.highavailability.zookeeper_url import ha_configuration_from_url
    from streamkernel.runtime.rest.client import RestClusterClient, parse_address

    if args.jobmanager is not None:
        conf.update(ha_configuration_from_url(args.jobmanager, conf.get("high-availability.storageDir")))
    services = client_ha_services(conf)
    try:
        leader = retrieve_leader(services, REST_SERVER, leader_wait_seconds(conf))
    finally:
        services.close()
    secret = ha_secret_for_client(conf, args.secret_file)
    host, port = parse_address(leader.address, "the leader's REST address")
    print(f"streamkernel run: the leading JobManager of cluster /{services.cluster_id} is at {leader.address}",
          file=sys.stderr, flush=True)
    return RestClusterClient(host, port, secret=secret, secret_file=args.secret_file), secret


def _run_script(args: argparse.Namespace, conf: dict[str, str], one_line_errors: tuple = ()) -> int:
    """Run the script as ``__main__`` with ``conf`` as every environment's context configuration;
    an error of ``one_line_errors`` (a cluster refusing a submission) is shown as one line."""
    os.environ[CONTEXT_CONFIGURATION_ENV] = json.dumps(conf)
    arguments = list(args.arguments)
    saved_argv, saved_path = sys.argv, list(sys.path)
    restore_sigterm = exit_on_sigterm()
    sys.argv = [args.script, *arguments]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    try:
        runpy.run_path(args.script, run_name="__main__")
        return 0
    except SystemExit as exit_:
        code = exit_.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except one_line_errors as error:
        print(f"streamkernel run: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if not one_line_errors:
            traceback.print_exc()
            return 1
        return 130  # -m: the remote job runs on, as the interruption's message said
    except BaseException:  # noqa: BLE001 - the script's error, shown as Python shows it
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if restore_sigterm is not None:
            restore_sigterm()


def _detach(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Start the same command without --detached in a background process; print where it runs."""
    cut = list(argv).index("--") if "--" in argv else len(argv)
    attached = [a for a in argv[:cut] if a not in ("--detached", "-d")] + list(argv[cut:])
    log = args.log or f"{os.path.splitext(os.path.basename(args.script))[0]}.{os.getpid()}.log"
    with open(log, "ab") as out:
        child = subprocess.Popen([sys.executable, "-m", "streamkernel", "run", *attached], stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    print(f"Job script {args.script} runs in the background: pid {child.pid}, output in {os.path.abspath(log)} "
          f"(stop it with: kill {child.pid})")
    return 0
