"""A headless JupyterLab for the browser test: started on 127.0.0.1 with a token, stopped after.

Not a test module: the browser test loads it by path. Everything the server writes
(runtime files, settings, the notebook) lives in a temporary directory; the news and
update toasts are switched off (they would cover the page). See ../shared/FIELD-NOTES.md,
"JupyterLab in a real browser".
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Optional

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path() -> Optional[str]:
    """The Chromium to drive, or None."""
    for candidate in CHROMIUM_CANDIDATES:
        if os.path.exists(candidate):
            return candidate
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabServer:
    """``jupyter lab`` serving ``root`` (a directory) until :meth:`stop`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.process: Optional[subprocess.Popen] = None
        self.log = root / "jupyterlab.log"

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
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                   JUPYTERLAB_SETTINGS_DIR=str(home / "lab-user-settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
        env.pop("STREAMKERNEL_BACKEND", None)
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
                 f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
                 "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False",
                 *(["--allow-root"] if os.geteuid() == 0 else [])],
                cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/api/status?token={self.token}", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.25)
        raise RuntimeError(f"jupyter lab did not answer in {timeout} s:\n{self.log.read_text()[-3000:]}")

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the server (it shuts its kernels down); kill its process group if it lingers."""
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
