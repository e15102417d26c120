"""A throwaway Prometheus server for tests: Debian's ``prometheus`` package scraping given targets.

``make test`` installs the package (``scripts/ensure_prometheus.sh``); where the ``prometheus``
binary is absent, :func:`require_prometheus` skips the test saying so. A test starts one, points it
at the reporters it wants scraped and asks Prometheus' HTTP API::

    from streamkernel.testing.prometheus import PrometheusServer

    with PrometheusServer(tmp_path) as prometheus:
        prometheus.scrape(["127.0.0.1:9249"])          # the targets file; Prometheus rereads it
        prometheus.wait_for_targets_up(1)
        prometheus.query('flink_jobmanager_numRegisteredTaskManagers')   # [(labels, value), ...]

It runs ``prometheus --config.file=DIR/prometheus.yml --web.listen-address=127.0.0.1:PORT
--storage.tsdb.path=DIR/data`` with a short scrape interval and its targets in a file
(``file_sd_configs``) that :meth:`PrometheusServer.scrape` rewrites. :meth:`PrometheusServer.close`
stops the process and waits for it; the test's ``tmp_path`` holds everything it wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Optional, Sequence

from streamkernel.testing.waiting import wait_until

__all__ = ["PrometheusServer", "prometheus_missing_reason", "require_prometheus", "nothing_listens_on",
           "PROMETHEUS_BINARY", "SCRAPE_INTERVAL"]

#: The Prometheus server binary (Debian's ``prometheus`` package); ``$STREAMKERNEL_PROMETHEUS`` overrides it.
PROMETHEUS_BINARY = os.environ.get("STREAMKERNEL_PROMETHEUS") or shutil.which("prometheus") or "/usr/bin/prometheus"
#: How often the test server scrapes its targets.
SCRAPE_INTERVAL = "500ms"
#: How long a start or a stop may take on a loaded machine before the test fails saying so.
DEADLINE_S = 60.0


def prometheus_missing_reason() -> Optional[str]:
    """Why no Prometheus can be started here (None: it can)."""
    if not os.access(PROMETHEUS_BINARY, os.X_OK):
        return (f"Prometheus is not installed ({PROMETHEUS_BINARY} is missing): run `make prometheus` "
                "(bash scripts/ensure_prometheus.sh) or `sudo apt-get install prometheus`")
    return None


def require_prometheus() -> None:
    """Skip the calling test (with the reason) when Prometheus is not installed."""
    import pytest

    reason = prometheus_missing_reason()
    if reason is not None:
        pytest.skip(reason)


def nothing_listens_on(port: int, host: str = "127.0.0.1") -> bool:
    """Whether no socket listens on ``host:port`` (a reporter stopped). Connections the server closed
    linger in TIME_WAIT; they do not count (the probe binds with SO_REUSEADDR, as servers do)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen()
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrometheusServer:
    """One Prometheus server in ``directory`` (its configuration, targets file, data and log)."""

    def __init__(self, directory: Path, port: Optional[int] = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or _free_port()
        self.targets_file = self.directory / "targets.json"
        self.targets_file.write_text("[]")
        self.config = self.directory / "prometheus.yml"
        self.config.write_text(
            "global:\n"
            f"  scrape_interval: {SCRAPE_INTERVAL}\n"
            f"  scrape_timeout: {SCRAPE_INTERVAL}\n"
            "scrape_configs:\n"
            "  - job_name: flink\n"
            "    file_sd_configs:\n"
            f"      - files: ['{self.targets_file}']\n"
            "        refresh_interval: 1s\n")
        self._process: Optional[subprocess.Popen] = None
        self._log = self.directory / "prometheus.log"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` of its web UI and HTTP API."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "PrometheusServer":
        """Start the server; returns once ``/-/ready`` answers (fails after :data:`DEADLINE_S`)."""
        with open(self._log, "wb") as log:
            self._process = subprocess.Popen(
                [PROMETHEUS_BINARY, f"--config.file={self.config}", f"--web.listen-address=127.0.0.1:{self.port}",
                 f"--storage.tsdb.path={self.directory / 'data'}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until(self._ready, timeout=DEADLINE_S, message=f"Prometheus on port {self.port} to be ready")
        except AssertionError as late:
            self.close()
            raise AssertionError(f"{late}; its log: {self._log.read_text(errors='replace')[-3000:]}") from None
        return self

    def _ready(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            raise AssertionError(f"Prometheus exited ({self._process.returncode}): "
                                 f"{self._log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as answer:
                return int(answer.status) == 200
        except OSError:
            return False

    def scrape(self, targets: Sequence[str]) -> None:
        """Scrape exactly ``targets`` (``host:port`` each) from now on (Prometheus rereads the file)."""
        temporary = self.targets_file.with_suffix(".tmp")
        temporary.write_text(json.dumps([{"targets": list(targets)}]))
        temporary.replace(self.targets_file)

    def api(self, path: str, **params: str) -> Any:
        """The ``data`` of a Prometheus HTTP API answer (``/api/v1/...``)."""
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as answer:
            body = json.loads(answer.read())
        if body.get("status") != "success":
            raise AssertionError(f"Prometheus answered {body}")
        return body["data"]

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """The instant vector ``promql`` evaluates to now: ``(labels, value)`` per series."""
        data = self.api("query", query=promql)
        return [(dict(r["metric"]), float(r["value"][1])) for r in data["result"]]

    def targets_up(self) -> list[str]:
        """The ``host:port`` of every target whose last scrape succeeded."""
        active = self.api("targets", state="active")["activeTargets"]
        return [t["labels"]["instance"] for t in active if t["health"] == "up"]

    def wait_for_targets_up(self, count: int, timeout: float = DEADLINE_S) -> list[str]:
        """Wait until ``count`` targets are up; returns them."""
        def enough() -> list[str]:
            up = self.targets_up()
            return up if len(up) >= count else []

        return wait_until(enough, timeout=timeout,
                          message=f"{count} scraped targets to be up (targets: {self.targets_file.read_text()})")

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL if it lingers) and wait for it."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> "PrometheusServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
