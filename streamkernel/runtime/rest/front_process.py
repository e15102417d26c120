"""The REST front process seen from the JobManager: start it, notice its loss, stop it.

:class:`RestFrontProcess` starts ``python -m streamkernel.runtime.rest.front`` (:mod:`.front`)
with the listening sockets of the public port (inherited file descriptors: the JobManager
bound them, so the port is known and connections queue before the front has imported
tornado) and the loopback port of the JobManager's own endpoint. :meth:`start` does not wait
for the front to be ready: a request that arrives before waits in the socket's backlog.

A thread watches the front's standard output: ``ready`` when it serves, end of file when it
exits. A front that exits while the endpoint still runs (it failed to start, or was killed)
is reported to ``on_lost`` with its exit code and the last lines of its error output, so
that the endpoint serves the public sockets itself from then on. :meth:`stop` closes the
front's standard input (the front drains its requests and exits), kills it if it has not
exited within the timeout, and joins the thread: no process, thread or descriptor is left.
The front runs in its own session, so a Ctrl-C or SIGHUP meant for a terminal's foreground
job does not reach it; it exits by itself when the JobManager's process dies (its standard
input closes).
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import tempfile
import threading
from typing import IO, Callable, Optional, Sequence

__all__ = ["RestFrontProcess"]

_LOG = logging.getLogger(__name__)
_STDERR_TAIL_BYTES = 2048


class RestFrontProcess:
    """The front of one REST endpoint: serves ``listen`` sockets, forwards to ``upstream_port`` on loopback."""

    def __init__(self, listen: Sequence[socket.socket], upstream_port: int, max_content_length: int,
                 on_lost: Callable[[str], None], large_bodies: Sequence[tuple[str, str]] = ()) -> None:
        self.listen = list(listen)
        self.upstream_port = upstream_port
        self.max_content_length = max_content_length
        self.large_bodies = list(large_bodies)  # (method, path pattern): streamed, not bounded to JSON's size
        self.on_lost = on_lost
        self.ready = threading.Event()
        self._process: Optional[subprocess.Popen] = None
        self._stderr: Optional[IO[bytes]] = None
        self._watcher: Optional[threading.Thread] = None
        self._stopping = False
        self._write_lock = threading.Lock()

    @property
    def pid(self) -> Optional[int]:
        """The front's process id while it runs."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def command(self) -> list[str]:
        """The front's command line."""
        command = [sys.executable, "-m", "streamkernel.runtime.rest.front", "--upstream",
                   f"http://127.0.0.1:{self.upstream_port}", "--max-content-length", str(self.max_content_length)]
        for sock in self.listen:
            command += ["--listen-fd", str(sock.fileno())]
        for method, pattern in self.large_bodies:
            command += ["--large-body", method, pattern]
        return command

    def start(self) -> "RestFrontProcess":
        """Start the front and its watcher; returns at once."""
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr, pass_fds=[s.fileno() for s in self.listen],
                                         start_new_session=True)
        port = self.listen[0].getsockname()[1]
        self._watcher = threading.Thread(target=self._watch, name=f"streamkernel REST front :{port}", daemon=True)
        self._watcher.start()
        return self

    def clear_cache(self) -> None:
        """Tell the front to forget its answers (a job was submitted or changed status); never blocks
        for long (a line on a pipe the front reads), a no-op once it stopped."""
        from streamkernel.runtime.rest.front import CLEAR

        self._tell(CLEAR)

    def forward_to(self, url: Optional[str]) -> None:
        """Answer from the REST endpoint at ``url`` from now on (a standby forwards to its leader);
        None: none (503 while no JobManager leads). :meth:`forward_home` goes back to this process's."""
        from streamkernel.runtime.rest.front import UPSTREAM

        self._tell(UPSTREAM + (url or "-").encode("utf-8") + b"\n")

    def forward_home(self) -> None:
        """Answer from this process's own endpoint again."""
        self.forward_to(f"http://127.0.0.1:{self.upstream_port}")

    def _tell(self, line: bytes) -> None:
        process = self._process
        if process is None or process.stdin is None or self._stopping:
            return
        with self._write_lock:
            try:
                process.stdin.write(line)
                process.stdin.flush()
            except (OSError, ValueError):  # it exited, or is stopping: nothing to clear
                pass

    def _watch(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        with process.stdout:
            for line in iter(process.stdout.readline, b""):
                if line.strip() == b"ready":
                    self.ready.set()
        code = process.wait()
        if not self._stopping:
            self.on_lost(f"the REST front process (pid {process.pid}) exited with code {code}"
                         + (f": {self._stderr_tail()}" if self._stderr_tail() else ""))

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, 2)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL_BYTES))
            lines = self._stderr.read().decode("utf-8", errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1] if lines else ""

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the front to exit (it drains its requests), kill it after ``timeout``, join the watcher."""
        process, self._stopping = self._process, True
        if process is None:
            return
        if process.stdin is not None:
            with self._write_lock:
                try:
                    process.stdin.close()
                except OSError:
                    pass
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            _LOG.warning("the REST front process (pid %s) did not exit within %.1f s: killed", process.pid, timeout)
            process.kill()
            process.wait()
        if self._watcher is not None:
            self._watcher.join(timeout)
        if self._stderr is not None:
            self._stderr.close()
        self._process = self._watcher = self._stderr = None

    def __repr__(self) -> str:
        return f"RestFrontProcess(pid={self.pid}, upstream=127.0.0.1:{self.upstream_port})"
