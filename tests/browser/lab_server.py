"""A headless JupyterLab for the browser test: started on 127.0.0.1 with a token, stopped after.

Not a test module: the browser test loads it by path. Everything the server writes
(runtime files, settings, the notebook) lives in a temporary directory; the news and
update toasts are switched off (they would cover the page). See ../shared/FIELD-NOTES.md,
"JupyterLab in a real browser".

No port is picked here and handed over (another test worker could take it meanwhile): the
server binds port 0 and says which port it got in its runtime file, and its kernels talk over
IPC (``KernelManager.transport=ipc``: socket files in the runtime directory, a short one in /tmp
since a socket's path has at most 107 bytes) instead of TCP ports jupyter_client picks the same
racy way ("Address already in use").
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Optional

from streamkernel.testing import wait_until

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path() -> Optional[str]:
    """The Chromium to drive, or None."""
    for candidate in CHROMIUM_CANDIDATES:
        if os.path.exists(candidate):
            return candidate
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found


class LabServer:
    """``jupyter lab`` serving ``root`` (a directory) until :meth:`stop`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = 0  # known once the server runs (start)
        self.token = secrets.token_hex(16)
        self.process: Optional[subprocess.Popen] = None
        self.log = root / "jupyterlab.log"
        self.runtime_dir = Path(tempfile.mkdtemp(prefix="sk-lab-", dir="/tmp"))

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT"""
        return f"http://127.0.0.1:{self.port}"

    def url(self, notebook: str) -> str:
        """The address that opens ``notebook`` in JupyterLab, with a fresh workspace."""
        return f"{self.base_url}/lab/tree/{notebook}?reset&token={self.token}"

    def start(self, timeout: float = 60.0) -> "LabServer":
        """Start the server and wait until it answers."""
        home = self.root / ".jupyter-home"
        settings = home / "lab-user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(self.runtime_dir),
                   JUPYTERLAB_SETTINGS_DIR=str(home / "lab-user-settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
        env.pop("STREAMKERNEL_BACKEND", None)
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", "--port=0",
                 "--KernelManager.transport=ipc",
                 f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
                 "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False",
                 *(["--allow-root"] if os.geteuid() == 0 else [])],
                cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until(self._answers, timeout=timeout, message="jupyter lab to answer /api/status")
        except AssertionError as late:
            raise RuntimeError(f"{late}:\n{self.log.read_text()[-3000:]}") from None
        return self

    def _answers(self) -> bool:
        """Whether the server answers its status (RuntimeError once its process has exited)."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
        self.port = self.port or self._bound_port()
        if not self.port:
            return False
        try:
            with urllib.request.urlopen(f"{self.base_url}/api/status?token={self.token}", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def _bound_port(self) -> int:
        """The port the server bound (from its ``jpserver-PID.json``), 0 until it wrote the file."""
        assert self.process is not None
        try:
            return int(json.loads((self.runtime_dir / f"jpserver-{self.process.pid}.json").read_text())["port"])
        except (OSError, ValueError, KeyError):
            return 0

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the server (it shuts its kernels down); kill its process group if it lingers."""
        try:
            self._stop(timeout)
        finally:
            shutil.rmtree(self.runtime_dir, ignore_errors=True)

    def _stop(self, timeout: float) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(2)
        except subprocess.TimeoutExpired:
            pass
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # jupyter asks to confirm; a second SIGINT stops at once
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)
