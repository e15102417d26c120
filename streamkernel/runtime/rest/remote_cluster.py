"""A running cluster reached through its REST API, with the interface the notebook uses for a MiniCluster.

``%flink connect HOST:PORT`` makes the notebook a client of a session cluster that lives
elsewhere (another process, another machine). :class:`RemoteCluster` is that cluster as the
magics see a :class:`~streamkernel.runtime.minicluster.minicluster.MiniCluster`: ``jobs()``,
``get_job()`` (a JobClient), ``checkpoints`` (trigger, savepoint, stop-with-savepoint,
history), ``inspection`` (``snapshot()`` and ``taskmanagers``, the cockpit's input), all read
from Flink's REST JSON (``/jobs/overview``, ``/jobs/:id``, ``/jobs/:id/vertices/:vid``,
``/jobs/:id/checkpoints``, ``/taskmanagers``) by :mod:`.remote_snapshot`. Jobs are submitted
by the environments themselves (``execution.target: remote``: :mod:`.remote_execution`).

:meth:`RemoteCluster.connect` checks everything before the notebook counts as connected:
someone answers, it is a Flink/streamkernel REST API (``/config``), and the secret is the
cluster's (an authenticated no-op: :meth:`~.client.RestClusterClient.verify_secret`).
What only the cluster's owner can do (killing its TaskManager processes, injecting failures,
reading its operators' records) is not offered.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from streamkernel.common.job_status import JobID, JobStatus
from streamkernel.errors import StreamKernelError
from streamkernel.runtime.rest.client import RestClusterClient, parse_address
from streamkernel.runtime.rest.remote_execution import RestJobClient
from streamkernel.runtime.rest.remote_snapshot import (
    checkpoint_history,
    cluster_snapshot,
    job_details,
    taskmanager_infos,
)

__all__ = ["RemoteCluster", "RemoteJobClient", "RemoteCheckpoints", "RemoteInspection", "RemoteClusterError"]


class RemoteClusterError(StreamKernelError):
    """What only the cluster's own process can do, asked of a remote cluster."""


class RemoteJobClient(RestJobClient):
    """The JobClient of a job of a :class:`RemoteCluster`; ``get_job_details()`` is the job's
    JobDetails (vertices with their subtasks) as a MiniCluster's JobClient gives it."""

    def get_job_details(self) -> Any:
        """The job's JobDetails, from ``GET /jobs/:jobid`` and its vertices."""
        return job_details(self._client, str(self._job_id))


class RemoteCheckpoints:
    """``RemoteCluster.checkpoints``: checkpoints and savepoints through the REST API."""

    def __init__(self, client: RestClusterClient) -> None:
        self._client = client

    def trigger_checkpoint(self, job_id: Union[JobID, str]) -> str:
        """Take a checkpoint now (``POST /jobs/:jobid/checkpoints``); its path."""
        checkpoint_id = self._client.trigger_checkpoint(job_id)
        details = self._client.get(f"/jobs/{job_id}/checkpoints/details/{checkpoint_id}")
        return str(details.get("external_path") or f"checkpoint {checkpoint_id}")

    def trigger_savepoint(self, job_id: Union[JobID, str], target_directory: Optional[str] = None) -> str:
        """Take a savepoint (``POST /jobs/:jobid/savepoints``); its path."""
        return self._client.trigger_savepoint(job_id, target_directory)

    def stop_with_savepoint(self, job_id: Union[JobID, str], target_directory: Optional[str] = None,
                            drain: bool = False) -> str:
        """Stop the job with a savepoint (``POST /jobs/:jobid/stop``); its path."""
        return self._client.stop_with_savepoint(job_id, target_directory, drain)

    def checkpoint_history(self, job_id: Union[JobID, str]) -> list[dict]:
        """The job's checkpoints, newest first, as ``MiniCluster.checkpoints.checkpoint_history`` rows."""
        return checkpoint_history(self._client, str(job_id))


class RemoteInspection:
    """``RemoteCluster.inspection``: the cluster's TaskManagers and jobs as plain data."""

    backend = "remote"

    def __init__(self, client: RestClusterClient) -> None:
        self._client = client

    def snapshot(self) -> dict:
        """The cluster's state in ``MiniCluster.inspection.snapshot()``'s shape."""
        return cluster_snapshot(self._client)

    @property
    def taskmanagers(self) -> tuple[Any, ...]:
        """Every TaskManager with its slots and the subtasks in them."""
        return taskmanager_infos(self.snapshot())


class RemoteFailures:
    """``RemoteCluster.failures``: failure injection needs the cluster's own process; every call says so."""

    def __init__(self, url: str) -> None:
        self._url = url

    def _refuse(self, what: str) -> RemoteClusterError:
        return RemoteClusterError(f"{what} is not available on the remote cluster at {self._url}: its TaskManagers "
                                  f"and tasks run outside this process")

    def kill_taskmanager(self, taskmanager: Any) -> str:
        """Refused (RemoteClusterError)."""
        raise self._refuse("killing a TaskManager")

    def add_taskmanager(self) -> str:
        """Refused (RemoteClusterError)."""
        raise self._refuse("adding a TaskManager")

    def fail_operator(self, *args: Any) -> list[str]:
        """Refused (RemoteClusterError)."""
        raise self._refuse("injecting a failure")


