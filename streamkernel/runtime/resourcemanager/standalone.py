"""Flink's standalone ResourceManager: TaskManagers that come by themselves.

A standalone session cluster (``streamkernel cluster start``) launches no TaskManager from
the JobManager: each one is a process of its own (``streamkernel taskmanager start``, in
this shell or another, on this machine or another) that connects to the JobManager's RPC
listener with the cluster's secret and registers its slots. :class:`StandaloneTaskManagers`
is the ``process`` backend's :class:`~.remote_taskmanagers.RemoteTaskManagers` with a
launcher that starts nothing: a lost TaskManager is unregistered (its jobs restart by their
strategies) and never replaced, as in Flink, where a standalone cluster's operator starts
a new one.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.resourcemanager.remote_taskmanagers import RemoteTaskManagers
from streamkernel.runtime.taskmanager.local import local_taskmanager_id

__all__ = ["StandaloneTaskManagers", "ExternalTaskManagerLauncher"]


class ExternalTaskManagerLauncher:
    """The launcher of a standalone cluster: TaskManagers are started outside the JobManager."""

    backend = "standalone"

    def launch(self, ids: Sequence[str], slots: int, jobmanager_address: tuple[str, int], secret: bytes,
               configuration: Mapping[str, str]) -> None:
        """Start nothing; asking for TaskManagers is an error naming the command that adds one."""
        if ids:
            raise IllegalConfigurationError(
                f"a standalone cluster's JobManager starts no TaskManager ({', '.join(ids)} asked for): add one "
                f"with `streamkernel taskmanager start -m REST_HOST:REST_PORT`")

    def failure(self, taskmanager_id: str) -> Optional[str]:
        """Nothing is known about processes this JobManager did not start."""
        return None

    def kill(self, taskmanager_id: str) -> bool:
        """A TaskManager started elsewhere cannot be killed from here."""
        return False

    def describe(self, taskmanager_id: str) -> dict[str, Any]:
        """``{"backend": "standalone"}``: the TaskManager registered by itself."""
        return {"backend": self.backend}

    def stop(self, timeout: float) -> None:
        """Nothing to stop: the TaskManagers were asked to shut down and exit by themselves."""


class StandaloneTaskManagers(RemoteTaskManagers):
    """TaskManagers that register by themselves with the JobManager's RPC listener (see the module)."""

    def __init__(self, configuration: Mapping[str, str], secret: bytes) -> None:
        super().__init__(ExternalTaskManagerLauncher(), configuration, local_taskmanager_id,
                         replace_lost=False, working_dir=None, secret=secret)
        self.replaces_lost = False  # whatever streamkernel.taskmanager.replace-lost says: nothing to launch
