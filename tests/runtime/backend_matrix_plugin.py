"""A pytest plugin for test_backend_matrix.py's runs on the ``process`` and ``spark`` backends.

Loaded with ``-p backend_matrix_plugin`` (this directory on PYTHONPATH) in a pytest run
whose ``STREAMKERNEL_BACKEND`` names the backend. It counts the clusters the tests start,
per backend, and prints the count last (``clusters started per backend: {...}``), so the
matrix test can check that the tests really ran on the backend it asked for. With
``spark`` it also starts one local SparkSession before the first test and stops it after
the last: every cluster the tests start (their own MiniClusters and the transient ones of
``env.execute()``) launches its TaskManagers on that running session, as in a notebook with
a SparkSession, instead of paying a JVM start per cluster. Not a test module.
"""

from __future__ import annotations

import collections
import os
from typing import Any

from streamkernel.runtime.minicluster import MiniCluster

_session: Any = None
_started: collections.Counter = collections.Counter()
_original_start = MiniCluster._start_locked


def _counting_start(self: MiniCluster) -> None:
    _original_start(self)
    _started[self.backend] += 1


def pytest_sessionstart(session: Any) -> None:
    """Count cluster starts; on spark, start the SparkSession (``local[6,8]``: room for the largest test cluster)."""
    global _session
    MiniCluster._start_locked = _counting_start  # type: ignore[method-assign]
    if os.environ.get("STREAMKERNEL_BACKEND") != "spark":
        return
    from pyspark.sql import SparkSession

    from streamkernel.runtime.taskmanager.spark_session import session_defaults

    builder = SparkSession.builder.master("local[6,8]").appName("streamkernel backend matrix")
    for key, value in session_defaults("local[6,8]").items():
        builder = builder.config(key, value)
    _session = builder.getOrCreate()


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Stop the SparkSession."""
    MiniCluster._start_locked = _original_start  # type: ignore[method-assign]
    if _session is not None:
        _session.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print how many clusters started on each backend."""
    terminalreporter.write_line(f"clusters started per backend: {dict(_started)}")
