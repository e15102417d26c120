"""The log file of a MiniCluster: where its JobManager and TaskManager threads log (Flink's ``log.file``).

A MiniCluster in a notebook's kernel, or the transient cluster of a script's ``env.execute()``,
logs to a file of its own (:mod:`streamkernel.runtime.core.engine_log`), named as Flink names
its log files, in the log directory:

* ``log.file`` of the cluster's configuration, when set: that file (appended);
* else ``env.log.dir``, else ``$STREAMKERNEL_HOME/log`` (``~/.streamkernel/log``), holding
  ``streamkernel-<user>-minicluster-<pid>-<n>-<host>.log``: one file per cluster of each process.

So that the directory does not grow without bound, starting a cluster deletes the oldest files
of processes of this machine that have ended, beyond the newest :data:`KEEP_LOG_FILES`.
``MiniCluster.log_file`` says where a cluster logs; the REST API serves it at ``/jobmanager/log``
and ``%flink logs`` shows its last lines.
"""

from __future__ import annotations

import getpass
import itertools
import os
import re
import socket
from pathlib import Path
from typing import Mapping

from streamkernel.common.options import CoreOptions
from streamkernel.runtime.rest.cluster_secret import streamkernel_home

__all__ = ["KEEP_LOG_FILES", "cluster_log_file", "prune_log_files"]

#: How many files of ended processes a log directory keeps (the newest).
KEEP_LOG_FILES = 20

_sequence = itertools.count(1)
_UNSAFE = re.compile(r"[^A-Za-z0-9._]")


def _user() -> str:
    try:
        return _UNSAFE.sub("_", getpass.getuser())
    except (KeyError, OSError):  # no name for this uid (a container)
        return str(os.getuid())


def _host() -> str:
    return _UNSAFE.sub("_", socket.gethostname())


def cluster_log_file(configuration: Mapping[str, str]) -> Path:
    """The log file of a cluster about to start with ``configuration`` (see the module docstring)."""
    configured = configuration.get(CoreOptions.LOG_FILE.key(), "").strip()
    if configured:
        return Path(configured).expanduser()
    directory = configuration.get(CoreOptions.LOG_DIR.key(), "").strip()
    log_dir = Path(directory).expanduser() if directory else streamkernel_home() / "log"
    prune_log_files(log_dir)
    return log_dir / f"streamkernel-{_user()}-minicluster-{os.getpid()}-{next(_sequence)}-{_host()}.log"


_NAME = re.compile(r"^streamkernel-.+-minicluster-(?P<pid>\d+)-\d+-(?P<host>[^-]+)\.log$")


def prune_log_files(log_dir: Path, keep: int = KEEP_LOG_FILES) -> list[Path]:
    """Delete the MiniCluster log files of ``log_dir`` beyond the newest ``keep`` whose process (on this
    machine) has ended; returns the deleted files. A file that cannot be read or deleted is left."""
    host = _host()
    candidates = []
    for path in log_dir.glob("streamkernel-*-minicluster-*.log") if log_dir.is_dir() else []:
        match = _NAME.match(path.name)
        if match is None or match["host"] != host:
            continue
        try:
            candidates.append((path.stat().st_mtime, path, int(match["pid"])))
        except OSError:
            continue
    candidates.sort(reverse=True)
    deleted = []
    for _, path, pid in candidates[keep:]:
        if _alive(pid):
            continue
        try:
            path.unlink()
        except OSError:
            continue
        deleted.append(path)
    return deleted


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
