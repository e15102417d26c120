"""A throwaway Apache ZooKeeper for tests: Debian's ``zookeeper`` package started on a free port.

``make test`` installs the package (``scripts/ensure_zookeeper.sh``); where ``zkServer.sh`` is
absent, :func:`require_zookeeper` skips the test saying so. The tests, the takeover bench and the
high-availability notebook start their ZooKeeper with it::

    from streamkernel.testing.zookeeper import ZooKeeperServer

    with ZooKeeperServer(tmp_path) as server:
        server.connect_string   # "127.0.0.1:PORT"
        server.stop(); server.start()   # the same data directory and port: a ZooKeeper restart

Each server has a generated ``zoo.cfg`` (``dataDir``, ``clientPort``, ``tickTime=500`` so that
sessions may be as short as 1 s, ``admin.enableServer=false``) and is started and stopped with
``ZOOCFGDIR=DIR ZOO_LOG_DIR=DIR zkServer.sh start|stop DIR/zoo.cfg``; ``start`` returns once the
four-letter word ``srvr`` answers, ``stop`` once the process is gone. No process outlives
:meth:`ZooKeeperServer.close`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Optional

from streamkernel.testing.waiting import wait_until

ZK_SERVER_SH = Path(os.environ.get("STREAMKERNEL_ZKSERVER", "/usr/share/zookeeper/bin/zkServer.sh"))
#: How long a start or stop may take on a loaded machine before the test fails saying so.
DEADLINE_S = 60.0


def zookeeper_missing_reason() -> Optional[str]:
    """Why no ZooKeeper can be started here (None: it can)."""
    if not ZK_SERVER_SH.exists():
        return (f"ZooKeeper is not installed ({ZK_SERVER_SH} is missing): run `make zookeeper` "
                "(bash scripts/ensure_zookeeper.sh) or `sudo apt-get install zookeeper`")
    return None


def require_zookeeper() -> None:
    """Skip the calling test (with the reason) when ZooKeeper is not installed."""
    import pytest

    reason = zookeeper_missing_reason()
    if reason is not None:
        pytest.skip(reason)


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def four_letter_word(port: int, word: str = "srvr", timeout: float = 2.0) -> Optional[str]:
    """The server's answer to a four-letter word, or None if nothing answers on ``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(word.encode())
            chunks = []
            while True:
                data = sock.recv(4096)
                if not data:
                    break
                chunks.append(data)
    except OSError:
        return None
    text = b"".join(chunks).decode(errors="replace")
    return text or None


class ZooKeeperServer:
    """One standalone ZooKeeper server in ``directory`` (its config, data and logs)."""

    def __init__(self, directory: Path, port: Optional[int] = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.config = self.directory / "zoo.cfg"
        (self.directory / "data").mkdir(exist_ok=True)
        self.config.write_text(
            f"dataDir={self.directory / 'data'}\nclientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            "tickTime=500\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n"
            "admin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\n")
        self._pid: Optional[int] = None

    @property
    def connect_string(self) -> str:
        """The quorum address clients use: ``127.0.0.1:PORT``."""
        return f"127.0.0.1:{self.port}"

    def _run(self, command: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, ZOOCFGDIR=str(self.directory), ZOO_LOG_DIR=str(self.directory),
                   ZOOPIDFILE=str(self.directory / "zookeeper.pid"))
        return subprocess.run(["bash", str(ZK_SERVER_SH), command, str(self.config)], env=env,
                              capture_output=True, text=True, timeout=DEADLINE_S)

    def _read_pid(self) -> Optional[int]:
        for name in ("zookeeper.pid", "data/zookeeper_server.pid"):
            try:
                return int((self.directory / name).read_text().strip())
            except (OSError, ValueError):
                continue
        return None

    def is_serving(self) -> bool:
        """Whether ``srvr`` answers on the client port."""
        answer = four_letter_word(self.port)
        return answer is not None and "Zookeeper version" in answer

    def start(self) -> "ZooKeeperServer":
        """Start the server; returns once ``srvr`` answers (fails after :data:`DEADLINE_S`)."""
        result = self._run("start")
        self._pid = self._read_pid()
        try:
            wait_until(self.is_serving, timeout=DEADLINE_S, message=f"ZooKeeper on port {self.port} to answer 'srvr'")
        except AssertionError as late:
            log = "\n".join(p.read_text(errors="replace")[-2000:] for p in self.directory.glob("*.out"))
            raise AssertionError(f"{late}; zkServer.sh said: {result.stdout} {result.stderr}\n{log}") from None
        return self

    def _alive(self) -> bool:
        if self._pid is None:
            return False
        try:
            os.kill(self._pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def stop(self) -> None:
        """Stop the server (``zkServer.sh stop``, then SIGKILL if it lingers); returns once it is gone."""
        self._run("stop")
        try:
            wait_until(lambda: not self._alive(), timeout=DEADLINE_S, message="ZooKeeper to stop")
        except AssertionError:  # it lingers: kill it
            os.kill(self._pid, signal.SIGKILL)  # type: ignore[arg-type]
            wait_until(lambda: not self._alive(), timeout=DEADLINE_S, message="the killed ZooKeeper to end")
        self._pid = None

    def close(self) -> None:
        """Stop the server if it runs."""
        if self._pid is not None or self.is_serving():
            if self._pid is None:
                self._pid = self._read_pid()
            self.stop()

    def __enter__(self) -> "ZooKeeperServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
