"""TaskManagerLauncher: how a backend starts, kills and stops the TaskManagers of a cluster.

Flink's *active* ResourceManagers (YARN, Kubernetes) ask a resource driver for new
workers and are told when one is gone; the TaskManager then starts, connects back to the
JobManager and registers its slots like any other. The launcher is that resource driver:
it only starts and stops hosts. Everything a TaskManager does once it runs goes through
the JobManager <-> TaskManager protocol (:mod:`.gateway`), the same for every backend.

* ``process`` (:mod:`.process`): each TaskManager is a child process of the driver.
* ``spark`` (:mod:`.spark`): each TaskManager is a long-running Spark task.

A launched TaskManager runs :func:`streamkernel.runtime.taskmanager.worker.run_taskmanager`
with the JobManager's RPC address and the cluster secret (which never appears on a
command line: child processes get it through :data:`~streamkernel.runtime.rpc.transport.AUTHKEY_ENV`).
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

__all__ = ["TaskManagerLauncher"]


@runtime_checkable
class TaskManagerLauncher(Protocol):
    """Starts TaskManagers somewhere (child processes, Spark tasks) and ends them.

    The JobManager owns the cluster: it asks the launcher for TaskManagers, learns that
    they run when they register, and asks them to shut down through the protocol before
    it calls :meth:`stop`. A launcher never talks to a TaskManager itself.
    """

    def launch(self, ids: Sequence[str], slots: int, jobmanager_address: tuple[str, int], secret: bytes,
               configuration: Mapping[str, str]) -> None:
        """Start one TaskManager per id, each with ``slots`` slots, asynchronously.

        Returns once they are on their way (not once they registered): each connects to
        ``jobmanager_address`` with ``secret`` and registers with the ResourceManager.
        Raises with a clear message when they cannot be started at all (e.g. Spark lacks
        the task slots to host them).
        """

    def kill(self, taskmanager_id: str) -> bool:
        """Kill the host of ``taskmanager_id`` at once, as if it died (failure injection).

        Returns False when the launcher does not know the id or it already ended.
        """

    def stop(self, timeout: float) -> None:
        """Make sure no TaskManager host is left: wait up to ``timeout`` seconds for those
        asked to shut down through the protocol, then kill what is left. Idempotent."""

    def describe(self, taskmanager_id: str) -> dict[str, Any]:
        """What is known of a TaskManager's host, for the cockpit: at least ``backend``,
        and ``host`` / ``pid`` where known. Empty dict for an unknown id."""
