"""streamkernel: a Jupyter-first, interactive streaming engine.

Build a Flink-style dataflow with a PyFlink-compatible DataStream API
(``streamkernel.datastream``, ``streamkernel.common``), see its StreamGraph, JobGraph and
ExecutionGraph drawn, and drive it from a notebook with ``%load_ext streamkernel`` and
the ``%%flink`` cell magic.

Importing this package is cheap: it loads neither IPython nor pandas nor PySpark; each is
imported where it is used. The clusters and job clients it names (``from streamkernel import
MiniCluster``) are imported on first use. docs/public-api.md lists every stable import path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamkernel.lazy_exports import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - imported on first use (__getattr__)
    from streamkernel.common.job_client import JobClient
    from streamkernel.runtime.minicluster.job_client import MiniClusterJobClient
    from streamkernel.runtime.minicluster.minicluster import MiniCluster
    from streamkernel.runtime.rest.remote_cluster import RemoteCluster, RemoteJobClient

__version__ = "0.1.0"

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension", "MiniCluster", "MiniClusterJobClient",
           "RemoteCluster", "RemoteJobClient", "JobClient"]

#: name -> the module defining it: imported when the name is first asked for.
__getattr__, __dir__ = lazy_exports(__name__, {
    "MiniCluster": "streamkernel.runtime.minicluster.minicluster",
    "MiniClusterJobClient": "streamkernel.runtime.minicluster.job_client",
    "RemoteCluster": "streamkernel.runtime.rest.remote_cluster",
    "RemoteJobClient": "streamkernel.runtime.rest.remote_cluster",
    "JobClient": "streamkernel.common.job_client",
})


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext streamkernel``: register the ``%flink`` / ``%%flink`` magics and bind ``env``."""
    from streamkernel.jupyter.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext streamkernel``: nothing to undo beyond IPython's own bookkeeping."""
    from streamkernel.jupyter.extension import unload

    unload(ipython)
