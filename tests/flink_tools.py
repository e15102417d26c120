"""Flink's own tools for tests: the ``flink`` CLI of ``apache-flink`` 2.3.0 run against a REST address.

``make test`` installs them (``scripts/ensure_flink_tools.sh``: ``apache-flink`` and
``apache-flink-libraries`` with ``pip install --no-deps`` into ``.flink-tools/``, outside the
venv); Java 17 runs the CLI. Where they cannot be installed, a test that needs them is
skipped saying what is missing and how to get it, as the browser test is without Chromium.

Load it from a test file (pytest runs with ``--import-mode=importlib``, so ``tests/`` is not
on ``sys.path``)::

    _spec = importlib.util.spec_from_file_location("flink_tools", REPO / "tests" / "flink_tools.py")
    flink_tools = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(flink_tools)

    code, out, err = flink_tools.run_flink_cli(["list"], "127.0.0.1:8081")

What the CLI sends (tests/test_flink_tools.py lists the requests; tests/runtime/rest/test_flink_cli.py runs
them against the real endpoint): every path
is prefixed with ``/v1`` and every request, GETs included, carries a JSON body (``{}`` when the
message has none) with ``Content-Type: application/json; charset=UTF-8`` and ``Connection: close``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import pytest

__all__ = ["FLINK_VERSION", "REPO", "flink_home", "java_executable", "write_flink_conf", "run_flink_cli"]

FLINK_VERSION = "2.3.0"
REPO = Path(__file__).resolve().parents[1]
_INSTALL_HINT = "bash scripts/ensure_flink_tools.sh (make test runs it)"
_ADDRESS = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:\d{1,5}$")


def flink_home() -> Path:
    """``FLINK_HOME``: the installed ``pyflink`` directory holding ``bin/flink`` and ``lib/flink-dist-*.jar``.

    ``$FLINK_HOME`` when set, else ``<repo>/.flink-tools/pyflink``. Skips the calling test,
    saying how to install them, when they are not there.
    """
    configured = os.environ.get("FLINK_HOME")
    home = Path(configured) if configured else REPO / ".flink-tools" / "pyflink"
    missing = [name for name in ("bin/flink", "bin/config.sh", f"lib/flink-dist-{FLINK_VERSION}.jar")
               if not (home / name).is_file()]
    if missing:
        where = f"FLINK_HOME={configured}" if configured else str(home)
        pytest.skip(f"Flink {FLINK_VERSION}'s tools are not installed ({where} lacks {', '.join(missing)}); "
                    f"install them: {_INSTALL_HINT}")
    return home


def java_executable() -> str:
    """The ``java`` the CLI will run with (``$JAVA_HOME/bin/java`` or ``java`` on PATH); skips without one."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        pytest.skip("no `java` for Flink's CLI (Java 17: apt-get install openjdk-17-jre-headless; "
                    "make test installs it when root)")
    return found


def write_flink_conf(conf_dir: Path, timeout: float) -> Path:
    """A minimal Flink 2.x ``config.yaml`` for the CLI in ``conf_dir`` (plus the CLI's log4j file).

    ``rest.retry.max-attempts: 0`` makes a refused or failed request fail at once (Flink's
    default retries 20 times, 3 s apart: about 75 s against a wrong address);
    ``client.timeout`` bounds how long the CLI waits for an answer.
    """
    conf_dir.mkdir(parents=True, exist_ok=True)
    seconds = max(1, int(timeout))
    (conf_dir / "config.yaml").write_text(
        "rest:\n"
        "  retry:\n"
        "    max-attempts: 0\n"
        "    delay: 100 ms\n"
        f"  connection-timeout: {seconds * 1000} ms\n"
        "client:\n"
        f"  timeout: {seconds} s\n",
        encoding="utf-8")
    log4j = flink_home() / "conf" / "log4j-cli.properties"
    if log4j.is_file():
        shutil.copyfile(log4j, conf_dir / "log4j-cli.properties")
    return conf_dir


def run_flink_cli(args: Sequence[str], rest_address: str, timeout: float = 60.0,
                  extra_env: Optional[dict[str, str]] = None) -> tuple[int, str, str]:
    """Run ``bash $FLINK_HOME/bin/flink ACTION -m REST_ADDRESS REST...`` and return (returncode, stdout, stderr).

    ``args`` starts with the action (``list``, ``cancel``, ``savepoint``, ``stop`` ...);
    ``-m rest_address`` (``host:port``) is put right after it. The CLI runs with a fresh
    ``FLINK_CONF_DIR`` (:func:`write_flink_conf`) and log directory, and ``TZ=UTC`` so the
    start times ``flink list`` prints are the same on every machine. Skips when the tools or
    Java are missing; fails the test (with the output so far) when the CLI outlives ``timeout``.
    """
    if not args:
        raise ValueError("run_flink_cli: args must start with the CLI's action (e.g. ['list'])")
    if not _ADDRESS.match(rest_address):
        raise ValueError(f"run_flink_cli: rest_address must be host:port, got {rest_address!r}")
    home = flink_home()
    java_executable()
    with tempfile.TemporaryDirectory(prefix="flink-cli-") as scratch:
        conf_dir = write_flink_conf(Path(scratch) / "conf", timeout)
        log_dir = Path(scratch) / "log"
        log_dir.mkdir()
        env = dict(os.environ, FLINK_HOME=str(home), FLINK_CONF_DIR=str(conf_dir),
                   FLINK_LOG_DIR=str(log_dir), TZ="UTC")
        env.update(extra_env or {})
        command = ["bash", str(home / "bin" / "flink"), args[0], "-m", rest_address, *args[1:]]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                                  cwd=scratch, check=False)
        except subprocess.TimeoutExpired as expired:
            pytest.fail(f"`flink {' '.join(args)} -m {rest_address}` still ran after {timeout} s; "
                        f"stdout: {_text(expired.stdout)!r} stderr: {_text(expired.stderr)!r}")
        return done.returncode, done.stdout, done.stderr


def _text(output: object) -> str:
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output if isinstance(output, str) else ""
