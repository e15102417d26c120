"""A pytest plugin for the backend matrix's runs (backend_matrix.py) on ``process`` and ``spark``.

Loaded with ``-p backend_matrix_plugin`` (this directory on PYTHONPATH) in a pytest run
whose ``STREAMKERNEL_BACKEND`` names the backend. It counts the clusters the tests start,
per backend, and prints the count last (``clusters started per backend: {...}``), so the
matrix test can check that the tests really ran on the backend it asked for, and how many
tests the run selected (``tests selected: N``), so it can check that every one passed.
``STREAMKERNEL_MATRIX_SHARD=i/n`` keeps every n-th collected test from the i-th (0-based), so
a long file can run as n matrix items that xdist spreads over its workers. With
``spark`` it also starts one local SparkSession when the first cluster starts and stops it
after the last test: every cluster the tests start (their own MiniClusters and the
transient ones of ``env.execute()``) launches its TaskManagers on that running session, as
in a notebook with a SparkSession, instead of paying a JVM start per cluster (a run whose
tests start no cluster in this process, the PyFlink programs run as scripts, starts no
JVM here). Not a test module.
"""

from __future__ import annotations

import collections
import os
from typing import Any

from streamkernel.runtime.minicluster.minicluster import MiniCluster

_session: Any = None
_selected = 0
_started: collections.Counter = collections.Counter()
_original_start = MiniCluster._start_locked


def _counting_start(self: MiniCluster) -> None:
    if self.backend == "spark" and _session is None:
        _start_spark_session()
    _original_start(self)
    _started[self.backend] += 1


def pytest_sessionstart(session: Any) -> None:
    """Count cluster starts."""
    MiniCluster._start_locked = _counting_start  # type: ignore[method-assign]


def pytest_collection_modifyitems(session: Any, config: Any, items: list) -> None:
    """Keep this run's shard (``STREAMKERNEL_MATRIX_SHARD=i/n``) of the collected tests."""
    shard = os.environ.get("STREAMKERNEL_MATRIX_SHARD")
    if not shard:
        return
    index, count = (int(part) for part in shard.split("/"))
    kept = [item for position, item in enumerate(items) if position % count == index]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


def pytest_collection_finish(session: Any) -> None:
    """Remember how many tests run (after ``-k`` deselected some)."""
    global _selected
    _selected = len(session.items)


def _start_spark_session() -> None:
    """The SparkSession every cluster of the run uses (``local[6,8]``: room for the largest test cluster)."""
    global _session
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
    """Print how many tests were selected and how many clusters started on each backend."""
    terminalreporter.write_line(f"tests selected: {_selected}")
    terminalreporter.write_line(f"clusters started per backend: {dict(_started)}")
