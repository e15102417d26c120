"""The JobManager's REST API, compatible with Flink's (Flink's ``org.apache.flink.runtime.rest``
and ``webmonitor``): Flink's own CLI and Web UI read and steer the cluster through it.

* :mod:`.endpoint`: the :class:`~.endpoint.RestServerEndpoint` (a tornado server on its own
  thread and asyncio loop; port range, start/stop, ``rest_url``).
* :mod:`.context`: the :class:`~.context.RestContext` every handler reads the cluster through
  (the DispatcherGateway, the ResourceManager's snapshots, the configuration): published
  snapshots only, never a JobMaster's internals.
* :mod:`.routes`: collects the ``ROUTES`` of the handler modules (:mod:`.handlers`), each
  resource at ``/X`` and ``/v1/X``.
* :mod:`.json_views`: pure functions from snapshots to Flink's JSON bodies (unit-testable
  without HTTP).

The package's face: ``from streamkernel.runtime.rest import RemoteCluster`` (a running cluster
through its REST API, as ``%flink connect`` uses it), ``RemoteJobClient``, ``RestClusterClient``,
each imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamkernel.lazy_exports import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - imported on first use (__getattr__)
    from streamkernel.runtime.rest.client import RestClusterClient
    from streamkernel.runtime.rest.remote_cluster import RemoteCluster, RemoteJobClient

__all__ = ["RemoteCluster", "RemoteJobClient", "RestClusterClient"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "RemoteCluster": ".remote_cluster", "RemoteJobClient": ".remote_cluster", "RestClusterClient": ".client"})
