"""What a ZooKeeper HA cluster looks like right now (``%flink ha``): a read-only walk of its nodes.

:func:`read_ha_status` reads, under ``<path.root>/<cluster-id>/`` (:class:`~.zookeeper_utils.ZooKeeperPaths`):
the leaders' ``connection_info`` (REST URL, RPC address, leader session id), the latch nodes (the
contenders in election order, each one's JSON: hostname, pid, id, rest_url), the persisted
execution plans, and the job result store's files (``<job-id>_DIRTY.json``, ``<job-id>.json``).
It writes nothing and needs no leadership: ``services`` is a :class:`~.zookeeper_services.ZooKeeperHaServices`
or a client's :class:`~.ha_client.ZooKeeperClientServices` (anything with ``client``, ``paths``,
``cluster_id``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from streamkernel.runtime.highavailability.leader import DISPATCHER, RESOURCE_MANAGER, REST_SERVER

__all__ = ["HaStatus", "Contender", "PersistedJob", "read_ha_status"]

_LOCK_MARK = "__lock__"


@dataclass(frozen=True)
class Contender:
    """A JobManager in the election (one latch node), in election order."""

    node: str
    hostname: str = ""
    pid: Optional[int] = None
    id: str = ""
    rest_url: str = ""
    leader: bool = False


@dataclass(frozen=True)
class PersistedJob:
    """A job the HA stores hold: ``store`` is ``execution-plans``, ``job-result-store (dirty)`` or
    ``job-result-store (clean)``; ``name`` and ``status`` come from the leader's REST API when it knows them."""

    job_id: str
    store: str
    name: str = ""
    status: str = ""


@dataclass(frozen=True)
class HaStatus:
    """The cluster's HA state (see the module's docstring)."""

    cluster_id: str
    quorum: str
    path: str
    connection_state: str
    rest_url: Optional[str] = None
    rpc_address: Optional[str] = None
    leader_session_id: Optional[str] = None
    contenders: tuple[Contender, ...] = ()
    jobs: tuple[PersistedJob, ...] = field(default_factory=tuple)

    def rows(self) -> list[dict[str, str]]:
        """The status as one table: ``section``, ``name``, ``value`` rows (what ``%flink ha`` shows)."""
        rows = [{"section": "cluster", "name": "cluster id", "value": self.cluster_id},
                {"section": "cluster", "name": "quorum", "value": self.quorum},
                {"section": "cluster", "name": "ZooKeeper path", "value": self.path},
                {"section": "cluster", "name": "ZooKeeper connection", "value": self.connection_state}]
        if self.leader_session_id is None:
            rows.append({"section": "leader", "name": "leader", "value": "none (no JobManager leads right now)"})
        else:
            rows += [{"section": "leader", "name": "REST URL", "value": self.rest_url or ""},
                     {"section": "leader", "name": "RPC address", "value": self.rpc_address or ""},
                     {"section": "leader", "name": "leader session id", "value": self.leader_session_id}]
        for number, contender in enumerate(self.contenders, 1):
            who = f"{contender.hostname} pid {contender.pid}" if contender.pid is not None else contender.hostname
            value = ", ".join(p for p in (who, contender.rest_url, "LEADER" if contender.leader else "standby") if p)
            rows.append({"section": "contenders", "name": f"{number}. {contender.node}", "value": value})
        for job in self.jobs:
            value = ", ".join(p for p in (job.store, job.name, job.status) if p)
            rows.append({"section": "jobs", "name": job.job_id, "value": value})
        return rows


def _json(data: Optional[bytes]) -> dict[str, Any]:
    try:
        value = json.loads((data or b"").decode())
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _read(client: Any, path: str) -> Optional[bytes]:
    from kazoo.exceptions import NoNodeError

    try:
        return client.get(path)[0]
    except NoNodeError:
        return None


def _children(client: Any, path: str) -> list[str]:
    from kazoo.exceptions import NoNodeError

    try:
        return list(client.get_children(path))
    except NoNodeError:
        return []