class RemoteCluster:
    """A session cluster reached through its REST API at ``client.url`` (see the module's docstring)."""

    backend = "remote"

    def __init__(self, client: RestClusterClient, secret_file: Optional[str] = None,
                 ha_services: Optional[Any] = None) -> None:
        self.client = client
        self.secret_file = secret_file
        #: The ZooKeeper client services of a cluster connected through ``zookeeper://`` (None otherwise):
        #: ``client`` follows its leader; :meth:`disconnect` closes them.
        self.ha_services = ha_services
        self.checkpoints = RemoteCheckpoints(client)
        self.inspection = RemoteInspection(client)
        self.failures = RemoteFailures(client.url)
        self._connected = True

    @classmethod
    def connect(cls, address: str, secret_file: Optional[str] = None, timeout: float = 5.0) -> "RemoteCluster":
        """Reach the cluster at ``address`` (``HOST:PORT`` or ``http://HOST:PORT``) and check that it is a
        streamkernel REST API taking this client's secret. Raises ValueError (a malformed address),
        ClusterUnreachableError (nobody answers), RestClientError (not such an API, or a wrong secret),
        SecretError (no secret found), each one line."""
        from streamkernel.runtime.highavailability.zookeeper_url import is_zookeeper_url

        if is_zookeeper_url(address):
            return cls.connect_ha(address, secret_file, timeout=timeout)
        host, port = parse_address(address, "%flink connect")
        client = RestClusterClient(host, port, secret_file=secret_file, timeout=timeout)
        client.check_rest_api()
        client.verify_secret()
        return cls(client, secret_file)

    @classmethod
    def connect_ha(cls, url: str, secret_file: Optional[str] = None, configuration: Optional[dict] = None,
                   timeout: float = 5.0) -> "RemoteCluster":
        """Reach the current leader of the highly available cluster ``zookeeper://HOST:PORT[,...]/CLUSTER-ID``
        (``configuration``: more HA keys, e.g. ``high-availability.storageDir``) and follow it: after a
        takeover every read goes to the new leader (:class:`~.leader_client.LeaderRestClient`).
        The secret: ``secret_file``, else the storage directory's, else the registry's for the leader's
        address. Raises what :meth:`connect` raises, ZooKeeperUrlError (a ValueError naming the URL's
        wrong part), ZooKeeperConnectionError or NoLeaderError."""
        from streamkernel.runtime.highavailability.ha_client import (client_ha_services, ha_secret_for_client,
                                                                       leader_wait_seconds)
        from streamkernel.runtime.highavailability.zookeeper_url import ha_configuration_from_url
        from streamkernel.runtime.rest.leader_client import LeaderRestClient

        conf = {**(configuration or {}), **ha_configuration_from_url(url)}
        secret = ha_secret_for_client(conf, secret_file)
        services = client_ha_services(conf)
        try:
            client = LeaderRestClient(services, leader_wait_seconds(conf), secret=secret, secret_file=secret_file,
                                      request_timeout=timeout)
            try:
                client.check_rest_api()
                client.verify_secret()
            except BaseException:
                client.close()
                raise
        except BaseException:
            services.close()
            raise
        return cls(client, secret_file, ha_services=services)

    @property
    def host(self) -> str:
        """The REST API's host."""
        return self.client.host

    @property
    def port(self) -> int:
        """The REST API's port."""
        return self.client.port

    @property
    def rest_url(self) -> str:
        """``http://HOST:PORT``: the REST API and Flink's Web UI."""
        return self.client.url

    @property
    def is_running(self) -> bool:
        """True while connected (the cluster itself runs on after :meth:`disconnect`)."""
        return self._connected

    def disconnect(self) -> None:
        """Stop using the cluster (and, through ZooKeeper, following its leader); it and its jobs keep running."""
        if not self._connected:
            return
        self._connected = False
        if self.ha_services is not None:
            close = getattr(self.client, "close", None)
            if close is not None:
                close()
            self.ha_services.close()

    @property
    def dispatcher(self) -> Any:
        """Refused (RemoteClusterError): the jobs' graphs stay on the cluster (views that draw them
        show the rest)."""
        raise RemoteClusterError(f"the remote cluster at {self.rest_url} keeps its jobs' graphs; only its REST "
                                 f"API is reachable")

    def jobmanager_log(self) -> str:
        """The JobManager's log file (``GET /jobmanager/log``; RestClientError 404 when it has none)."""
        return self.client.get_text("/jobmanager/log")

    def jobs(self) -> list[Any]:
        """Every job of the cluster (``GET /jobs/overview``), oldest first, as ``MiniCluster.jobs()`` rows."""
        from streamkernel.runtime.minicluster.minicluster import JobInfo

        rows = []
        for job in self.client.get("/jobs/overview").get("jobs", []):
            end = int(job.get("end-time", -1))
            rows.append(JobInfo(JobID.from_hex_string(str(job["jid"])), str(job.get("name", "")),
                                JobStatus[str(job["state"])], int(job.get("start-time", 0)),
                                int(job.get("duration", 0)), end if end >= 0 else None))
        return sorted(rows, key=lambda j: j.start_time)

    def get_job(self, job_id: Union[JobID, str]) -> RemoteJobClient:
        """The JobClient of a job of the cluster (KeyError naming it when the cluster has none)."""
        from streamkernel.runtime.rest.client import RestClientError

        job = job_id if isinstance(job_id, JobID) else JobID.from_hex_string(str(job_id))
        try:
            self.client.get_job_details(job)
        except RestClientError as error:
            if error.status == 404:
                raise KeyError(f"the cluster at {self.rest_url} has no job {job}") from None
            raise
        return RemoteJobClient(self.client, job)

    def __repr__(self) -> str:
        state = "connected" if self._connected else "disconnected"
        return f"RemoteCluster({self.rest_url}, {state})"
