"""The reporter's HTTP endpoint: the first free port of its range, every port taken naming the key,
``/metrics`` read at the scrape (never before), and nothing left once closed."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from typing import Iterator

import pytest

from streamkernel.runtime.metrics.groups import MetricGroupSnapshot
from streamkernel.runtime.metrics.prometheus import PrometheusReporter
from streamkernel.runtime.metrics.reporter_setup import ReporterStartError
from streamkernel.runtime.metrics.registry import MetricRegistry
from streamkernel.runtime.metrics.reporter_setup import PROMETHEUS_REPORTER_FACTORY, reporter_setups
from streamkernel.testing.prometheus import nothing_listens_on


@pytest.fixture
def taken() -> Iterator[socket.socket]:
    """A listening socket on a free port (the port is taken while the test runs)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock


def _setup(port: str):  # type: ignore[no-untyped-def]
    [setup] = reporter_setups({"metrics.reporter.prom.factory.class": PROMETHEUS_REPORTER_FACTORY,
                               "metrics.reporter.prom.port": port})
    return setup


def _free_after(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_it_takes_the_first_free_port_of_its_range_and_reads_the_groups_per_scrape(taken: socket.socket) -> None:
    first = taken.getsockname()[1]
    if first >= 65535 or not _free_after(first + 1):
        pytest.skip(f"port {first + 1} is taken by something else")
    reads = []

    def groups() -> list:
        reads.append(1)
        return [MetricGroupSnapshot(("jobmanager",), {"host": "h"}, {"numRunningJobs": len(reads)})]

    reporter = PrometheusReporter(_setup(f"{first}-{first + 1}"), groups).open()
    try:
        assert reporter.port == first + 1 and not reads  # nothing is read until someone scrapes
        for expected in (1, 2):
            with urllib.request.urlopen(reporter.url, timeout=10) as answer:
                assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                assert f'flink_jobmanager_numRunningJobs{{host="h"}} {expected}\n' in answer.read().decode()
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(reporter.url.replace("/metrics", "/other"), timeout=10)
    finally:
        reporter.close()
    assert reporter.port is None and nothing_listens_on(first + 1)
    assert not [t for t in threading.enumerate() if t.name.startswith("streamkernel-metrics-")]


def test_every_port_taken_fails_naming_the_key(taken: socket.socket) -> None:
    port = taken.getsockname()[1]
    with pytest.raises(ReporterStartError, match=rf"Ports: {port} \(key 'metrics.reporter.prom.port'"):
        PrometheusReporter(_setup(str(port)), list).open()


def test_a_registry_that_cannot_start_a_reporter_closes_the_ones_it_started(taken: socket.socket) -> None:
    port = taken.getsockname()[1]
    registry = MetricRegistry(reporter_setups({
        "metrics.reporter.a.factory.class": PROMETHEUS_REPORTER_FACTORY, "metrics.reporter.a.port": "0",
        "metrics.reporter.b.factory.class": PROMETHEUS_REPORTER_FACTORY, "metrics.reporter.b.port": str(port)}))
    with pytest.raises(ReporterStartError, match="metrics.reporter.b.port"):
        registry.start()
    assert registry.reporters == []
    assert not [t for t in threading.enumerate() if t.name.startswith("streamkernel-metrics-")]


def test_a_taskmanager_process_without_a_free_port_fails_the_start_naming_the_key() -> None:
    from streamkernel.runtime.minicluster.minicluster import MiniCluster
    from streamkernel.runtime.resourcemanager.remote_taskmanagers import TaskManagerStartError

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free once closed: the JobManager's reporter takes it, none is left
    cluster = MiniCluster(1, 1, backend="process", configuration={
        "metrics.reporter.prom.factory.class": PROMETHEUS_REPORTER_FACTORY, "metrics.reporter.prom.port": str(port)})
    with pytest.raises(TaskManagerStartError, match=rf"Ports: {port} \(key 'metrics.reporter.prom.port'"):
        cluster.start(make_current=False)
    assert not cluster.is_running and nothing_listens_on(port)


def test_a_source_that_raises_costs_only_its_own_metrics() -> None:
    registry = MetricRegistry(reporter_setups({"metrics.reporter.prom.factory.class": PROMETHEUS_REPORTER_FACTORY,
                                               "metrics.reporter.prom.port": "0"}))

    def stopping() -> list:
        raise RuntimeError("the Dispatcher stopped meanwhile")

    registry.add_source(stopping)
    registry.add_source(lambda: [MetricGroupSnapshot(("jobmanager",), {}, {"numRunningJobs": 3})])
    reporter = registry.start().reporter("prom")
    try:
        assert reporter is not None and reporter.url is not None
        with urllib.request.urlopen(reporter.url, timeout=10) as answer:
            assert "flink_jobmanager_numRunningJobs 3\n" in answer.read().decode()
    finally:
        registry.close()
