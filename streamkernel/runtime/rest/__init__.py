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
"""
