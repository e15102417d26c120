"""The cluster's entry points, above every component: the MiniCluster and the client.

* :mod:`.minicluster`: the :class:`~.minicluster.MiniCluster` (a Dispatcher, a
  ResourceManager and TaskManagers on a backend) and what it offers a notebook:
  :mod:`.checkpoints`, :mod:`.failures`, :mod:`.inspection`, :mod:`.taskmanagers` (the
  backends), :mod:`.limits` (sizes checked before anything starts), :mod:`.exit` (stopped at
  interpreter exit), :mod:`.job_client` (the JobClient of a submitted job), :mod:`.cluster_log`
  (the cluster's log file).
* :mod:`.client`: what ``execute()`` runs: a job on the current cluster, or on a transient
  per-job cluster.

The package's face: ``from streamkernel.runtime.minicluster import MiniCluster`` (also
``MiniClusterJobClient``, ``JobInfo``, ``current_cluster``, ``set_current_cluster``), each
imported on first use, so that importing one of the modules above does not import them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamkernel.lazy_exports import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - imported on first use (__getattr__)
    from streamkernel.runtime.minicluster.job_client import MiniClusterJobClient
    from streamkernel.runtime.minicluster.minicluster import JobInfo, MiniCluster, current_cluster, set_current_cluster

__all__ = ["MiniCluster", "MiniClusterJobClient", "JobInfo", "current_cluster", "set_current_cluster"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "MiniCluster": ".minicluster", "JobInfo": ".minicluster", "current_cluster": ".minicluster",
    "set_current_cluster": ".minicluster", "MiniClusterJobClient": ".job_client"})
