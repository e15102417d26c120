"""A standalone cluster's processes (``streamkernel cluster start``: the JobManager process and each
TaskManager process) serve Flink's Prometheus reporter on the ports of one range, scraped by a real
Prometheus; ``cluster stop`` leaves none of them listening."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import streamkernel
from streamkernel.runtime.metrics.reporter_setup import PROMETHEUS_REPORTER_FACTORY
from streamkernel.testing.prometheus import PrometheusServer, nothing_listens_on, require_prometheus
from streamkernel.testing.waiting import wait_until

TIMEOUT = 120.0


def _sk(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMKERNEL_") or k == "STREAMKERNEL_PROMETHEUS"}
    env["STREAMKERNEL_HOME"] = str(home)
    root = str(Path(streamkernel.__file__).resolve().parents[1])  # this checkout's package, not an installed one
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "streamkernel", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def _serving(ports: range) -> list[int]:
    found = []
    for port in ports:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                if b"flink_" in answer.read():
                    found.append(port)
        except OSError:
            continue
    return found


def test_the_jobmanager_and_each_taskmanager_process_serve_prometheus(tmp_path: Path) -> None:
    require_prometheus()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        first = min(int(sock.getsockname()[1]), 65535 - 10)
    ports = range(first, first + 11)
    directory = tmp_path / "cluster"
    started = _sk(tmp_path / "home", tmp_path, "cluster", "start", "--dir", str(directory), "--taskmanagers", "2",
                  "-D", "rest.port=0", "-D", f"metrics.reporter.prom.factory.class={PROMETHEUS_REPORTER_FACTORY}",
                  "-D", f"metrics.reporter.prom.port={ports.start}-{ports.stop - 1}")
    assert started.returncode == 0, started.stderr
    try:
        serving = wait_until(lambda: (lambda found: found if len(found) == 3 else None)(_serving(ports)),
                             message="the JobManager and two TaskManager processes to serve /metrics")
        with PrometheusServer(tmp_path / "prometheus") as prometheus:
            prometheus.scrape([f"127.0.0.1:{port}" for port in serving])
            prometheus.wait_for_targets_up(3)
            [(_, registered)] = wait_until(lambda: prometheus.query("flink_jobmanager_numRegisteredTaskManagers"))
            assert registered == 2
            slots = wait_until(lambda: (lambda found: found if len(found) == 2 else None)(
                prometheus.query("flink_taskmanager_Status_TaskSlots_Total")))
            instances = {labels["instance"] for labels, _ in slots}
            assert len(instances) == 2 and f"127.0.0.1:{serving[0]}" not in instances  # each TaskManager its own
    finally:
        stopped = _sk(tmp_path / "home", tmp_path, "cluster", "stop", "--dir", str(directory))
    assert stopped.returncode == 0, stopped.stderr
    wait_until(lambda: all(nothing_listens_on(port) for port in serving), message="every reporter to stop")
