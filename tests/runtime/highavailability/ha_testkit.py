"""What the high-availability tests share: the ZooKeeper test kit, a configuration on it, a
recording contender and listener, and polling with a deadline. Importable from any test here
(``conftest.py`` puts this directory on ``sys.path``)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Optional

from streamkernel.testing import waiting
from streamkernel.testing import zookeeper as zookeeper_server  # noqa: F401 - the ZooKeeper kit the tests import from here


#: How long a test waits for ZooKeeper to do something before it fails (a loaded machine).
WAIT_S = 30.0


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """Poll ``condition`` until it is truthy (returned); fail naming ``what`` after ``timeout``
    (the project's :func:`streamkernel.testing.wait_until`, with the HA tests' argument order)."""
    return waiting.wait_until(condition, timeout=timeout, message=what)


def ha_config(server: Any, storage: Path, cluster_id: Optional[str] = None, **extra: str) -> dict[str, str]:
    """A ZooKeeper HA configuration on ``server`` with short sessions (as Flink's tests lower them)."""
    conf = {
        "high-availability.type": "zookeeper",
        "high-availability.zookeeper.quorum": server.connect_string,
        "high-availability.storageDir": str(storage),
        "high-availability.cluster-id": cluster_id or f"/test-{uuid.uuid4().hex[:8]}",
        "high-availability.zookeeper.client.session-timeout": "2 s",
        "high-availability.zookeeper.client.connection-timeout": "10 s",
        "high-availability.zookeeper.client.retry-wait": "200 ms",
    }
    conf.update(extra)
    return conf


class RecordingContender:
    """A LeaderContender that records its grants and revocations, in order."""

    def __init__(self, name: str = "contender") -> None:
        self.name = name
        self.events: list[tuple[str, Optional[uuid.UUID]]] = []
        self._lock = threading.Lock()
        self.errors: list[Exception] = []

    def grant_leadership(self, session_id: uuid.UUID) -> None:
        with self._lock:
            self.events.append(("grant", session_id))

    def revoke_leadership(self) -> None:
        with self._lock:
            self.events.append(("revoke", None))

    def handle_error(self, error: Exception) -> None:
        self.errors.append(error)

    @property
    def leading_session(self) -> Optional[uuid.UUID]:
        """The session of the last grant if no revocation followed it."""
        with self._lock:
            if self.events and self.events[-1][0] == "grant":
                return self.events[-1][1]
            return None

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for event, _ in self.events if event == kind)


class RecordingListener:
    """A LeaderRetrievalListener that records every notification."""

    def __init__(self) -> None:
        self.notifications: list[tuple[Optional[str], Optional[uuid.UUID]]] = []

    def notify_leader_address(self, address: Optional[str], session_id: Optional[uuid.UUID]) -> None:
        self.notifications.append((address, session_id))

    def handle_error(self, error: Exception) -> None:
        raise AssertionError(f"retrieval failed: {error}")

    @property
    def last(self) -> Optional[tuple[Optional[str], Optional[uuid.UUID]]]:
        return self.notifications[-1] if self.notifications else None


class RecordingProxy:
    """An HTTP proxy on 127.0.0.1 that forwards every request to ``target`` (``http://HOST:PORT``)
    and records each ``POST /jobs`` as it went by (method, path, headers, body): what any proxy
    between a client and the cluster sees, to replay later. ``proxy.address`` is ``HOST:PORT``."""

    def __init__(self, target: str) -> None:
        import http.server

        self.target = target
        self.submissions: list[tuple[str, str, dict[str, str], bytes]] = []
        proxy = self

        class Forward(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                if self.command == "POST" and self.path.split("?")[0] == "/jobs":
                    proxy.submissions.append((self.command, self.path, headers, body))
                status, answer_headers, answer = send(proxy.target, self.command, self.path, headers, body)
                self.send_response(status)
                for key, value in answer_headers:
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forward)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="recording-proxy", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=WAIT_S)


def send(target: str, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, list, bytes]:
    """One HTTP request to ``target`` (``http://HOST:PORT``): (status, headers, body)."""
    import http.client
    import urllib.parse

    url = urllib.parse.urlsplit(target)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=WAIT_S)
    try:
        connection.request(method, path, body=body or None, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()
