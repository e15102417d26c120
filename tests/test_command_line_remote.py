"""``streamkernel run -m HOST:PORT``'s bad input: one line naming the problem, before the script runs.

(The runs against a real cluster are in tests/runtime/rest/test_submission.py.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = "print('the script ran')\n"


def _run(*args: str, cwd: Path, **env_updates: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("STREAMKERNEL_CONFIGURATION", "STREAMKERNEL_CLUSTER_SECRET", "STREAMKERNEL_SECRET_FILE")}
    env["STREAMKERNEL_HOME"] = str(cwd / "home")
    env.update(env_updates)
    return subprocess.run([sys.executable, "-m", "streamkernel", "run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "job.py"
    path.write_text(SCRIPT)
    return path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_m_without_a_port_exits_2_naming_the_option(script: Path) -> None:
    done = _run("-m", "127.0.0.1", "job.py", cwd=script.parent)
    assert done.returncode == 2
    assert "-m '127.0.0.1': expected HOST:PORT" in done.stderr
    assert "the script ran" not in done.stdout


def test_no_secret_found_names_every_place_looked_at(script: Path) -> None:
    port = _closed_port()
    done = _run("-m", f"127.0.0.1:{port}", "job.py", cwd=script.parent)
    assert done.returncode == 1
    expected = script.parent / "home" / "clusters" / f"127.0.0.1-{port}.secret"
    assert f"no secret found for the cluster at 127.0.0.1:{port}" in done.stderr
    assert str(expected) in done.stderr and "--secret-file" in done.stderr and "$STREAMKERNEL_CLUSTER_SECRET" in done.stderr
    assert "the script ran" not in done.stdout


def test_nobody_listening_fails_within_seconds_naming_the_address(script: Path) -> None:
    port = _closed_port()
    started = time.monotonic()
    done = _run("-m", f"127.0.0.1:{port}", "job.py", cwd=script.parent, STREAMKERNEL_CLUSTER_SECRET="ab" * 32)
    assert done.returncode == 1
    assert f"no streamkernel cluster answers at http://127.0.0.1:{port}" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert time.monotonic() - started < 30  # the interpreter's start included; the connection fails at once
    assert "the script ran" not in done.stdout


def test_m_with_a_cluster_of_its_own_or_a_secret_file_without_m_exit_2(script: Path) -> None:
    both = _run("-m", "127.0.0.1:8081", "--taskmanagers", "2", "job.py", cwd=script.parent)
    assert both.returncode == 2 and "use one or the other" in both.stderr
    alone = _run("--secret-file", "x.secret", "job.py", cwd=script.parent)
    assert alone.returncode == 2 and "--secret-file needs -m HOST:PORT" in alone.stderr
