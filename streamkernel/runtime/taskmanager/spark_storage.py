"""Checkpoint storage the Spark backend's TaskManagers can share, checked before they start.

Every TaskManager writes its subtasks' state files into the job's checkpoint directory and
the JobMaster (in the driver) writes the metadata next to them and reads them all back on
a restore. On a Spark cluster whose executors run on several hosts, a local path (a plain
path or ``file://``) is a different directory on each host: checkpoints would complete with
files scattered over machines and no restore could find them. The launcher refuses that
at start, saying why; ``local[...]`` masters (one machine) are never refused.

The decision (:func:`shared_storage_problem`) is a pure function of the directory and the
executors' hosts; :func:`executor_hosts` reads the hosts from a live SparkContext.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.checkpoint import filesystem
from streamkernel.runtime.checkpoint.storage import CHECKPOINTS_DIRECTORY, resolve_checkpoint_dir
from streamkernel.runtime.taskmanager.spark_resources import is_local_master

__all__ = ["shared_storage_problem", "executor_hosts", "check_shared_checkpoint_storage"]


def shared_storage_problem(checkpoint_dir: str, hosts: Sequence[str]) -> Optional[str]:
    """Why TaskManagers on ``hosts`` (one entry per executor) cannot share ``checkpoint_dir``, or None.

    >>> shared_storage_problem("/tmp/chk", ["a", "a"]) is None
    True
    >>> shared_storage_problem("s3://bucket/chk", ["a", "b"]) is None
    True
    >>> shared_storage_problem("/tmp/chk", ["a", "b"])[:40]
    'the checkpoint directory /tmp/chk is on '
    """
    distinct = sorted(set(hosts))
    if len(distinct) < 2 or not filesystem.is_local(checkpoint_dir):
        return None
    return (f"the checkpoint directory {checkpoint_dir} is on the local disk, and the Spark executors run on "
            f"{len(distinct)} hosts ({', '.join(distinct)}): each would write its state to its own disk and no "
            f"checkpoint could be restored; set {CHECKPOINTS_DIRECTORY[0]} to storage every host reaches "
            "(s3://, gs://, hdfs:// ... with its fsspec package installed)")


def executor_hosts(spark_context: Any) -> list[str]:
    """The host of every live executor (the driver left out); [] for a ``local[...]`` master."""
    if is_local_master(str(spark_context.master)):
        return []
    summaries = spark_context._jsc.sc().statusStore().executorList(True)
    hosts = []
    for i in range(summaries.size()):
        summary = summaries.apply(i)
        if str(summary.id()) != "driver":
            hosts.append(str(summary.hostPort()).rsplit(":", 1)[0])
    return hosts


def check_shared_checkpoint_storage(spark_context: Any, configuration: Mapping[str, Any]) -> None:
    """Raise IllegalConfigurationError when the configured checkpoint directory is local and
    the executors of ``spark_context`` run on more than one host."""
    problem = shared_storage_problem(resolve_checkpoint_dir(configuration), executor_hosts(spark_context))
    if problem is not None:
        raise IllegalConfigurationError(f"spark backend: {problem}")