def _contenders(client: Any, latch: str) -> tuple[Contender, ...]:
    """The latch nodes by sequence number (kazoo's Lock: the lowest holds the latch)."""
    names = sorted((n for n in _children(client, latch) if _LOCK_MARK in n), key=lambda n: n.rpartition(_LOCK_MARK)[2])
    contenders = []
    for number, name in enumerate(names):
        data = _read(client, f"{latch}/{name}")
        if data is None:
            continue  # gone while we read
        info = _json(data)
        pid = info.get("pid")
        contenders.append(Contender(name, str(info.get("hostname", "")), pid if isinstance(pid, int) else None,
                                    str(info.get("id", "")), str(info.get("rest_url", "")), leader=number == 0))
    return tuple(contenders)


def _result_store_jobs(directory: Optional[str]) -> list[PersistedJob]:
    if not directory:
        return []
    from streamkernel.runtime.checkpoint import filesystem as fs
    from streamkernel.runtime.highavailability.job_result_store import DIRTY_SUFFIX, FILE_SUFFIX

    try:
        names = sorted(fs.listdir(directory))
    except OSError:
        return []
    jobs = []
    for name in names:
        if name.endswith(DIRTY_SUFFIX):
            jobs.append(PersistedJob(name[:-len(DIRTY_SUFFIX)], "job-result-store (dirty)"))
        elif name.endswith(FILE_SUFFIX):
            jobs.append(PersistedJob(name[:-len(FILE_SUFFIX)], "job-result-store (clean)"))
    return jobs


def read_ha_status(services: Any,
                   jobs_overview: Optional[Callable[[str], dict[str, tuple[str, str]]]] = None) -> HaStatus:
    """The cluster's :class:`HaStatus`, read from ZooKeeper (and the job result store's directory);
    ``jobs_overview(rest_url)`` names the jobs the leader's REST API knows, ``{job id: (name, status)}``
    (None: not asked; :func:`streamkernel.runtime.rest.leader_client.rest_jobs_overview` asks it)."""
    client, paths = services.client, services.paths
    rest = LeaderInfo.read(client, paths.connection_info(REST_SERVER))
    dispatcher = LeaderInfo.read(client, paths.connection_info(DISPATCHER))
    rpc = LeaderInfo.read(client, paths.connection_info(RESOURCE_MANAGER))
    session = rest.session_id or dispatcher.session_id or rpc.session_id
    rest_url = rest.address or dispatcher.address
    jobs = [PersistedJob(job_id, "execution-plans") for job_id in sorted(_children(client, paths.execution_plans))]
    jobs += _result_store_jobs(getattr(services, "job_result_store_dir", None))
    known = jobs_overview(rest_url) if rest_url and jobs_overview is not None else {}
    jobs = [PersistedJob(j.job_id, j.store, *known.get(j.job_id, ("", ""))) for j in jobs]
    quorum = getattr(services, "quorum", None) or str(getattr(client, "hosts", "") or "")
    return HaStatus("/" + str(services.cluster_id).strip("/"), _quorum_text(quorum), paths.base,
                    str(client.state), rest_url, rpc.address, session, _contenders(client, paths.latch), tuple(jobs))


def _quorum_text(hosts: Any) -> str:
    if isinstance(hosts, (list, tuple)):  # kazoo keeps (host, port) pairs
        return ",".join(f"{h}:{p}" if isinstance(h, str) else str(h) for h, p in hosts)
    return str(hosts)


@dataclass(frozen=True)
class LeaderInfo:
    """One component's published leader (``connection_info``): address and session id, or neither."""

    address: Optional[str] = None
    session_id: Optional[str] = None

    @classmethod
    def read(cls, client: Any, path: str) -> "LeaderInfo":
        """The node at ``path`` (empty when there is none or it is not the JSON a leader writes)."""
        info = _json(_read(client, path))
        return cls(str(info["address"]) if info.get("address") else None,
                   str(info["session_id"]) if info.get("session_id") else None)
