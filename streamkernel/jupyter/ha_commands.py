"""``%flink ha``: the highly available cluster's state as one table.

The reading is :func:`streamkernel.runtime.highavailability.ha_status.read_ha_status`; this module
only finds the services and renders the :class:`~streamkernel.runtime.highavailability.ha_status.HaStatus`
(a pandas table: HTML in a notebook, text in a terminal, as the other ``%flink`` tables). The
services are the connected cluster's (``%flink connect zookeeper://...``), else the in-kernel
cluster's ``ha_services``, else, when the in-kernel cluster's configuration has the ZooKeeper HA
keys, a short-lived client session on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

from IPython.core.error import UsageError

from streamkernel.errors import StreamKernelError

__all__ = ["show_ha", "ha_status_of", "ha_summary", "ha_html", "ha_panel_html"]


def ha_status_of(cluster: Any) -> Optional[Any]:
    """The :class:`HaStatus` of ``cluster`` (a RemoteCluster or a MiniCluster), None when it is not
    highly available. StreamKernelError (one line) when ZooKeeper cannot be read."""
    from streamkernel.runtime.highavailability.ha_status import read_ha_status
    from streamkernel.runtime.rest.leader_client import rest_jobs_overview

    services = getattr(cluster, "ha_services", None)
    if services is not None and hasattr(services, "paths"):
        return read_ha_status(services, rest_jobs_overview)
    if services is not None:
        return None  # the in-memory services of high-availability.type NONE
    configuration = getattr(cluster, "configuration", None)
    if not isinstance(configuration, Mapping):
        return None
    from streamkernel.common.options.high_availability import is_zookeeper

    if not is_zookeeper(configuration):
        return None
    from streamkernel.runtime.highavailability.ha_client import client_ha_services

    client = client_ha_services(configuration)
    try:
        return read_ha_status(client, rest_jobs_overview)
    finally:
        client.close()


def ha_summary(status: Any) -> str:
    """One line: the cluster, its leader and how many contenders and persisted jobs."""
    leader = f"leader at {status.rest_url}" if status.leader_session_id else "no leader right now"
    return (f"Cluster {status.cluster_id} on ZooKeeper {status.quorum} ({status.connection_state}): {leader}, "
            f"{len(status.contenders)} contender(s), {len(status.jobs)} persisted job entr"
            f"{'y' if len(status.jobs) == 1 else 'ies'}.")


def _kazoo_error() -> "type[Exception]":
    try:
        from kazoo.exceptions import KazooException
    except ImportError:  # without kazoo no cluster is read through ZooKeeper
        return StreamKernelError
    return KazooException


def show_ha(cluster_commands: Any, display: Optional[Callable[[Any], None]] = None) -> Any:
    """``%flink ha``: print the summary line and display the table; returns the HaStatus."""
    cluster = cluster_commands.active_cluster()
    if cluster is None or not cluster.is_running:
        raise UsageError("%flink ha: no cluster; %flink connect zookeeper://HOST:PORT/CLUSTER-ID (or %flink start "
                         "-D high-availability.type=zookeeper ...) first")
    try:
        status = ha_status_of(cluster)
    except (StreamKernelError, ValueError, _kazoo_error()) as exc:
        raise UsageError(f"%flink ha: cannot read the cluster's high-availability state: {exc}") from None
    if status is None:
        raise UsageError(f"%flink ha: {cluster!r} is not highly available (high-availability.type is NONE); "
                         f"connect with zookeeper://HOST:PORT/CLUSTER-ID or start it with the HA keys")
    import pandas as pd  # lazy: pandas only when a table is shown

    print(ha_summary(status))
    (display or cluster_commands.display)(pd.DataFrame(status.rows(), columns=["section", "name", "value"]))
    return status


def ha_html(status: Any) -> str:
    """The HA panel of the cluster view: the summary line and the rows of :meth:`HaStatus.rows`."""
    from streamkernel.jupyter.widgets.html import STYLE, _e

    rows = "".join(f'<tr class="sk-ha-row" data-section="{_e(r["section"])}"><td class="sk-l">{_e(r["section"])}</td>'
                   f'<td class="sk-l">{_e(r["name"])}</td><td class="sk-l">{_e(r["value"])}</td></tr>'
                   for r in status.rows())
    return (f'{STYLE}<div class="sk sk-ha"><div class="sk-tm-title">HA</div><div class="sk-muted">{_e(ha_summary(status))}'
            f'</div><table>{rows}</table></div>')


def ha_panel_html(cluster: Any) -> str:
    """:func:`ha_html` of ``cluster`` now, or one line saying why it cannot be read."""
    from streamkernel.jupyter.widgets.html import STYLE, _e

    try:
        status = ha_status_of(cluster)
    except Exception as exc:  # noqa: BLE001 - the panel shows any failure to read, the view goes on
        return f'{STYLE}<div class="sk sk-ha sk-muted">HA: cannot read ZooKeeper: {_e(exc)}</div>'
    return ha_html(status) if status is not None else ""
